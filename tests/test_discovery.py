"""Plugin discovery and loading, with real plugin packages installed by pip (uv pip).

The packages in ``tests/plugin_packages/`` are built and installed once per test module into a
temporary ``--target`` directory that is put on ``sys.path``: one plugin that loads, one that
raises on import, one with a misspelt hook, and one the tests disable (importing it would
leave a marker file next to it).
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import shutil
import subprocess
import sys
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import stevedore

import pi_host
from pi_host.errors import PluginLoadError, UsageError
from pi_host.hookspecs import Command, ToolCallBlock, hookimpl
from pi_host.plugin import (
    Dispatcher,
    PluginControls,
    PluginInfo,
    PluginManager,
    installed_plugins,
    load_entrypoint_plugins,
    load_local_plugins,
    load_plugins,
    parse_plugin_names,
)

PACKAGES = Path(__file__).parent / "plugin_packages"
FIXTURES = {"good", "broken", "typo", "denied"}
BROKEN_LINE = (
    'plugin "broken" (pi-fixture-broken 0.1.0) failed to load: ModuleNotFoundError: '
    "No module named 'pi_fixture_missing_dependency'. Disable it with PI_HOST_DISABLE_PLUGINS=broken"
)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The fixture packages, really built and installed (offline) into a directory on sys.path."""
    uv = shutil.which("uv") or os.environ.get("UV")  # uv run names itself; a bootstrapped uv is off PATH
    if uv is None:
        pytest.fail("uv is needed to install the fixture plugin packages (pip install uv)")
    root = tmp_path_factory.mktemp("plugin-site")
    sources = root / "src"
    shutil.copytree(PACKAGES, sources)  # build from a copy: the source tree stays clean
    target = root / "site-packages"
    subprocess.run(
        [uv, "pip", "install", "--offline", "--quiet", "--python", sys.executable, "--target", str(target)]
        + [str(path) for path in sorted(sources.iterdir())],
        check=True,
        capture_output=True,
    )
    sys.path.insert(0, str(target))
    importlib.invalidate_caches()
    stevedore.ExtensionManager.ENTRY_POINT_CACHE.clear()
    try:
        yield target
    finally:
        sys.path.remove(str(target))
        for name in [name for name in sys.modules if name.startswith("pi_fixture_")]:
            del sys.modules[name]
        importlib.invalidate_caches()


def fixtures_only(**overrides: Any) -> PluginControls:
    """Controls that load only the fixture packages, whatever else is installed in the venv."""
    return PluginControls(
        allow=frozenset(overrides.get("allow", FIXTURES)), disabled=frozenset(overrides.get("disabled", ()))
    )


def by_name(pm: PluginManager) -> dict[str, PluginInfo]:
    return {info.name: info for info in pm.list_plugins()}


def test_the_packages_are_installed_with_metadata(site: Path) -> None:
    found = {plugin.name: plugin for plugin in installed_plugins() if plugin.name in FIXTURES}
    assert set(found) == FIXTURES
    assert (found["good"].distribution, found["good"].version, found["good"].value) == (
        "pi-fixture-good",
        "1.2.3",
        "pi_fixture_good",
    )
    assert "pi_fixture_good" not in sys.modules, "listing imports nothing"


def test_a_broken_plugin_is_reported_in_one_line_and_the_rest_still_load(
    site: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pm = PluginManager()
    with caplog.at_level(logging.WARNING, logger="pi_host.plugin"):
        errors = load_plugins(pm, controls=fixtures_only(disabled={"denied"}))
    assert [str(error) for error in errors] == [
        BROKEN_LINE,
        'plugin "typo" (pi-fixture-typo 0.1.0) failed to load: PluginValidationError: unknown hook '
        '"pi_tool_cal" (did you mean "pi_tool_call"?); if it belongs to another plugin\'s hookspecs, '
        "mark it @hookimpl(optionalhook=True). Disable it with PI_HOST_DISABLE_PLUGINS=typo",
    ]
    assert caplog.messages == [str(error) for error in errors]
    assert all(isinstance(error, PluginLoadError) for error in errors)
    assert [name for name, plugin in pm.list_name_plugin() if plugin is not None] == ["good"]


def test_the_listing_shows_every_plugin_with_origin_status_and_hooks(site: Path) -> None:
    pm = PluginManager()
    load_plugins(pm, controls=fixtures_only(disabled={"denied"}))
    infos = by_name(pm)
    assert infos["good"] == PluginInfo(
        name="good",
        distribution="pi-fixture-good",
        version="1.2.3",
        source="entrypoint",
        tier="installed",
        status="enabled",
        hooks=("pi_agent_start", "pi_register_commands", "pi_tool_call"),
    )
    assert infos["broken"].status == "failed"
    assert infos["broken"].error == "ModuleNotFoundError: No module named 'pi_fixture_missing_dependency'"
    assert infos["typo"].status == "failed" and infos["typo"].hooks == ()
    assert infos["denied"] == PluginInfo(
        name="denied",
        distribution="pi-fixture-denied",
        version="0.1.0",
        source="entrypoint",
        tier="installed",
        status="disabled",
        error="disabled",
    )
    json.loads(json.dumps([info.model_dump(mode="json") for info in pm.list_plugins()]))


def test_a_disabled_plugin_is_never_imported(site: Path) -> None:
    pm = PluginManager()
    load_plugins(pm, controls=fixtures_only(), disabled=["denied"])  # as from --no-plugin denied
    assert "pi_fixture_denied" not in sys.modules
    assert not (site / "pi_fixture_denied" / "IMPORTED").exists()
    assert pm.is_blocked("denied")


def test_the_misspelt_hook_plugin_is_unregistered_entirely(site: Path) -> None:
    pm = PluginManager()
    load_plugins(pm, controls=fixtures_only(allow={"typo"}))
    assert pm.get_plugin("typo") is None
    assert pm.hook.pi_agent_start.get_hookimpls() == []


async def test_a_loaded_plugin_takes_part_in_dispatch_and_registration(site: Path) -> None:
    pm = PluginManager()
    load_plugins(pm, controls=fixtures_only(allow={"good"}))
    commands: list[Command] = []
    assert pm.call_setup("pi_register_commands", register=commands.append) == []
    assert [command.name for command in commands] == ["hello"]
    dispatcher = Dispatcher(pm, trace=False)
    ctx: Any = types.SimpleNamespace()
    blocked = await dispatcher.tool_call(
        tool_call_id="1", tool_name="bash", input={"command": "rm -rf /"}, ctx=ctx
    )
    assert blocked == ToolCallBlock(reason="pi-fixture-good refuses rm -rf")
    await commands[0].handler("world", ctx)
    await dispatcher.call("pi_agent_start", ctx=ctx)
    assert sys.modules["pi_fixture_good"].calls[-2:] == ["/hello world", "agent_start"]


def test_safe_mode_loads_no_installed_plugin(site: Path) -> None:
    pm = PluginManager()
    assert load_plugins(pm, controls=PluginControls(allow=frozenset())) == []
    assert PluginControls(allow=frozenset()).safe_mode
    assert {info.status for info in pm.list_plugins()} == {"disabled"}
    assert all(info.error == "not in the PI_HOST_PLUGINS allow-list" for info in pm.list_plugins())


def test_controls_come_from_the_environment_and_the_command_line() -> None:
    controls = PluginControls.from_environ(
        {"PI_HOST_PLUGINS": "good, typo,", "PI_HOST_DISABLE_PLUGINS": "typo"}, disabled=["bash"]
    )
    assert controls == PluginControls(allow=frozenset({"good", "typo"}), disabled=frozenset({"typo", "bash"}))
    assert PluginControls.from_environ({}).allow is None
    assert PluginControls.from_environ({"PI_HOST_PLUGINS": ""}).safe_mode
    assert parse_plugin_names(" a ,, b ") == ["a", "b"]


def test_a_name_in_the_allow_list_that_is_not_installed_is_warned_about(
    site: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="pi_host.plugin"):
        load_plugins(PluginManager(), controls=fixtures_only(allow={"good", "gone"}))
    assert caplog.messages == ['plugin "gone" is named in PI_HOST_PLUGINS but is not installed']


# -- the host process, end to end -----------------------------------------------------------------

_HOST = textwrap.dedent(
    """
    import json, sys
    from pi_host.plugin import PluginManager, load_plugins
    pm = PluginManager()
    load_plugins(pm)
    names = ("good", "broken", "typo", "denied")
    fixtures = [i.model_dump(mode="json") for i in pm.list_plugins() if i.name in names]
    imported = sorted(m for m in sys.modules if m.startswith("pi_fixture_"))
    print(json.dumps({"plugins": fixtures, "imported": imported}))
    """
)


def run_host(site: Path, **env: str) -> tuple[dict[str, Any], str]:
    environ = {key: value for key, value in os.environ.items() if not key.startswith("PI_HOST_")}
    environ["PYTHONPATH"] = os.pathsep.join([str(site), environ.get("PYTHONPATH", "")])
    environ.update(env)
    done = subprocess.run(
        [sys.executable, "-c", _HOST], env=environ, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout), done.stderr


def test_the_host_starts_despite_a_broken_plugin_and_says_so_once_on_stderr(site: Path) -> None:
    out, err = run_host(site, PI_HOST_PLUGINS="good,broken,denied", PI_HOST_DISABLE_PLUGINS="denied")
    assert err.splitlines() == [BROKEN_LINE]
    status = {info["name"]: info["status"] for info in out["plugins"]}
    assert status == {"good": "enabled", "broken": "failed", "denied": "disabled", "typo": "disabled"}
    assert out["imported"] == ["pi_fixture_good"]
    assert not (site / "pi_fixture_denied" / "IMPORTED").exists()


def test_safe_mode_from_the_environment(site: Path) -> None:
    out, err = run_host(site, PI_HOST_PLUGINS="")
    assert err == ""
    assert out["imported"] == []


def test_without_controls_every_installed_plugin_is_tried(site: Path) -> None:
    out, err = run_host(site)
    assert BROKEN_LINE in err.splitlines()
    assert (site / "pi_fixture_denied" / "IMPORTED").exists()  # nothing disabled it this time
    (site / "pi_fixture_denied" / "IMPORTED").unlink()
    assert {info["name"]: info["status"] for info in out["plugins"]} == {
        "good": "enabled",
        "broken": "failed",
        "typo": "failed",
        "denied": "enabled",
    }


# -- essentials -----------------------------------------------------------------------------------


@pytest.fixture
def essential(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "pi_essential_demo.py").write_text(
        "from pi_host import hookimpl\n\n@hookimpl\ndef pi_agent_start():\n    pass\n"
    )
    (tmp_path / "pi_essential_broken.py").write_text("raise RuntimeError('corrupt install')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "pi_essential_demo"
    for name in ("pi_essential_demo", "pi_essential_broken"):
        sys.modules.pop(name, None)


def test_essentials_load_by_module_path_even_in_safe_mode(essential: str) -> None:
    pm = PluginManager()
    load_plugins(pm, controls=PluginControls(allow=frozenset()), essentials=[essential])
    assert by_name(pm)[essential] == PluginInfo(
        name=essential,
        distribution="pi-host",
        version=pi_host.__version__,
        source="essential",
        tier="essential",
        status="enabled",
        hooks=("pi_agent_start",),
    )


def test_an_essential_cannot_be_disabled(essential: str) -> None:
    with pytest.raises(UsageError) as info:
        load_plugins(
            PluginManager(), controls=PluginControls(disabled=frozenset({essential})), essentials=[essential]
        )
    assert str(info.value) == f"plugin '{essential}' is essential and cannot be disabled"


def test_a_broken_essential_stops_the_host(essential: str) -> None:
    with pytest.raises(PluginLoadError, match=r"pi_essential_broken.*RuntimeError: corrupt install"):
        load_plugins(
            PluginManager(), controls=PluginControls(allow=frozenset()), essentials=["pi_essential_broken"]
        )


def test_an_entry_point_cannot_take_an_essentials_name(essential: str, site: Path) -> None:
    pm = PluginManager()
    pm.register_essentials([essential])
    pm.register(types.SimpleNamespace(), name="good")  # something else already holds "good"
    errors = load_plugins(pm, controls=fixtures_only(allow={"good"}), essentials=[])
    assert [str(error) for error in errors] == [
        'plugin "good" (pi-fixture-good 1.2.3) failed to load: ValueError: the name "good" is already taken '
        "by another plugin. Disable it with PI_HOST_DISABLE_PLUGINS=good"
    ]
    assert "pi_fixture_good" not in sys.modules or pm.get_plugin("good") is not sys.modules["pi_fixture_good"]


# -- project-local plugins -------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    plugins = tmp_path / ".pi" / "plugins"
    plugins.mkdir(parents=True)
    (plugins / "guard.py").write_text(
        textwrap.dedent(
            """
            from pathlib import Path
            from pi_host import hookimpl
            from pi_host.hookspecs import ToolCallBlock

            Path(__file__).with_name("guard.imported").touch()

            @hookimpl
            def pi_tool_call(tool_name):
                return ToolCallBlock(reason="local guard") if tool_name == "write" else None
            """
        )
    )
    (plugins / "crash.py").write_text("raise ImportError('cannot import name x')\n")
    (plugins / "_helpers.py").write_text("raise AssertionError('helpers are not plugins')\n")
    yield tmp_path
    for name in [name for name in sys.modules if name.startswith("pi_host_local_plugin_")]:
        del sys.modules[name]


def test_local_plugins_of_an_untrusted_project_are_not_imported(project: Path) -> None:
    pm = PluginManager()
    assert load_local_plugins(pm, project, trusted=False) == []
    assert not (project / ".pi" / "plugins" / "guard.imported").exists()
    infos = by_name(pm)
    assert {infos["guard"].status, infos["crash"].status} == {"disabled"}
    assert infos["guard"].error == "project not trusted"
    assert "_helpers" not in infos


async def test_local_plugins_of_a_trusted_project_load_with_failures_isolated(project: Path) -> None:
    pm = PluginManager()
    errors = load_local_plugins(pm, project, trusted=True)
    crash = project / ".pi" / "plugins" / "crash.py"
    assert [str(error) for error in errors] == [
        f'plugin "crash" ({crash}) failed to load: ImportError: cannot import name x. '
        "Disable it with PI_HOST_DISABLE_PLUGINS=crash"
    ]
    infos = by_name(pm)
    assert infos["guard"].source == "local" and infos["guard"].status == "enabled"
    assert infos["guard"].hooks == ("pi_tool_call",)
    assert infos["crash"].status == "failed"
    result = await Dispatcher(pm, trace=False).tool_call(
        tool_call_id="1", tool_name="write", input={}, ctx=None
    )  # type: ignore[arg-type]
    assert result == ToolCallBlock(reason="local guard")


def test_local_plugins_obey_the_controls(project: Path) -> None:
    pm = PluginManager()
    assert load_local_plugins(pm, project, trusted=True, disabled={"crash"}, allow={"crash"}) == []
    assert {info.name: info.error for info in pm.list_plugins()} == {
        "crash": "disabled",
        "guard": "not in the PI_HOST_PLUGINS allow-list",
    }


# -- the manager's setup calls and hook-name checks --------------------------------------------------


def test_a_failing_registration_hook_fails_only_its_plugin(caplog: pytest.LogCaptureFixture) -> None:
    @hookimpl
    def good_tools(register: Any) -> None:
        register("read")

    @hookimpl
    def bad_tools(register: Any) -> None:
        register("half")
        raise TypeError("Tool() missing 1 required argument: 'execute'")

    pm = PluginManager()
    pm.register(types.SimpleNamespace(pi_register_tools=good_tools), name="good_tools")
    pm.register(types.SimpleNamespace(pi_register_tools=bad_tools), name="bad_tools")
    registered: list[str] = []
    with caplog.at_level(logging.WARNING, logger="pi_host.plugin"):
        errors = pm.call_setup("pi_register_tools", register=registered.append)
    assert registered == ["half", "read"]
    assert [str(error) for error in errors] == [
        "plugin \"bad_tools\" failed to load: TypeError: Tool() missing 1 required argument: 'execute'. "
        "Disable it with PI_HOST_DISABLE_PLUGINS=bad_tools"
    ]
    assert pm.get_plugin("bad_tools") is None
    assert (by_name(pm)["bad_tools"].source, by_name(pm)["bad_tools"].status) == ("direct", "failed")
    assert caplog.messages == [str(errors[0])]


def test_configure_is_historic_and_called_once_per_plugin() -> None:
    seen: list[tuple[str, object]] = []

    def configure_as(label: str) -> Any:
        @hookimpl
        def pi_configure(config: object) -> None:
            seen.append((label, config))

        return pi_configure

    pm = PluginManager()
    pm.register(types.SimpleNamespace(pi_configure=configure_as("early")), name="early")
    config = object()
    assert pm.call_setup("pi_configure", config=config) == []
    pm.register(types.SimpleNamespace(pi_configure=configure_as("late")), name="late")
    assert seen == [("early", config), ("late", config)]


def test_setup_calls_refuse_lifecycle_hooks() -> None:
    from pi_host.errors import HookError

    with pytest.raises(HookError, match="not a synchronous setup hook"):
        PluginManager().call_setup("pi_agent_start", ctx=None)


def test_check_pending_names_the_closest_hook_or_says_there_is_none() -> None:
    @hookimpl
    def pi_befor_agent_start() -> None: ...

    @hookimpl
    def pi_frobnicate() -> None: ...

    @hookimpl(optionalhook=True)
    def pi_someone_elses_hook() -> None: ...

    pm = PluginManager()
    pm.register(types.SimpleNamespace(pi_befor_agent_start=pi_befor_agent_start), name="typo")
    pm.register(types.SimpleNamespace(pi_frobnicate=pi_frobnicate), name="made_up")
    pm.register(types.SimpleNamespace(pi_someone_elses_hook=pi_someone_elses_hook), name="optional")
    pm.check_pending()  # reports instead of raising
    assert {info.name: info.error for info in pm.list_plugins() if info.status == "failed"} == {
        "typo": 'PluginValidationError: unknown hook "pi_befor_agent_start" (did you mean '
        '"pi_before_agent_start"?); if it belongs to another plugin\'s hookspecs, mark it '
        "@hookimpl(optionalhook=True)",
        "made_up": 'PluginValidationError: unknown hook "pi_frobnicate" (pi-host has no such hook); if it '
        "belongs to another plugin's hookspecs, mark it @hookimpl(optionalhook=True)",
    }
    assert pm.get_plugin("optional") is not None
    assert pm.check_pending_plugins() == []  # each problem is reported once


def test_an_assertion_failing_at_import_is_isolated_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # stevedore re-raises AssertionError from its isolation; pi-host must not let it through.
    group = "pi_host.tests_assert"
    (tmp_path / "pi_fixture_asserting.py").write_text("assert False, 'not configured'\n")
    (tmp_path / "pi_fixture_fine.py").write_text("")
    dist_info = tmp_path / "pi_fixture_asserting-0.2.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: pi-fixture-asserting\nVersion: 0.2.0\n")
    (dist_info / "entry_points.txt").write_text(
        f"[{group}]\nasserting = pi_fixture_asserting\nfine = pi_fixture_fine\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    pm = PluginManager()
    errors = load_entrypoint_plugins(pm, group=group)
    assert [str(error) for error in errors] == [
        'plugin "asserting" (pi-fixture-asserting 0.2.0) failed to load: AssertionError: not configured. '
        "Disable it with PI_HOST_DISABLE_PLUGINS=asserting"
    ]
    assert pm.get_plugin("fine") is not None
    sys.modules.pop("pi_fixture_fine", None)


async def test_setup_and_lifecycle_hooks_fold_results_through_the_same_reducer_step() -> None:
    # Regression (#14): the setup loop ignored what an implementation returned, the lifecycle
    # loop held it to the spec. One loop now: a setup hook's wrong result is that plugin's
    # failure (its spec: "fails to load"), with the words a lifecycle hook reports it in.
    from pi_host.plugin import Dispatcher

    @hookimpl
    def pi_configure(config: object) -> int:
        return 42

    @hookimpl
    def pi_agent_start() -> int:
        return 42

    pm = PluginManager()
    pm.register(types.SimpleNamespace(pi_configure=pi_configure), name="chatty")
    pm.register(types.SimpleNamespace(pi_agent_start=pi_agent_start), name="talker")
    reported: list[Any] = []
    await Dispatcher(pm, on_error=reported.append, trace=False).call("pi_agent_start", ctx=None)
    (error,) = pm.call_setup("pi_configure", config=object())
    assert pm.get_plugin("chatty") is None
    assert str(error.reason) == "HookError: " + reported[0].message.replace("pi_agent_start", "pi_configure")
    assert reported[0].message == (
        "pi_agent_start is a notification and ignores results; return None instead of int"
    )
