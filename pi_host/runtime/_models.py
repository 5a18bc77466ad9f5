"""Models as a session sees them: the registry (catalogue + models.json) plus plugin providers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import replace

from pi_host.messages import AssistantMessage, AssistantMessageEvent, ErrorEvent
from pi_host.providers import LlmContext, Model, Provider, StreamOptions
from pi_host.providers._registry import ModelRegistry
from pi_host.providers._resolve import ModelResolution, resolve_cli_model

__all__ = ["ModelResolver"]


class ModelResolver:
    """Finds models, checks credentials and routes each request to its provider by ``api``.

    Models brought by plugin providers (``Provider.models``, e.g. ``faux/faux-1``) join the
    registry's; providers with ``requires_auth=False`` need no key.

    :param api_key: a key given on the command line (``--api-key``), used for every provider.
    """

    def __init__(
        self,
        registry: ModelRegistry,
        providers: Mapping[str, Provider],
        *,
        api_key: str | None = None,
        max_retries: int | None = None,
    ) -> None:
        """:param max_retries: the settings' ``retry.provider.maxRetries``, for requests that
        set none (None: the transport's default, as the official SDKs retry)."""
        self.registry = registry
        self.providers = providers
        self._api_key = api_key
        self._max_retries = max_retries

    def _keyless_apis(self) -> set[str]:
        return {api for api, provider in self.providers.items() if not provider.requires_auth}

    def all_models(self) -> list[Model]:
        extra = [model for provider in self.providers.values() for model in provider.models]
        return [*self.registry.all(), *extra]

    def available_models(self) -> list[Model]:
        """Models with credentials configured (what ``/model`` offers)."""
        extra = [
            model for provider in self.providers.values() if provider.listed for model in provider.models
        ]
        return [*self.registry.available(), *extra]

    def resolve(self, pattern: str | None, provider: str | None = None) -> ModelResolution:
        """Resolve ``--model`` / ``--provider`` against every known model."""
        return resolve_cli_model(self.all_models(), pattern, provider)

    def default_model(self) -> Model | None:
        return self.registry.default_model()

    def find(self, provider: str, model_id: str) -> Model | None:
        for model in self.all_models():
            if model.provider == provider and model.id == model_id:
                return model
        return None

    def has_auth(self, model: Model) -> bool:
        if model.api in self._keyless_apis() or self._api_key:
            return True
        return self.registry.has_configured_auth(model)

    def no_models_message(self) -> str:
        """Why no model has credentials, and what to do about it (one line)."""
        return self.registry.no_models_message()

    def missing_auth_message(self, model: Model) -> str:
        return (
            f'No API key found for "{model.provider}".\n\n'
            f"Set the provider's API key environment variable (for example ANTHROPIC_API_KEY), "
            f"add it to auth.json in the agent directory, pass --api-key, or configure "
            f'"apiKey" for the provider in models.json.'
        )

    async def api_key_for(self, provider: str) -> str | None:
        if self._api_key:
            return self._api_key
        return await self.registry.aapi_key_for_provider(provider)

    def stream(
        self, model: Model, context: LlmContext, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        """The session's stream function: credentials resolved per request, then the provider."""
        return self._stream(model, context, options)

    async def _stream(
        self, model: Model, context: LlmContext, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        provider = self.providers.get(model.api)
        if provider is None:
            yield _failure(
                model,
                f'No provider for api "{model.api}" (model {model.ref}). '
                "Install the plugin that provides it, or check models.json.",
            )
            return
        if provider.requires_auth:
            try:
                auth = await self.registry.arequest_auth(model)
            except Exception as exc:
                yield _failure(model, str(exc))
                return
            api_key = self._api_key or options.api_key or auth.api_key
            headers = {**(auth.headers or {}), **options.headers}
            options = replace(options, api_key=api_key, headers=headers)
        if options.max_retries is None and self._max_retries is not None:
            options = replace(options, max_retries=self._max_retries)
        events = provider.load()(model, context, options)
        try:
            async for event in events:
                yield event
        finally:
            # The agent loop closes this generator once it has the reply's last event, so the
            # provider's is closed here too: left to the garbage collector, asyncio's finalizer
            # hook would close it later, from a task of its own, waking the loop through its
            # self-pipe once per request.
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                await aclose()


def _failure(model: Model, message: str) -> ErrorEvent:
    return ErrorEvent(
        reason="error",
        error=AssistantMessage(
            api=model.api, provider=model.provider, model=model.id, stop_reason="error", error_message=message
        ),
    )
