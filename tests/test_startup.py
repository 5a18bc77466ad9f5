"""What start-up costs: a budget of imported modules per command, and the shortcuts that keep
start-up light giving the same answers as the full path.

Import checks run the command's ``main`` in a fresh interpreter and count what it added to
``sys.modules``; nothing here measures time.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pydantic
import pytest

from pi_host.errors import UsageError
from pi_host.hookspecs import Flag, hookimpl
from pi_host.plugin import PluginControls
from pi_host.resources import Settings, SettingsManager
from pi_host.resources._settings import DEFAULT_PROJECT_TRUST
from pi_host.runtime import Host, settings_disabled_plugins
from pi_host.runtime._host import plugin_flags

# -- what each command imports: one budget per command ---------------------------------------

_LIST_MODULES = textwrap.dedent(
    """
    import json, sys
    already = set(sys.modules)
    from pi_host.modes._cli import main
    status = main(sys.argv[1:])
    sys.stdout.flush()
    with open(sys.argv[0] + ".modules.json", "w") as out:
        json.dump(sorted(set(sys.modules) - already), out)
    sys.exit(status)
    """
)


def imported_modules(
    tmp_path: Path,
    *args: str,
    plugins: str | None,
    env: dict[str, str] | None = None,
    stdin: str = "",
) -> set[str]:
    """The modules ``pi-host ARGS`` imported, run in a fresh interpreter (those of its start excluded)."""
    script = tmp_path / "list_modules.py"
    script.write_text(_LIST_MODULES, encoding="utf-8")
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("PI_HOST", "ANTHROPIC_", "OPENAI_"))}
    environ.update(HOME=str(tmp_path), PI_HOST_DIR=str(tmp_path / "agent"), NO_COLOR="1", **(env or {}))
    if plugins is not None:
        environ["PI_HOST_PLUGINS"] = plugins
    result = subprocess.run(
        [sys.executable, str(script), *args],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        input=stdin,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    modules: list[str] = json.loads(Path(f"{script}.modules.json").read_text(encoding="utf-8"))
    return set(modules)


def loaded(modules: set[str], *prefixes: str) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(f"{p}.") for p in prefixes))


#: The plugins of ``pi-host[default]``: what a plain install loads.
DEFAULT_PLUGINS = "bash,compaction,retry,tools_fs"

#: Libraries no command below needs: the SDKs and httpx (the lean HTTP client speaks plain
#: HTTP/1.1 itself) and the terminal UI's, which only the interactive mode uses.
NEVER = ("anthropic", "openai", "httpx", "rich", "prompt_toolkit")
#: What a command that neither runs a session nor validates data has no use for.
NO_SESSION = (*NEVER, "pydantic", "pydantic_core", "anyio", "asyncio", "ssl")


@dataclass(frozen=True)
class Budget:
    """What one command may import: at most ``modules`` in all, ``own`` of them pi-host's, none of ``absent``.

    The figures are what the command imported on CPython 3.11 when they were set, with about
    a sixth of headroom (at least ten modules), so that an ordinary change does not trip them
    and a new eager import of a package's worth of modules does. ``modules`` counts the
    standard library too (CPython 3.12 and later import fewer modules of their own);
    ``own`` counts ``pi_host.*``, which this project alone decides. Modules are counted, not
    timed: a count does not drift with the machine's load.
    """

    modules: int
    own: int
    absent: tuple[str, ...]

    def check(self, modules: set[str]) -> None:
        own = loaded(modules, "pi_host")
        assert loaded(modules, *self.absent) == []
        assert len(own) <= self.own, f"{len(own)} pi_host modules, budget {self.own}: {own}"
        budget = f"{len(modules)} modules, budget {self.modules}"
        assert len(modules) <= self.modules, f"{budget}: {sorted(modules)}"


def _faux_script(tmp_path: Path) -> dict[str, str]:
    script = tmp_path / "faux.json"
    script.write_text(json.dumps([{"text": "Hello offline"}]), encoding="utf-8")
    return {"PI_HOST_FAUX_SCRIPT": str(script)}


# At the time of writing: 46 modules (6 pi_host).
def test_version_budget(tmp_path: Path) -> None:
    Budget(modules=60, own=10, absent=(*NO_SESSION, "pi_host.plugin", "pi_host.hookspecs")).check(
        imported_modules(tmp_path, "--version", plugins=None)
    )


# 151 modules (26 pi_host) without plugins, 159 (27) with the default ones: listing the flags
# the plugins register builds no model class and starts no event loop.
@pytest.mark.parametrize(
    ("plugins", "budget"),
    [("", Budget(modules=175, own=32, absent=NO_SESSION)), (DEFAULT_PLUGINS, Budget(185, 33, NO_SESSION))],
)
def test_help_budget(tmp_path: Path, plugins: str, budget: Budget) -> None:
    modules = imported_modules(tmp_path, "--help", plugins=plugins)
    assert set(filter(None, plugins.split(","))) <= {m.removeprefix("pi_") for m in modules}  # loaded them
    budget.check(modules)


def test_help_with_every_installed_plugin_budget(tmp_path: Path) -> None:
    # 60 pi_host modules when set again (49 before plugin tiers, containment, pi-mcp's use of
    # the public truncation helpers): pi-guard's entry point imports pydantic, which is its
    # own business; what the host adds for --help stays the same.
    modules = imported_modules(tmp_path, "--help", plugins=None)
    assert "pi_guard" in modules  # the plugins are imported: their flags are listed
    assert "psycopg" not in modules  # pi-store-postgres loads its driver on first use
    assert "pi_batch_ray" in modules and "ray" not in modules  # pi-batch-ray: Ray only for --executor ray
    Budget(modules=360, own=68, absent=NEVER).check(modules)


# A one-shot reply from the faux provider: 398 modules (115 pi_host; 8 of them the parts
# AgentSession is composed of, each budget of a command that runs a session raised by as
# much). No HTTP at all.
def test_one_shot_budget(tmp_path: Path) -> None:
    modules = imported_modules(
        tmp_path, "--provider", "faux", "-p", "hi", plugins=DEFAULT_PLUGINS, env=_faux_script(tmp_path)
    )
    assert "pi_host.runtime._session" in modules  # the run happened
    Budget(modules=448, own=124, absent=(*NEVER, "h11")).check(modules)


def _local_anthropic(tmp_path: Path, server_url: str) -> list[str]:
    agent = tmp_path / "agent"
    agent.mkdir()
    provider = {"baseUrl": server_url, "api": "anthropic-messages", "apiKey": "local"}
    models = {"providers": {"local": {**provider, "models": [{"id": "claude-local"}]}}}
    (agent / "models.json").write_text(json.dumps(models), encoding="utf-8")
    return ["--model", "local/claude-local"]


# A one-shot reply from an HTTP provider (the fake Anthropic server): 399 modules (108 pi_host).
def test_one_shot_over_http_budget(tmp_path: Path) -> None:
    from tests.fakeservers import AnthropicServer, anthropic_reply

    with AnthropicServer([anthropic_reply("Hello from the local server")]) as server:
        args = _local_anthropic(tmp_path, server.url)
        modules = imported_modules(tmp_path, *args, "-p", "hi", plugins=DEFAULT_PLUGINS)
        assert len(server.requests) == 1  # the reply came over HTTP
    Budget(modules=468, own=134, absent=NEVER).check(modules)


def test_one_shot_with_a_valid_oauth_token_budget(tmp_path: Path) -> None:
    import time

    from tests.fakeservers import AnthropicServer, anthropic_reply

    with AnthropicServer([anthropic_reply("Hello, subscriber")]) as server:
        agent = tmp_path / "agent"
        agent.mkdir()
        (agent / "models.json").write_text(
            json.dumps({"providers": {"anthropic": {"baseUrl": server.url}}}), encoding="utf-8"
        )
        expires = int(time.time() * 1000) + 3_600_000
        oauth = {"type": "oauth", "access": "sk-ant-oat01-live", "refresh": "r", "expires": expires}
        (agent / "auth.json").write_text(json.dumps({"anthropic": oauth}), encoding="utf-8")
        modules = imported_modules(
            tmp_path, "--model", "anthropic/claude-sonnet-4-5", "-p", "hi", plugins=DEFAULT_PLUGINS
        )
        assert server.requests[0].headers["authorization"] == "Bearer sk-ant-oat01-live"  # the check works
    Budget(modules=468, own=134, absent=NEVER).check(modules)


# RPC start-up and one command: 380 modules (99 pi_host).
def test_rpc_budget(tmp_path: Path) -> None:
    modules = imported_modules(
        tmp_path,
        "--provider",
        "faux",
        "--mode",
        "rpc",
        plugins=DEFAULT_PLUGINS,
        env=_faux_script(tmp_path),
        stdin=json.dumps({"type": "get_state", "id": "1"}) + "\n",
    )
    assert "pi_host.modes._rpc" in modules  # the mode ran
    Budget(modules=448, own=124, absent=NEVER).check(modules)


# -- --help's plugin flags are the host's -------------------------------------------------------


def _flag_plugin(*flags: Flag, **marker: Any) -> object:
    class Plugin:
        @hookimpl(**marker)
        def pi_register_flags(self, register: Callable[[Flag], None]) -> None:
            for flag in flags:
                register(flag)

    return Plugin()


class _Broken:
    @hookimpl
    def pi_register_flags(self, register: Callable[[Flag], None]) -> None:
        raise RuntimeError("no flags today")


def test_plugin_flags_are_the_flags_a_loaded_host_collects() -> None:
    extra = [
        _flag_plugin(Flag("alpha", description="first"), Flag("shared", "string", description="from one")),
        _flag_plugin(Flag("beta"), Flag("shared", description="from two"), tryfirst=True),
        _Broken(),
        _flag_plugin(Flag("gamma", "string")),
    ]
    safe = PluginControls(allow=frozenset())
    expected = Host.load(controls=safe, extra_plugins=extra).flags
    assert list(plugin_flags(controls=safe, extra_plugins=extra).items()) == list(expected.items())
    assert expected["shared"].description == "from two"  # tryfirst: called first, registered first


def test_plugin_flags_of_the_installed_plugins_are_the_hosts() -> None:
    controls = PluginControls.from_environ()
    assert list(plugin_flags(controls=controls).items()) == list(Host.load(controls=controls).flags.items())


def test_plugin_flags_refuse_to_disable_an_essential_plugin() -> None:
    with pytest.raises(UsageError, match="essential"):
        plugin_flags(disabled=["faux"])


# -- settings read without validating them ------------------------------------------------------


def test_the_known_defaults_are_the_settings_models() -> None:
    assert Settings().default_project_trust == DEFAULT_PROJECT_TRUST
    assert Settings().plugins.disable == []


def write_settings(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


@pytest.mark.parametrize(
    ("global_data", "project_data", "expected"),
    [
        ({}, {}, []),
        ({"defaultModel": "x", "compaction": {"enabled": 3}}, {}, []),
        ({"plugins": {"disable": ["guard"]}}, {}, ["guard"]),
        ({"plugins": {"disable": "guard"}}, {}, []),  # invalid: replaced by the default
        ({"plugins": {"disable": ["guard"]}}, {"plugins": {"disable": ["bash"]}}, ["guard"]),  # untrusted
        (
            {"defaultProjectTrust": "always", "plugins": {"disable": ["guard"]}},
            {"plugins": {"disable": ["bash"]}},
            ["bash"],
        ),
        ({"defaultProjectTrust": "always"}, {"plugins": {"disable": ["bash"]}}, ["bash"]),
        ({"defaultProjectTrust": 7}, {"plugins": {"disable": ["bash"]}}, []),  # invalid: "ask"
    ],
)
def test_settings_disabled_plugins_reads_only_what_is_set(
    tmp_path: Path, global_data: dict[str, Any], project_data: dict[str, Any], expected: list[str]
) -> None:
    agent, project = tmp_path / "agent", tmp_path / "project"
    write_settings(agent / "settings.json", global_data)
    write_settings(project / ".pi" / "settings.json", project_data)
    assert settings_disabled_plugins(str(project), agent_dir_path=str(agent)) == expected


def test_sets_any_follows_trust_and_overrides() -> None:
    manager = SettingsManager.in_memory({"theme": "dark"}, {"plugins": {}}, project_trusted=False)
    assert not manager.sets_any("plugins", "defaultProjectTrust")
    manager.set_project_trusted(True)
    assert manager.sets_any("plugins")
    manager = SettingsManager.in_memory({}, {}, project_trusted=True)
    manager.apply_overrides({"defaultProjectTrust": "never"})
    assert manager.sets_any("defaultProjectTrust")


def _shape(model: Any) -> Any:
    """A model's values, fields set and extras, recursively: what equality alone would miss."""
    if not isinstance(model, pydantic.BaseModel):
        return model
    return (
        type(model),
        {name: _shape(getattr(model, name)) for name in type(model).model_fields},
        model.model_fields_set,
        model.model_extra,
    )


def test_default_settings_are_what_validating_nothing_gives() -> None:
    validated = Settings.model_validate({})
    assert _shape(Settings.model_construct()) == _shape(validated)
    assert SettingsManager.in_memory({}, {}).settings == validated
    for name, field in Settings.model_fields.items():
        value = getattr(validated, name)
        if isinstance(value, pydantic.BaseModel):
            # Sections default through model_construct: the same as calling the class.
            assert field.default_factory is not None
            assert _shape(value) == _shape(type(value)())
            assert _shape(value) == _shape(type(value).model_validate({}))


# -- the collector is paused for start-up and handed back afterwards ---------------------------


@pytest.mark.parametrize("args", [["--help"], ["--provider", "faux", "-p", "hi"]])
def test_main_leaves_the_collector_as_it_found_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    from pi_host.modes._cli import main

    script = tmp_path / "faux.json"
    script.write_text(json.dumps([{"text": "Hello offline"}]), encoding="utf-8")
    for name in [name for name in os.environ if name.startswith("PI_HOST")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("PI_HOST_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("PI_HOST_PLUGINS", "")
    monkeypatch.setenv("PI_HOST_FAUX_SCRIPT", str(script))
    monkeypatch.chdir(tmp_path)
    assert gc.isenabled()
    assert main(args) == 0
    # Paused and frozen only while the command ran: a program embedding main() goes on with
    # its objects collectable.
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0
    assert capsys.readouterr().out


# -- default factories pydantic reads without tokenize ------------------------------------------


def _pi_host_models() -> list[type[pydantic.BaseModel]]:
    import pi_host.hookspecs._payloads
    import pi_host.hookspecs._results
    import pi_host.messages._events
    import pi_host.providers._models_json
    import pi_host.providers._types
    import pi_host.resources._settings_models
    import pi_host.session._entries  # noqa: F401 - the modules define the models listed below

    found: list[type[pydantic.BaseModel]] = []
    pending = [pydantic.BaseModel]
    while pending:
        for sub in pending.pop().__subclasses__():
            pending.append(sub)
            if sub.__module__.startswith("pi_host."):
                found.append(sub)
    return found


def test_no_model_field_defaults_through_a_builtin_with_a_text_signature() -> None:
    # pydantic reads each default factory's signature; a builtin's (``list``) is parsed with
    # tokenize, whose first use compiles its regular expressions: use pi_host._factories.
    models = _pi_host_models()
    assert len(models) > 50  # the walk works
    offenders = [
        f"{model.__module__}.{model.__qualname__}.{name}"
        for model in models
        for name, field in model.model_fields.items()
        if getattr(field.default_factory, "__text_signature__", None) is not None
    ]
    assert offenders == []


def test_empty_list_defaults_are_fresh_empty_lists() -> None:
    from pi_host.messages import AssistantMessage

    first, second = AssistantMessage(), AssistantMessage()
    assert first.content == [] and second.content == []
    assert first.content is not second.content
    assert Settings().packages == [] and Settings().packages is not Settings().packages


# -- plugin names and versions read from the METADATA header -----------------------------------


def test_plugin_origins_are_what_the_metadata_parser_reads() -> None:
    import importlib.metadata

    from pi_host.plugin._discovery import ENTRY_POINT_GROUP, _name_and_version

    dists = {id(ep.dist): ep.dist for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}
    assert dists  # the development environment installs plugins
    for dist in dists.values():
        assert dist is not None
        metadata = dist.metadata
        assert _name_and_version(dist.read_text("METADATA")) == (metadata["Name"], metadata["Version"])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Metadata-Version: 2.4\nName: pi-x\nVersion: 1.0\n\nName: body\n", ("pi-x", "1.0")),
        ("Metadata-Version: 2.4\r\nname:  pi-x \r\nVERSION: 2\r\n", ("pi-x", "2")),
        ("Name: pi-x\n", None),  # no version: the parser decides
        ("Name: pi-x\nName: pi-y\nVersion: 1\n", None),  # repeated
        ("Name:\n pi-x\nVersion: 1\n", None),  # folded
        (None, None),  # no METADATA file
    ],
)
def test_metadata_header_fields(text: str | None, expected: tuple[str, str] | None) -> None:
    from pi_host.plugin._discovery import _name_and_version

    assert _name_and_version(text) == expected
