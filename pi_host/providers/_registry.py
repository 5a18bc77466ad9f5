"""The model registry: built-in models, ``models.json``, plugin-registered providers, and auth.

``models.json`` (in the agent directory) uses pi's format (``docs/models.md``)::

    {"providers": {
        "local": {"baseUrl": "http://localhost:11434/v1", "api": "openai-completions",
                  "apiKey": "ollama", "compat": {"supportsDeveloperRole": false},
                  "models": [{"id": "qwen2.5-coder:7b"}]},
        "anthropic": {"baseUrl": "https://proxy.example.com"}}}

- a provider with ``models`` adds them (built-in providers: upserted by id);
- a provider without ``models`` overrides ``baseUrl`` / ``compat`` of its built-in models, and
  ``modelOverrides`` patches single built-in models;
- ``apiKey`` and ``headers`` values are resolved per request (``!command``, ``$VAR``,
  ``${VAR}``, an environment variable name, or a literal; see :mod:`._config_value`);
- ``//`` comments and trailing commas are tolerated, as pi tolerates them;
- an invalid file is reported (:attr:`ModelRegistry.error`) and the built-in models stay usable.

Credentials for a request (:meth:`ModelRegistry.request_auth`), first match wins: the runtime
key (``--api-key``), ``auth.json``, the provider's environment variables, ``models.json``'s
``apiKey``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ._auth import AuthStatus, AuthStorage
from ._catalog import builtin_models
from ._config_value import (
    ConfigValueError,
    is_command,
    resolve_config_value_or_raise,
    resolve_headers_or_raise,
)
from ._paths import agent_dir
from ._resolve import (
    ModelResolution,
    ScopedModel,
    format_model_list,
    pick_default_model,
    resolve_cli_model,
    resolve_model_scope,
)
from ._types import Model, ModelCost

if TYPE_CHECKING:
    from ._models_json import ModelDefinition, ModelOverride, ModelsConfig, ProviderConfig

__all__ = ["ModelRegistry", "RequestAuth"]


@dataclass(frozen=True)
class RequestAuth:
    """What a request to a model needs besides the model: the key and extra headers."""

    api_key: str | None
    headers: dict[str, str] | None


class _RequestConfig(NamedTuple):
    api_key: str | None
    headers: dict[str, str] | None
    auth_header: bool


def _merge_compat(
    base: Mapping[str, Any] | None, override: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    if not override:
        return dict(base) if base is not None else None
    merged = {**(base or {}), **override}
    for key in ("openRouterRouting", "vercelGatewayRouting"):
        if (base or {}).get(key) or override.get(key):
            merged[key] = {**((base or {}).get(key) or {}), **(override.get(key) or {})}
    return merged


def _apply_override(model: Model, override: ModelOverride) -> Model:
    update: dict[str, Any] = {}
    if override.name is not None:
        update["name"] = override.name
    if override.reasoning is not None:
        update["reasoning"] = override.reasoning
    if override.thinking_level_map is not None:
        update["thinking_level_map"] = {**(model.thinking_level_map or {}), **override.thinking_level_map}
    if override.input is not None:
        update["input"] = list(override.input)
    if override.context_window is not None:
        update["context_window"] = int(override.context_window)
    if override.max_tokens is not None:
        update["max_tokens"] = int(override.max_tokens)
    if override.cost is not None:
        cost = model.cost
        update["cost"] = ModelCost(
            input=cost.input if override.cost.input is None else override.cost.input,
            output=cost.output if override.cost.output is None else override.cost.output,
            cache_read=cost.cache_read if override.cost.cache_read is None else override.cost.cache_read,
            cache_write=cost.cache_write if override.cost.cache_write is None else override.cost.cache_write,
        )
    update["compat"] = _merge_compat(model.compat, override.compat)
    return model.model_copy(update=update)


class ModelRegistry:
    """Every model pi-host knows, the credentials to use them, and lookup by name.

    :param auth: credentials; ``auth.json`` in the agent directory by default.
    :param models_json: the ``models.json`` path; ``None`` uses built-in models only.
    """

    def __init__(self, auth: AuthStorage, models_json: Path | None) -> None:
        self.auth = auth
        self.models_json = models_json
        self._models: list[Model] = []
        self._request_configs: dict[str, _RequestConfig] = {}
        self._model_headers: dict[tuple[str, str], dict[str, str]] = {}
        self._registered: dict[str, ProviderConfig] = {}
        self.error: str | None = None
        self.error_line: str | None = None
        self._load()

    @classmethod
    def create(cls, directory: Path | None = None, *, env: Mapping[str, str] | None = None) -> ModelRegistry:
        """The registry of an agent directory (``$PI_HOST_DIR`` or ``~/.pi-host`` by default)."""
        root = directory if directory is not None else agent_dir(env)
        return cls(AuthStorage(root / "auth.json", env=env), root / "models.json")

    @classmethod
    def in_memory(cls, auth: AuthStorage | None = None) -> ModelRegistry:
        """Built-in models and in-memory credentials only."""
        return cls(auth if auth is not None else AuthStorage.in_memory(), None)

    # -- loading ---------------------------------------------------------------------------

    def refresh(self) -> None:
        """Re-read ``models.json`` (pi does so whenever ``/model`` opens); re-apply plugins' providers."""
        self._request_configs.clear()
        self._model_headers.clear()
        self.error = None
        self.error_line = None
        self._load()
        for name, config in self._registered.items():
            self._apply_provider(name, config)

    def _load(self) -> None:
        config = self._read_models_json()
        overrides: dict[str, ProviderConfig] = {}
        if config is not None:
            for name, provider in config.providers.items():
                overrides[name] = provider
                self._store_request_config(name, provider)
                for model_id, model_override in (provider.model_overrides or {}).items():
                    self._store_model_headers(name, model_id, model_override.headers)
        models = [self._with_overrides(model, overrides.get(model.provider)) for model in builtin_models()]
        if config is not None:
            for custom in self._custom_models(config):
                models = [m for m in models if not (m.provider == custom.provider and m.id == custom.id)] + [
                    custom
                ]
        self._models = models

    def _read_models_json(self) -> ModelsConfig | None:
        path = self.models_json
        if path is None:
            return None
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as exc:
            self.error = f"Failed to load models.json: {exc.strerror or exc}\n\nFile: {path}"
            self.error_line = _ignored(path, f"cannot be read ({exc.strerror or exc})")
            return None
        from pydantic import ValidationError

        from ._models_json import ModelsConfig, format_validation_error, strip_json_comments

        try:
            raw = json.loads(strip_json_comments(text))
        except ValueError as exc:
            self.error = f"Failed to parse models.json: {exc}\n\nFile: {path}"
            self.error_line = _ignored(path, f"is not valid JSON ({exc})")
            return None
        try:
            config = ModelsConfig.model_validate(raw)
            self._validate(config)
        except ValidationError as exc:
            self.error = f"Invalid models.json schema:\n{format_validation_error(exc)}\n\nFile: {path}"
            problems = "; ".join(line.strip(" -") for line in format_validation_error(exc).splitlines())
            self.error_line = _ignored(path, problems)
            return None
        except ValueError as exc:
            self.error = f"Failed to load models.json: {exc}\n\nFile: {path}"
            self.error_line = _ignored(path, str(exc))
            return None
        return config

    @staticmethod
    def _validate(config: ModelsConfig) -> None:
        builtin = {model.provider for model in builtin_models()}
        for name, provider in config.providers.items():
            models = provider.models or []
            if not models:
                if not (provider.base_url or provider.headers or provider.compat or provider.model_overrides):
                    raise ValueError(
                        f'Provider {name}: must specify "baseUrl", "headers", "compat", "modelOverrides", '
                        'or "models".'
                    )
            elif name not in builtin:
                if not provider.base_url:
                    raise ValueError(f'Provider {name}: "baseUrl" is required when defining custom models.')
                if not provider.api_key:
                    raise ValueError(f'Provider {name}: "apiKey" is required when defining custom models.')
            for model in models:
                if not provider.api and not model.api and name not in builtin:
                    raise ValueError(
                        f'Provider {name}, model {model.id}: no "api" specified. '
                        "Set at provider or model level."
                    )
                if model.context_window is not None and model.context_window <= 0:
                    raise ValueError(f"Provider {name}, model {model.id}: invalid contextWindow")
                if model.max_tokens is not None and model.max_tokens <= 0:
                    raise ValueError(f"Provider {name}, model {model.id}: invalid maxTokens")
                _check_base_url(f"Provider {name}, model {model.id}", model.base_url)
            _check_base_url(f"Provider {name}", provider.base_url)

    @staticmethod
    def _with_overrides(model: Model, provider: ProviderConfig | None) -> Model:
        if provider is None:
            return model
        if provider.base_url or provider.compat:
            model = model.model_copy(
                update={
                    "base_url": provider.base_url or model.base_url,
                    "compat": _merge_compat(model.compat, provider.compat),
                }
            )
        override = (provider.model_overrides or {}).get(model.id)
        return _apply_override(model, override) if override is not None else model

    def _custom_models(self, config: ModelsConfig) -> list[Model]:
        defaults: dict[str, tuple[str, str]] = {}
        for model in builtin_models():
            defaults.setdefault(model.provider, (model.api, model.base_url))
        models: list[Model] = []
        for name, provider in config.providers.items():
            builtin_api, builtin_url = defaults.get(name, (None, None))
            for definition in provider.models or ():
                api = definition.api or provider.api or builtin_api
                base_url = definition.base_url or provider.base_url or builtin_url
                if not api or not base_url:
                    continue
                self._store_model_headers(name, definition.id, definition.headers)
                models.append(self._model_from_definition(name, definition, api, base_url, provider.compat))
        return models

    @staticmethod
    def _model_from_definition(
        provider: str,
        definition: ModelDefinition,
        api: str,
        base_url: str,
        provider_compat: dict[str, Any] | None,
    ) -> Model:
        cost = definition.cost
        return Model(
            id=definition.id,
            name=definition.name or definition.id,
            api=api,
            provider=provider,
            base_url=base_url,
            reasoning=bool(definition.reasoning),
            thinking_level_map=dict(definition.thinking_level_map) if definition.thinking_level_map else None,
            input=list(definition.input) if definition.input is not None else ["text"],
            cost=ModelCost(
                input=cost.input, output=cost.output, cache_read=cost.cache_read, cache_write=cost.cache_write
            )
            if cost is not None
            else ModelCost(),
            context_window=int(definition.context_window)
            if definition.context_window is not None
            else 128_000,
            max_tokens=int(definition.max_tokens) if definition.max_tokens is not None else 16_384,
            compat=_merge_compat(provider_compat, definition.compat),
        )

    def _store_request_config(self, provider: str, config: ProviderConfig) -> None:
        if config.api_key or config.headers or config.auth_header:
            self._request_configs[provider] = _RequestConfig(
                api_key=config.api_key,
                headers=dict(config.headers or {}) or None,
                auth_header=bool(config.auth_header),
            )

    def _store_model_headers(self, provider: str, model_id: str, headers: Mapping[str, str] | None) -> None:
        if headers:
            self._model_headers[(provider, model_id)] = dict(headers)
        else:
            self._model_headers.pop((provider, model_id), None)

    # -- plugin providers --------------------------------------------------------------------

    def register_provider(self, name: str, config: ProviderConfig | Mapping[str, Any]) -> None:
        """Add or override a provider at run time (pi's ``pi.registerProvider``).

        With ``models``, they replace the provider's models (``baseUrl`` and ``apiKey`` are
        required); without, ``baseUrl`` / ``headers`` / ``apiKey`` apply to its existing models.

        :raises ValueError: naming the provider and the missing field.
        """
        from ._models_json import ProviderConfig

        provider = config if isinstance(config, ProviderConfig) else ProviderConfig.model_validate(config)
        if provider.models:
            if not provider.base_url:
                raise ValueError(f'Provider {name}: "baseUrl" is required when defining models.')
            if not provider.api_key:
                raise ValueError(f'Provider {name}: "apiKey" is required when defining models.')
            for model in provider.models:
                if not (model.api or provider.api):
                    raise ValueError(f'Provider {name}, model {model.id}: no "api" specified.')
        self._apply_provider(name, provider)
        existing = self._registered.get(name)
        if existing is None:
            self._registered[name] = provider
        else:
            fields = {key: value for key, value in provider if value is not None}
            self._registered[name] = existing.model_copy(update=fields)

    def unregister_provider(self, name: str) -> None:
        """Remove a provider registered with :meth:`register_provider`, restoring what it overrode."""
        if self._registered.pop(name, None) is not None:
            self.refresh()

    def _apply_provider(self, name: str, provider: ProviderConfig) -> None:
        self._store_request_config(name, provider)
        if provider.models:
            assert provider.base_url is not None
            kept = [m for m in self._models if m.provider != name]
            for definition in provider.models:
                api = definition.api or provider.api
                assert api is not None
                self._store_model_headers(name, definition.id, definition.headers)
                kept.append(
                    self._model_from_definition(
                        name, definition, api, definition.base_url or provider.base_url, provider.compat
                    )
                )
            self._models = kept
        elif provider.base_url:
            self._models = [
                m.model_copy(update={"base_url": provider.base_url}) if m.provider == name else m
                for m in self._models
            ]

    # -- queries -----------------------------------------------------------------------------

    def all(self) -> list[Model]:
        """Every model: built-in, ``models.json`` and plugin-registered."""
        return list(self._models)

    def available(self) -> list[Model]:
        """Models whose provider has credentials configured (no command is run to check)."""
        return [model for model in self._models if self.has_configured_auth(model)]

    def find(self, provider: str, model_id: str) -> Model | None:
        """The model ``provider/model_id``, exactly."""
        return next((m for m in self._models if m.provider == provider and m.id == model_id), None)

    def providers(self) -> list[str]:
        """Provider names, in order of first appearance."""
        return list(dict.fromkeys(model.provider for model in self._models))

    def has_configured_auth(self, model: Model) -> bool:
        config = self._request_configs.get(model.provider)
        return self.auth.has_auth(model.provider) or (config is not None and config.api_key is not None)

    def auth_status(self, provider: str) -> AuthStatus:
        """Where ``provider``'s credential comes from, including ``models.json`` (no command is run)."""
        status = self.auth.status(provider)
        if status.source is not None:
            return status
        config = self._request_configs.get(provider)
        if config is None or not config.api_key:
            return status
        if is_command(config.api_key):
            return AuthStatus(configured=True, source="models_json_command")
        if self.auth.env.get(config.api_key):
            return AuthStatus(configured=True, source="environment", label=config.api_key)
        return AuthStatus(configured=True, source="models_json_key")

    def resolve(self, model: str | None, provider: str | None = None) -> ModelResolution:
        """Resolve ``--model`` / ``--provider`` against every known model (see :mod:`._resolve`)."""
        return resolve_cli_model(self._models, model, provider)

    def resolve_scope(self, patterns: Sequence[str]) -> tuple[list[ScopedModel], list[str]]:
        """Resolve ``--models`` patterns against the available models; returns models and warnings."""
        return resolve_model_scope(patterns, self.available())

    def list_models_output(self, search: str | None = None) -> tuple[str, str]:
        """What ``pi-host --list-models [search]`` prints: ``(stdout, stderr)``, like pi.

        stdout is the table of available models (or why there is none); stderr warns about a
        broken ``models.json``.
        """
        warning = f"Warning: errors loading models.json:\n{self.error}" if self.error else ""
        table = format_model_list(self.available(), search)
        return (table if table is not None else self.no_models_message()), warning

    def no_models_message(self) -> str:
        """Why no model is usable, and what to do about it."""
        where = self.models_json.parent if self.models_json is not None else None
        places = (
            f"store a key in {where / 'auth.json'}, or add models to {where / 'models.json'}"
            if where is not None
            else "or add models to models.json"
        )
        return (
            "No models available. Set an API key (ANTHROPIC_API_KEY, OPENAI_API_KEY), pass --api-key, "
            f"{places}."
        )

    def default_model(self) -> Model | None:
        """The model to start with when none was chosen: a provider default with credentials."""
        return pick_default_model(self.available())

    # -- credentials for a request -------------------------------------------------------------

    def request_auth(self, model: Model) -> RequestAuth:
        """The API key and headers a request to ``model`` needs, resolved now.

        Runs ``!command`` values and refreshes an expired OAuth token, so it may block;
        :meth:`arequest_auth` runs it in a worker thread when either is involved.

        :raises ConfigValueError: when a configured value cannot be resolved, an expired OAuth
            credential cannot be refreshed (and nothing else gives a key), or ``authHeader`` is
            set and there is no key.
        """
        config = self._request_configs.get(model.provider)
        api_key = self.auth.api_key(model.provider, include_fallback=False)
        if api_key is None and config is not None and config.api_key:
            api_key = resolve_config_value_or_raise(
                config.api_key, f'API key for provider "{model.provider}"', env=self.auth.env
            )
        provider_headers = resolve_headers_or_raise(
            config.headers if config else None, f'provider "{model.provider}"', env=self.auth.env
        )
        model_headers = resolve_headers_or_raise(
            self._model_headers.get((model.provider, model.id)),
            f'model "{model.provider}/{model.id}"',
            env=self.auth.env,
        )
        headers: dict[str, str] = {
            **(model.headers or {}),
            **(provider_headers or {}),
            **(model_headers or {}),
        }
        if api_key is None and (why := self.auth.credential_error(model.provider)) is not None:
            # An expired OAuth token that could not be refreshed: say so, rather than the
            # provider's bare "no API key".
            raise ConfigValueError(why)
        if config is not None and config.auth_header:
            if not api_key:
                raise ConfigValueError(f'No API key found for "{model.provider}"')
            headers["Authorization"] = f"Bearer {api_key}"
        return RequestAuth(api_key=api_key, headers=headers or None)

    async def arequest_auth(self, model: Model) -> RequestAuth:
        """:meth:`request_auth`, off the event loop when it would run a command or refresh a token."""
        if self._may_block(model.provider, model):
            import anyio.to_thread

            return await anyio.to_thread.run_sync(self.request_auth, model)
        return self.request_auth(model)

    def _may_block(self, provider: str, model: Model | None = None) -> bool:
        """Whether resolving the credentials would run a ``!command`` or refresh an OAuth token."""
        if self.auth.oauth_refresh_due(provider):
            return True
        values: list[str] = []
        credential = self.auth.get(provider) or {}
        if isinstance(credential.get("key"), str):
            values.append(credential["key"])
        config = self._request_configs.get(provider)
        if config is not None:
            values += [config.api_key or "", *(config.headers or {}).values()]
        if model is not None:
            values += list((self._model_headers.get((model.provider, model.id)) or {}).values())
        return any(is_command(value) for value in values)

    async def aapi_key_for_provider(self, provider: str) -> str | None:
        """:meth:`api_key_for_provider`, off the event loop when it would run a command or refresh a token."""
        if self._may_block(provider):
            import anyio.to_thread

            return await anyio.to_thread.run_sync(self.api_key_for_provider, provider)
        return self.api_key_for_provider(provider)

    def api_key_for_provider(self, provider: str) -> str | None:
        """The key for ``provider`` alone (no model headers); ``None`` when none resolves."""
        key = self.auth.api_key(provider, include_fallback=False)
        if key is not None:
            return key
        config = self._request_configs.get(provider)
        if config is None or not config.api_key:
            return None
        try:
            return resolve_config_value_or_raise(
                config.api_key, f'API key for provider "{provider}"', env=self.auth.env
            )
        except ConfigValueError:
            return None


def _ignored(path: Path, problem: str) -> str:
    """One line for a models.json that cannot be used: the file, the problem, the remedy."""
    return f"{path}: {problem}. Its providers and models are ignored until the file is fixed"


def _check_base_url(where: str, url: str | None) -> None:
    """A base URL without a scheme cannot be requested: say so now, not after retries."""
    if url is not None and not url.lower().startswith(("http://", "https://")):
        raise ValueError(
            f'{where}: "baseUrl" {url!r} needs a scheme; write it as "http://{url}" or "https://{url}"'
        )
