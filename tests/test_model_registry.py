"""The model registry: catalogue, models.json, auth.json, value resolution, lookup and --list-models."""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pi_host.messages import DoneEvent, TextContent, UserMessage
from pi_host.providers import LlmContext, Model, Provider, StreamOptions
from pi_host.providers._auth import AuthStorage
from pi_host.providers._catalog import builtin_models
from pi_host.providers._config_value import (
    ConfigValueError,
    clear_command_cache,
    resolve_config_value,
    resolve_config_value_or_raise,
)
from pi_host.providers._models_json import strip_json_comments
from pi_host.providers._paths import agent_dir
from pi_host.providers._registry import ModelRegistry
from pi_host.providers._resolve import (
    find_exact_model_reference,
    format_model_list,
    format_token_count,
    fuzzy_filter,
    parse_model_pattern,
    resolve_cli_model,
    resolve_model_scope,
)
from pi_host.providers._thinking import clamp_thinking_level, supported_thinking_levels
from tests.fakeservers import OpenAIServer, openai_reply

KEY_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN", "OPENAI_API_KEY", "PI_HOST_DIR")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEY_VARS:
        monkeypatch.delenv(name, raising=False)
    clear_command_cache()


def write_models(directory: Path, config: Any) -> Path:
    path = directory / "models.json"
    path.write_text(config if isinstance(config, str) else json.dumps(config))
    return path


def registry(directory: Path, config: Any | None = None, env: dict[str, str] | None = None) -> ModelRegistry:
    if config is not None:
        write_models(directory, config)
    return ModelRegistry.create(directory, env=env if env is not None else {})


# -- the catalogue -----------------------------------------------------------------------------


def test_catalogue_matches_pi() -> None:
    models = {model.ref: model for model in builtin_models()}
    sonnet = models["anthropic/claude-sonnet-4-5"]
    assert (sonnet.name, sonnet.context_window, sonnet.max_tokens, sonnet.reasoning) == (
        "Claude Sonnet 4.5 (latest)",
        200_000,
        64_000,
        True,
    )
    assert sonnet.cost.model_dump() == {"input": 3, "output": 15, "cache_read": 0.3, "cache_write": 3.75}
    assert sonnet.input == ["text", "image"]
    assert sonnet.base_url == "https://api.anthropic.com"
    assert models["anthropic/claude-opus-4-6"].thinking_level_map == {"xhigh": "max"}
    haiku = models["anthropic/claude-3-5-haiku-20241022"]
    assert (haiku.reasoning, haiku.max_tokens, haiku.cost.input) == (False, 8192, 0.8)
    gpt = models["openai/gpt-4.1"]
    assert (gpt.api, gpt.base_url, gpt.context_window, gpt.max_tokens) == (
        "openai-completions",
        "https://api.openai.com/v1",
        1_047_576,
        32_768,
    )
    assert models["openai/o3-mini"].input == ["text"]
    assert models["openai/gpt-5.2"].thinking_level_map == {"off": None, "xhigh": "xhigh"}
    assert "openai/gpt-5-codex" not in models  # Responses-only
    assert len([m for m in builtin_models() if m.provider == "anthropic"]) == 23


def test_thinking_levels() -> None:
    models = {model.ref: model for model in builtin_models()}
    assert supported_thinking_levels(models["anthropic/claude-3-5-haiku-latest"]) == ["off"]
    assert supported_thinking_levels(models["anthropic/claude-sonnet-4-5"]) == [
        "off",
        "minimal",
        "low",
        "medium",
        "high",
    ]
    gpt5 = models["openai/gpt-5.2"]
    assert supported_thinking_levels(gpt5) == ["minimal", "low", "medium", "high", "xhigh"]
    assert clamp_thinking_level(gpt5, "off") == "minimal"
    assert clamp_thinking_level(models["anthropic/claude-sonnet-4-5"], "xhigh") == "high"
    assert clamp_thinking_level(models["anthropic/claude-3-5-haiku-latest"], "high") == "off"


# -- models.json -------------------------------------------------------------------------------


def test_custom_provider(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        {
            "providers": {
                "ollama": {
                    "baseUrl": "http://localhost:11434/v1",
                    "api": "openai-completions",
                    "apiKey": "ollama",
                    "compat": {"supportsDeveloperRole": False},
                    "models": [
                        {"id": "llama3.1:8b"},
                        {
                            "id": "qwen3:32b",
                            "name": "Qwen 3",
                            "reasoning": True,
                            "input": ["text", "image"],
                            "contextWindow": 40960,
                            "maxTokens": 8000,
                            "cost": {"input": 0.1, "output": 0.2, "cacheRead": 0, "cacheWrite": 0},
                            "compat": {"maxTokensField": "max_tokens"},
                        },
                    ],
                }
            }
        },
    )
    assert reg.error is None
    llama = reg.find("ollama", "llama3.1:8b")
    assert llama == Model(
        id="llama3.1:8b",
        name="llama3.1:8b",
        api="openai-completions",
        provider="ollama",
        base_url="http://localhost:11434/v1",
        compat={"supportsDeveloperRole": False},
    )
    qwen = reg.find("ollama", "qwen3:32b")
    assert qwen is not None
    assert (qwen.context_window, qwen.max_tokens, qwen.reasoning, qwen.cost.output) == (
        40960,
        8000,
        True,
        0.2,
    )
    assert qwen.compat == {"supportsDeveloperRole": False, "maxTokensField": "max_tokens"}
    assert [m.id for m in reg.available()] == ["llama3.1:8b", "qwen3:32b"]  # "ollama" is a (literal) key


def test_overriding_a_builtin_provider(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        {
            "providers": {
                "anthropic": {
                    "baseUrl": "https://proxy.example.com",
                    "modelOverrides": {
                        "claude-sonnet-4-5": {
                            "name": "Sonnet via proxy",
                            "cost": {"input": 1},
                            "maxTokens": 1000,
                        },
                        "no-such-model": {"name": "ignored"},
                    },
                    "models": [{"id": "claude-sonnet-4-5-custom", "contextWindow": 100000}],
                }
            }
        },
    )
    assert reg.error is None
    anthropic = [m for m in reg.all() if m.provider == "anthropic"]
    assert all(
        m.base_url == "https://proxy.example.com" for m in anthropic if m.id != "claude-sonnet-4-5-custom"
    )
    sonnet = reg.find("anthropic", "claude-sonnet-4-5")
    assert sonnet is not None
    assert (sonnet.name, sonnet.cost.input, sonnet.cost.output, sonnet.max_tokens) == (
        "Sonnet via proxy",
        1,
        15,
        1000,
    )
    custom = reg.find("anthropic", "claude-sonnet-4-5-custom")
    assert custom is not None
    assert (custom.api, custom.base_url, custom.context_window) == (
        "anthropic-messages",
        "https://proxy.example.com",
        100000,
    )
    assert len(anthropic) == 24


def test_custom_model_replaces_a_builtin_with_the_same_id(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        {"providers": {"openai": {"models": [{"id": "gpt-4o", "name": "Mine", "contextWindow": 5}]}}},
    )
    matches = [m for m in reg.all() if m.ref == "openai/gpt-4o"]
    assert len(matches) == 1 and matches[0].name == "Mine" and matches[0].context_window == 5
    assert matches[0].api == "openai-completions"


def test_comments_and_trailing_commas(tmp_path: Path) -> None:
    text = """{
      // local models
      "providers": {
        "lm": {"baseUrl": "http://x/v1", "api": "openai-completions", "apiKey": "a//b",
               "models": [{"id": "m",},],},
      },
    }"""
    reg = registry(tmp_path, text)
    assert reg.error is None
    assert reg.find("lm", "m") is not None
    assert (
        strip_json_comments('{"a": "x // not a comment", // yes\n"b": [1,],}')
        == '{"a": "x // not a comment", \n"b": [1]}'
    )


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("{not json", "Failed to parse models.json:"),
        ({"providers": {"x": {"baseUrl": 5}}}, "Invalid models.json schema:\n  - providers.x.baseUrl:"),
        (
            {"providers": {"x": {"models": [{"name": "no id"}]}}},
            "Invalid models.json schema:\n  - providers.x.models.0.id:",
        ),
        (
            {"providers": {"x": {}}},
            'Provider x: must specify "baseUrl", "headers", "compat", "modelOverrides", or "models".',
        ),
        (
            {"providers": {"x": {"api": "openai-completions", "apiKey": "k", "models": [{"id": "m"}]}}},
            'Provider x: "baseUrl" is required',
        ),
        (
            {
                "providers": {
                    "x": {"baseUrl": "http://h", "api": "openai-completions", "models": [{"id": "m"}]}
                }
            },
            'Provider x: "apiKey" is required',
        ),
        (
            {"providers": {"x": {"baseUrl": "http://h", "apiKey": "k", "models": [{"id": "m"}]}}},
            'Provider x, model m: no "api" specified.',
        ),
        (
            {
                "providers": {
                    "x": {
                        "baseUrl": "h",
                        "apiKey": "k",
                        "api": "a",
                        "models": [{"id": "m", "contextWindow": 0}],
                    }
                }
            },
            "invalid contextWindow",
        ),
    ],
)
def test_invalid_models_json_keeps_the_builtins(tmp_path: Path, config: Any, message: str) -> None:
    reg = registry(tmp_path, config)
    assert reg.error is not None
    assert message in reg.error
    assert reg.error.endswith(f"File: {tmp_path / 'models.json'}")
    assert len(reg.all()) == len(builtin_models())


def test_refresh_rereads_the_file(tmp_path: Path) -> None:
    reg = registry(tmp_path)
    assert reg.find("local", "m") is None
    write_models(
        tmp_path,
        {
            "providers": {
                "local": {
                    "baseUrl": "http://h/v1",
                    "api": "openai-completions",
                    "apiKey": "k",
                    "models": [{"id": "m"}],
                }
            }
        },
    )
    reg.refresh()
    assert reg.find("local", "m") is not None


# -- value resolution ------------------------------------------------------------------------------


def test_config_values() -> None:
    env = {"MY_KEY": "from-env", "HOST": "example.com", "EMPTY": ""}
    assert resolve_config_value("MY_KEY", env=env) == "from-env"
    assert resolve_config_value("sk-literal", env=env) == "sk-literal"
    assert resolve_config_value("EMPTY", env=env) == "EMPTY"
    assert resolve_config_value("https://$HOST/v1", env=env) == "https://example.com/v1"
    assert resolve_config_value("Bearer ${MY_KEY}!", env=env) == "Bearer from-env!"
    assert resolve_config_value("cost: $$5", env=env) == "cost: $5"
    assert resolve_config_value("$!not a command", env=env) == "!not a command"
    assert resolve_config_value("trailing $", env=env) == "trailing $"
    assert resolve_config_value("$MISSING", env=env) is None
    with pytest.raises(
        ConfigValueError, match='Failed to resolve API key for provider "x": environment variable MISSING'
    ):
        resolve_config_value_or_raise("${MISSING}", 'API key for provider "x"', env=env)


def test_shell_commands(tmp_path: Path) -> None:
    counter = tmp_path / "count"
    command = f"!echo run >> {counter}; echo ' secret-from-command '"
    assert resolve_config_value(command) == "secret-from-command"
    assert resolve_config_value(command) == "secret-from-command"
    assert counter.read_text().count("run") == 2  # models.json commands run every time
    resolve_config_value(command, cache_commands=True)
    resolve_config_value(command, cache_commands=True)
    assert counter.read_text().count("run") == 3  # auth.json commands run once
    assert resolve_config_value("!exit 3") is None
    assert resolve_config_value("!true") is None
    with pytest.raises(ConfigValueError, match="from shell command: exit 3"):
        resolve_config_value_or_raise("!exit 3", "API key")


# -- credentials ---------------------------------------------------------------------------------


def test_key_resolution_order(tmp_path: Path) -> None:
    (tmp_path / "auth.json").write_text(
        json.dumps({"anthropic": {"type": "api_key", "key": "from-auth-json"}})
    )
    env = {"ANTHROPIC_API_KEY": "from-env", "OPENAI_API_KEY": "openai-env"}
    reg = registry(tmp_path, env=env)
    sonnet = reg.find("anthropic", "claude-sonnet-4-5")
    gpt = reg.find("openai", "gpt-4o")
    assert sonnet is not None and gpt is not None
    assert reg.request_auth(sonnet).api_key == "from-auth-json"
    assert reg.request_auth(gpt).api_key == "openai-env"
    reg.auth.set_runtime_api_key("anthropic", "from-flag")
    assert reg.request_auth(sonnet).api_key == "from-flag"
    oauth_env = registry(tmp_path / "other", env={"ANTHROPIC_OAUTH_TOKEN": "oat", "ANTHROPIC_API_KEY": "key"})
    assert oauth_env.api_key_for_provider("anthropic") == "oat"


def test_models_json_keys_and_headers_resolve_per_request(tmp_path: Path) -> None:
    env = {"PROXY_KEY": "proxy-secret", "TEAM": "core"}
    reg = registry(
        tmp_path,
        {
            "providers": {
                "proxy": {
                    "baseUrl": "https://proxy/v1",
                    "api": "openai-completions",
                    "apiKey": "PROXY_KEY",
                    "authHeader": True,
                    "headers": {"x-team": "team-$TEAM", "x-literal": "$$raw"},
                    "models": [{"id": "m", "headers": {"x-model": "!echo per-model"}}],
                }
            }
        },
        env=env,
    )
    model = reg.find("proxy", "m")
    assert model is not None
    auth = reg.request_auth(model)
    assert auth.api_key == "proxy-secret"
    assert auth.headers == {
        "x-team": "team-core",
        "x-literal": "$raw",
        "x-model": "per-model",
        "Authorization": "Bearer proxy-secret",
    }
    assert reg.auth_status("proxy").source == "environment"


def test_unresolvable_values_explain_themselves(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        {
            "providers": {
                "p": {
                    "baseUrl": "http://h",
                    "api": "openai-completions",
                    "apiKey": "!exit 1",
                    "models": [{"id": "m"}],
                }
            }
        },
    )
    model = reg.find("p", "m")
    assert model is not None
    assert reg.auth_status("p").source == "models_json_command"
    assert model in reg.available()  # configured, even if the command fails later
    with pytest.raises(
        ConfigValueError, match='Failed to resolve API key for provider "p" from shell command: exit 1'
    ):
        reg.request_auth(model)


async def test_request_auth_runs_commands_off_the_loop(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        {
            "providers": {
                "p": {
                    "baseUrl": "http://h",
                    "api": "openai-completions",
                    "apiKey": "!echo k1",
                    "models": [{"id": "m"}],
                }
            }
        },
    )
    model = reg.find("p", "m")
    assert model is not None
    assert (await reg.arequest_auth(model)).api_key == "k1"


def test_auth_json_is_private(tmp_path: Path) -> None:
    directory = tmp_path / "agent"
    storage = AuthStorage(directory / "auth.json")
    storage.set_api_key("anthropic", "sk-ant-written")
    path = directory / "auth.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert json.loads(path.read_text()) == {"anthropic": {"type": "api_key", "key": "sk-ant-written"}}
    path.chmod(0o644)  # someone loosened it; the next write tightens it again
    storage.set_api_key("openai", "sk-openai")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert AuthStorage(path).providers() == ["anthropic", "openai"]
    storage.remove("anthropic")
    assert json.loads(path.read_text()) == {"openai": {"type": "api_key", "key": "sk-openai"}}
    assert not [p for p in directory.iterdir() if p.name.endswith(".tmp")]


def test_auth_json_merges_concurrent_changes(tmp_path: Path) -> None:
    path = tmp_path / "auth.json"
    first, second = AuthStorage(path), AuthStorage(path)
    first.set_api_key("anthropic", "a")
    second.set_api_key("openai", "b")  # read-modify-write under the lock keeps both
    assert set(json.loads(path.read_text())) == {"anthropic", "openai"}


def test_broken_auth_json_is_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "auth.json"
    path.write_text("{broken")
    storage = AuthStorage(path)
    assert storage.load_error is not None and "not valid JSON" in storage.load_error
    storage.set_api_key("openai", "x")
    assert path.read_text() == "{broken"
    assert storage.api_key("openai") == "x"  # still usable in memory


@pytest.mark.parametrize("replacement", ["[1, 2]", "{broken"])
def test_auth_json_changed_on_disk_into_something_else_is_not_overwritten(
    tmp_path: Path, replacement: str
) -> None:
    path = tmp_path / "auth.json"
    storage = AuthStorage(path)
    storage.set_api_key("anthropic", "a")
    path.write_text(replacement)  # another program rewrote the file meanwhile
    storage.set_api_key("openai", "b")
    assert path.read_text() == replacement
    assert storage.load_error is not None and "not overwriting it" in storage.load_error
    assert storage.api_key("openai") == "b"  # still usable in memory


def test_oauth_credentials(tmp_path: Path) -> None:
    now = int(time.time() * 1000)
    storage = AuthStorage.in_memory(
        {
            "anthropic": {
                "type": "oauth",
                "access": "sk-ant-oat01-live",
                "refresh": "r",
                "expires": now + 60_000,
            },
            "stale": {"type": "oauth", "access": "old", "refresh": "r", "expires": now - 1},
        },
        env={},
    )
    assert storage.api_key("anthropic") == "sk-ant-oat01-live"
    assert storage.api_key("stale") is None
    assert storage.drain_errors() == [
        'The OAuth token for "stale" expired; log in again (/login) to refresh it'
    ]


def test_auth_status_never_runs_commands(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    storage = AuthStorage.in_memory(
        {"p": {"type": "api_key", "key": f"!touch {marker}"}}, env={"OPENAI_API_KEY": "k"}
    )
    assert storage.has_auth("p") and storage.status("p").source == "stored"
    assert storage.status("openai").label == "OPENAI_API_KEY"
    assert storage.status("nobody").configured is False
    assert not marker.exists()


def test_agent_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert agent_dir({}) == Path.home() / ".pi-host"
    assert agent_dir({"PI_HOST_DIR": str(tmp_path)}) == tmp_path.resolve()
    assert agent_dir({"PI_HOST_DIR": "~/agent"}) == (Path.home() / "agent").resolve()
    monkeypatch.setenv("PI_HOST_DIR", str(tmp_path / "x"))
    assert ModelRegistry.create().models_json == (tmp_path / "x").resolve() / "models.json"


# -- plugin-registered providers ------------------------------------------------------------------


def test_register_and_unregister_provider(tmp_path: Path) -> None:
    reg = registry(tmp_path)
    reg.register_provider(
        "corp",
        {
            "baseUrl": "https://corp/v1",
            "apiKey": "CORP_KEY",
            "api": "openai-completions",
            "models": [{"id": "c1"}],
        },
    )
    assert reg.find("corp", "c1") is not None
    reg.register_provider("anthropic", {"baseUrl": "https://gateway"})
    assert reg.find("anthropic", "claude-sonnet-4-5").base_url == "https://gateway"  # type: ignore[union-attr]
    reg.refresh()
    assert reg.find("corp", "c1") is not None  # registrations survive a refresh
    reg.unregister_provider("anthropic")
    assert reg.find("anthropic", "claude-sonnet-4-5").base_url == "https://api.anthropic.com"  # type: ignore[union-attr]
    with pytest.raises(ValueError, match=r'Provider bad: "baseUrl" is required when defining models\.'):
        reg.register_provider("bad", {"apiKey": "k", "api": "x", "models": [{"id": "m"}]})


# -- lookup ------------------------------------------------------------------------------------


def _m(provider: str, model_id: str, name: str = "") -> Model:
    return Model(id=model_id, name=name or model_id, api="x", provider=provider)


MODELS = [
    _m("anthropic", "claude-sonnet-4-5", "Claude Sonnet 4.5"),
    _m("anthropic", "claude-sonnet-4-5-20250929", "Claude Sonnet 4.5"),
    _m("anthropic", "claude-sonnet-4-20250514"),
    _m("anthropic", "claude-sonnet-4-20250101"),
    _m("openai", "gpt-4o"),
    _m("openrouter", "openai/gpt-4o"),
    _m("openrouter", "qwen/qwen3-coder:exacto"),
    _m("local", "gpt-4o"),
]


def test_exact_references() -> None:
    assert find_exact_model_reference("anthropic/claude-sonnet-4-5", MODELS) is MODELS[0]
    assert find_exact_model_reference("ANTHROPIC/Claude-Sonnet-4-5", MODELS) is MODELS[0]
    assert find_exact_model_reference("gpt-4o", MODELS) is None  # two providers have it
    assert find_exact_model_reference("openrouter/openai/gpt-4o", MODELS) is MODELS[5]


def test_patterns() -> None:
    assert parse_model_pattern("sonnet-4-5", MODELS).model is MODELS[0]  # alias beats dated
    assert parse_model_pattern("sonnet-4-2", MODELS).model is MODELS[2]  # latest dated
    match = parse_model_pattern("sonnet-4-5:high", MODELS)
    assert (match.model, match.thinking_level) == (MODELS[0], "high")
    assert parse_model_pattern("qwen3-coder:exacto", MODELS).model is MODELS[6]  # colon in the id
    colon = parse_model_pattern("qwen3-coder:exacto:low", MODELS)
    assert (colon.model, colon.thinking_level) == (MODELS[6], "low")
    scoped = parse_model_pattern("sonnet-4-5:loud", MODELS)
    assert scoped.model is MODELS[0]
    assert (
        scoped.warning == 'Invalid thinking level "loud" in pattern "sonnet-4-5:loud". Using default instead.'
    )
    assert (
        parse_model_pattern("sonnet-4-5:loud", MODELS, allow_invalid_thinking_level_fallback=False).model
        is None
    )


def test_cli_resolution() -> None:
    assert resolve_cli_model(MODELS, "anthropic/sonnet-4-5").model is MODELS[0]
    assert resolve_cli_model(MODELS, "sonnet", "anthropic").model is MODELS[0]
    assert resolve_cli_model(MODELS, "anthropic/sonnet", "anthropic").model is MODELS[0]
    assert resolve_cli_model(MODELS, "openai/gpt-4o").model is MODELS[4]
    assert resolve_cli_model(MODELS, "gpt-4o").model is MODELS[4]  # first exact id
    high = resolve_cli_model(MODELS, "openai/gpt-4o:high")
    assert (high.model, high.thinking_level) == (MODELS[4], "high")
    unknown = resolve_cli_model(MODELS, "gpt-4o", "nobody")
    assert unknown.error == 'Unknown provider "nobody". Use --list-models to see available providers/models.'
    custom = resolve_cli_model(MODELS, "claude-next", "anthropic")
    assert (
        custom.model is not None and custom.model.id == "claude-next" and custom.model.provider == "anthropic"
    )
    assert custom.warning == 'Model "claude-next" not found for provider "anthropic". Using custom model id.'
    missing = resolve_cli_model(MODELS, "nothing-like-this")
    assert missing.error == 'Model "nothing-like-this" not found. Use --list-models to see available models.'
    assert (
        resolve_cli_model([], "x").error
        == "No models available. Check your installation or add models to models.json."
    )


def test_scopes() -> None:
    scoped, warnings = resolve_model_scope(
        ["anthropic/*:medium", "openai/gpt-4o", "zzz", "*/*exacto"], MODELS
    )
    assert [(s.model.ref, s.thinking_level) for s in scoped] == [
        ("anthropic/claude-sonnet-4-5", "medium"),
        ("anthropic/claude-sonnet-4-5-20250929", "medium"),
        ("anthropic/claude-sonnet-4-20250514", "medium"),
        ("anthropic/claude-sonnet-4-20250101", "medium"),
        ("openai/gpt-4o", None),
        ("openrouter/qwen/qwen3-coder:exacto", None),
    ]
    assert warnings == ['No models match pattern "zzz"']
    # As with minimatch, "*" stops at "/" and "**" does not.
    assert resolve_model_scope(["openrouter/*"], MODELS)[0] == []
    assert [s.model.ref for s in resolve_model_scope(["openrouter/**"], MODELS)[0]] == [
        "openrouter/openai/gpt-4o",
        "openrouter/qwen/qwen3-coder:exacto",
    ]
    assert resolve_model_scope(["*exacto"], MODELS) == ([], ['No models match pattern "*exacto"'])
    # An ambiguous bare id falls back to substring matching, highest id first (pi's rule).
    assert [s.model.ref for s in resolve_model_scope(["gpt-4o"], MODELS)[0]] == ["openrouter/openai/gpt-4o"]


def test_default_model(tmp_path: Path) -> None:
    assert registry(tmp_path, env={}).default_model() is None
    reg = registry(tmp_path, env={"OPENAI_API_KEY": "k"})
    assert reg.default_model() == reg.find("openai", "gpt-5.4")
    both = registry(tmp_path, env={"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "a"})
    assert both.default_model() == both.find("anthropic", "claude-opus-4-7")


# -- --list-models -------------------------------------------------------------------------------


def test_list_models_table() -> None:
    models = [
        m
        for m in builtin_models()
        if m.id in ("claude-sonnet-4-5", "claude-3-haiku-20240307", "gpt-4.1", "o3-mini")
    ]
    assert format_model_list(models) == (
        "provider   model                    context  max-out  thinking  images\n"
        "anthropic  claude-3-haiku-20240307  200K     4.1K     no        yes   \n"
        "anthropic  claude-sonnet-4-5        200K     64K      yes       yes   \n"
        "openai     gpt-4.1                  1.0M     32.8K    no        yes   \n"
        "openai     o3-mini                  200K     100K     yes       no    "
    )
    assert format_model_list(models, "zzz") == 'No models matching "zzz"'
    assert format_model_list([]) is None


def test_list_models_search_is_fuzzy() -> None:
    models = list(builtin_models())
    found = [m.ref for m in fuzzy_filter(models, "sonnet 4-5")]
    assert found[:2] == ["anthropic/claude-sonnet-4-5", "anthropic/claude-sonnet-4-5-20250929"]
    assert "openai/gpt-5" in [m.ref for m in fuzzy_filter(models, "gpt5")]
    assert all(m.provider == "openai" for m in fuzzy_filter(models, "openai o3"))


def test_token_counts() -> None:
    assert [format_token_count(n) for n in (999, 1000, 1500, 200_000, 1_000_000, 1_047_576)] == [
        "999",
        "1K",
        "1.5K",
        "200K",
        "1M",
        "1.0M",
    ]


# -- end to end ----------------------------------------------------------------------------------


async def test_models_json_custom_provider_end_to_end(tmp_path: Path) -> None:
    """models.json → registry → credentials → the registered provider → a local server."""
    import pi_host.builtins.providers as builtin_plugin

    with OpenAIServer(
        [openai_reply("Hi from the local server.", usage={"prompt_tokens": 5, "completion_tokens": 4})]
    ) as server:
        reg = registry(
            tmp_path,
            {
                "providers": {
                    "local": {
                        "baseUrl": server.base_url,
                        "api": "openai-completions",
                        "apiKey": "$LOCAL_KEY",
                        "headers": {"x-client": "pi-host-test"},
                        "compat": {"supportsDeveloperRole": False, "maxTokensField": "max_tokens"},
                        "models": [{"id": "coder", "reasoning": True, "maxTokens": 2048}],
                    }
                }
            },
            env={"LOCAL_KEY": "local-secret"},
        )
        resolution = reg.resolve("local/coder:low")
        assert resolution.model is not None and resolution.thinking_level == "low"
        registered: list[Provider] = []
        builtin_plugin.pi_register_providers(registered.append)
        provider = next(p for p in registered if p.api == resolution.model.api)
        auth = await reg.arequest_auth(resolution.model)
        options = StreamOptions(
            api_key=auth.api_key, headers=auth.headers or {}, reasoning=resolution.thinking_level
        )
        context = LlmContext(system_prompt="sys", messages=[UserMessage(content="hello")])
        events = [event async for event in provider.load()(resolution.model, context, options)]
    assert isinstance(events[-1], DoneEvent)
    assert events[-1].message.content == [TextContent(text="Hi from the local server.")]
    request = server.requests[0]
    assert request.headers["authorization"] == "Bearer local-secret"
    assert request.headers["x-client"] == "pi-host-test"
    body = request.json()
    assert body["messages"][0] == {"role": "system", "content": "sys"}
    assert (body["max_tokens"], body["reasoning_effort"]) == (2048, "low")


def test_registry_import_stays_cheap() -> None:
    import subprocess

    code = (
        "import sys, pi_host.providers._registry; print('httpx' in sys.modules, 'anthropic' in sys.modules)"
    )
    output = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ.copy()
    )
    assert output.stdout.strip() == "False False"


def test_list_models_output(tmp_path: Path) -> None:
    empty = registry(tmp_path, env={})
    stdout, stderr = empty.list_models_output()
    assert stdout == (
        "No models available. Set an API key (ANTHROPIC_API_KEY, OPENAI_API_KEY), pass --api-key, "
        f"store a key in {tmp_path / 'auth.json'}, or add models to {tmp_path / 'models.json'}."
    )
    assert stderr == ""
    write_models(tmp_path, "{broken")
    broken = ModelRegistry.create(tmp_path, env={"OPENAI_API_KEY": "k"})
    stdout, stderr = broken.list_models_output("gpt-4.1")
    assert stdout.splitlines()[0].split() == ["provider", "model", "context", "max-out", "thinking", "images"]
    assert stdout.splitlines()[1].split()[:2] == ["openai", "gpt-4.1"]
    assert stderr.startswith("Warning: errors loading models.json:\nFailed to parse models.json:")
