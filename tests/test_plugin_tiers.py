"""Plugin tiers, name conflicts, ``-e PATH`` and contained BaseExceptions, with really installed packages.

The packages in ``tests/tier_packages/`` are built and installed (offline) into a temporary
``--target`` directory put on ``sys.path`` (and on ``PYTHONPATH`` for the ``pi-host``
subprocesses): ``aaa_read`` and ``zzz_read`` both offer a ``read`` tool and a ``/review``
command, named to sort before and after ``tools_fs``; ``exits`` calls ``sys.exit(3)`` at import.
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

from pi_host import ToolCallContext
from pi_host.errors import UsageError
from pi_host.hookspecs import hookimpl
from pi_host.plugin import PluginControls, PluginManager
from pi_host.providers import AbortSignal
from pi_host.runtime import Host
from tests.wheelhouse import offline_uv_args

PACKAGES = Path(__file__).parent / "tier_packages"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    uv = shutil.which("uv") or os.environ.get("UV")  # uv run names itself; a bootstrapped uv is off PATH
    if uv is None:
        pytest.fail("uv is needed to install the fixture plugin packages (pip install uv)")
    root = tmp_path_factory.mktemp("tier-site")
    sources = root / "src"
    shutil.copytree(PACKAGES, sources)
    target = root / "site-packages"
    subprocess.run(
        [uv, "pip", "install", *offline_uv_args(root / "wheels"), "--quiet", "--python", sys.executable]
        + ["--target", str(target)]
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


def load(*names: str, **kwargs: Any) -> Host:
    return Host.load(controls=PluginControls(allow=frozenset(names)), **kwargs)


async def read_with(host: Host) -> str:
    tool = host.tools["read"]
    ctx = ToolCallContext(tool_call_id="t1", signal=AbortSignal())
    result = await tool.execute(tool.validate_arguments({"path": "a.txt"}), ctx)
    return "".join(getattr(block, "text", "") for block in result.content)


def config(settings: dict[str, Any]) -> Any:
    return types.SimpleNamespace(settings=settings, cwd=os.getcwd(), flags={}, get_flag=lambda name: None)


@pytest.mark.parametrize("name", ["aaa_read", "zzz_read"])
async def test_an_installed_plugin_replaces_a_default_tool_whatever_its_name(site: Path, name: str) -> None:
    host = load("tools_fs", name)
    assert host.plugin_manager.tier("tools_fs") == "default"
    assert host.plugin_manager.tier(name) == "installed"
    assert host.tool_sources["read"] == name
    assert await read_with(host) == f"{name} read a.txt"
    (conflict,) = [c for c in host.conflicts if c.kind == "tool"]
    assert (conflict.name, conflict.winner, conflict.plugins, conflict.decided_by) == (
        "read",
        name,
        (name, "tools_fs"),
        "tier",
    )


async def test_a_conflict_in_one_tier_is_reported_and_the_setting_chooses(
    site: Path, caplog: pytest.LogCaptureFixture
) -> None:
    host = load("tools_fs", "aaa_read", "zzz_read")
    with caplog.at_level(logging.WARNING, logger="pi_host.plugin"):
        host.configure(config({}))
    # Same tier: the later name registers later and is called first.
    assert host.tool_sources["read"] == "zzz_read"
    warnings = [record.getMessage() for record in caplog.records if "is offered by" in record.getMessage()]
    assert warnings == [
        'tool "read" is offered by plugins zzz_read, aaa_read, tools_fs; "zzz_read" wins (same tier; the '
        'later name is called first) over aaa_read, tools_fs. Choose with "plugins.prefer.tools.read": '
        '"<plugin>" in settings.json',
        'command "review" is offered by plugins zzz_read, aaa_read; "zzz_read" wins (same tier; the later '
        'name is called first) over aaa_read. Choose with "plugins.prefer.commands.review": "<plugin>" in '
        "settings.json",
    ]
    # pi's rule for commands still holds: the loser stays reachable with a suffix.
    assert host.commands["review"].description == "Review (zzz)"
    assert host.commands["review:1"].description == "Review (aaa)"

    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="pi_host.plugin"):
        host.configure(config({"plugins": {"prefer": {"tools": {"read": "aaa_read"}}}}))
    assert host.tool_sources["read"] == "aaa_read"
    assert await read_with(host) == "aaa_read read a.txt"
    tool_conflict = next(c for c in host.conflicts if c.kind == "tool")
    assert tool_conflict.decided_by == "setting"
    assert tool_conflict.plugins == ("aaa_read", "zzz_read", "tools_fs")
    # The user chose the tool; the command was warned about already: no new warning.
    assert not [record for record in caplog.records if "is offered by" in record.getMessage()]
    listed = {info.name: info for info in host.plugin_manager.list_plugins()}
    assert [c.name for c in listed["aaa_read"].conflicts] == ["read", "review"]
    assert [c.name for c in listed["tools_fs"].conflicts] == ["read"]


def run_cli(
    site: Path, tmp_path: Path, *args: str, plugins: str, **env: str
) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("PI_HOST", "ANTHROPIC_", "OPENAI_"))}
    environ.update(
        HOME=str(tmp_path),
        PI_HOST_DIR=str(tmp_path / "agent"),
        PI_HOST_PLUGINS=plugins,
        PYTHONPATH=os.pathsep.join([str(site), environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        NO_COLOR="1",
        **env,
    )
    return subprocess.run(
        [sys.executable, "-c", _MAIN, *args],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


_MAIN = "import sys; from pi_host.modes._cli import main; sys.exit(main(sys.argv[1:]))"


def test_plugins_list_shows_tiers_conflicts_and_survives_sys_exit_at_import(
    site: Path, tmp_path: Path
) -> None:
    result = run_cli(site, tmp_path, "plugins", "list", "--json", plugins="tools_fs,aaa_read,zzz_read,exits")
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert (rows["tools_fs"]["tier"], rows["aaa_read"]["tier"]) == ("default", "installed")
    assert rows["exits"]["status"] == "failed" and rows["exits"]["error"] == "SystemExit: 3"
    assert [(c["kind"], c["name"], c["winner"]) for c in rows["aaa_read"]["conflicts"]] == [
        ("tool", "read", "zzz_read"),
        ("command", "review", "zzz_read"),
    ]
    assert 'plugin "exits" (pi-fixture-exits 0.1.0) failed to load: SystemExit: 3' in result.stderr
    text = run_cli(site, tmp_path, "plugins", "list", plugins="tools_fs,aaa_read")
    assert "aaa_read (pi-fixture-aaa-read 0.1.0) [installed, enabled]" in text.stdout
    assert '    conflict: tool "read" is offered by plugins aaa_read, tools_fs' in text.stdout


def test_a_misspelt_plugin_to_disable_is_named_with_the_known_ones(site: Path, tmp_path: Path) -> None:
    result = run_cli(
        site, tmp_path, "plugins", "list", plugins="tools_fs,aaa_read", PI_HOST_DISABLE_PLUGINS="aaa_raed"
    )
    assert result.returncode == 0, result.stderr
    expected = 'cannot disable plugin "aaa_raed": no plugin has that name (did you mean "aaa_read"?)'
    assert f"{expected}; known plugins: " in result.stderr
    assert "tools_fs" in result.stderr.split("known plugins: ", 1)[1]


EXTENSION = """\
import os

from pydantic import BaseModel

from pi_host import Tool, ToolResult, hookimpl


class ReadParams(BaseModel):
    path: str


async def read(params, ctx):
    return ToolResult.text("extension read " + params.path)


@hookimpl
def pi_register_tools(register):
    register(Tool(name="read", description="Read (extension)", parameters=ReadParams, execute=read))


@hookimpl
def pi_agent_end(messages, ctx):
    with open(os.environ["EXTENSION_MARKER"], "w") as marker:
        marker.write(messages[-1].content[0].text)
"""


async def test_an_extension_file_wins_for_one_run_and_installs_nothing(site: Path, tmp_path: Path) -> None:
    plugin = tmp_path / "my_ext.py"
    plugin.write_text(EXTENSION, encoding="utf-8")
    host = load("tools_fs", "zzz_read", extensions=[str(plugin)])
    assert host.plugin_manager.tier("my_ext") == "extension"
    assert host.tool_sources["read"] == "my_ext"
    assert await read_with(host) == "extension read a.txt"

    script = tmp_path / "faux.json"
    script.write_text(json.dumps([{"text": "Hello offline"}]), encoding="utf-8")
    marker = tmp_path / "marker.txt"
    env = {"PI_HOST_FAUX_SCRIPT": str(script), "EXTENSION_MARKER": str(marker)}
    result = run_cli(
        site, tmp_path, "-e", str(plugin), "--provider", "faux", "-p", "hi", plugins="tools_fs", **env
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Hello offline" and marker.read_text() == "Hello offline"
    listed = run_cli(site, tmp_path, "plugins", "list", "--json", plugins="tools_fs")
    assert "my_ext" not in {row["name"] for row in json.loads(listed.stdout)}
    with_e = run_cli(site, tmp_path, "plugins", "list", "--json", "-e", str(plugin), plugins="tools_fs")
    row = next(row for row in json.loads(with_e.stdout) if row["name"] == "my_ext")
    assert (row["tier"], row["source"], row["distribution"]) == ("extension", "extension", str(plugin))


def test_an_extension_package_folder_and_project_folder_load(tmp_path: Path) -> None:
    package = tmp_path / "pkg_ext"
    package.mkdir()
    (package / "__init__.py").write_text("from ._hooks import pi_agent_start\n", encoding="utf-8")
    (package / "_hooks.py").write_text(
        "from pi_host import hookimpl\n\n@hookimpl\ndef pi_agent_start(ctx):\n    pass\n", encoding="utf-8"
    )
    hello = Path(__file__).parents[1] / "examples" / "pi-hello"
    host = Host.load(controls=PluginControls(allow=frozenset()), extensions=[str(package), str(hello)])
    tiers = {info.name: info.tier for info in host.plugin_manager.list_plugins()}
    assert tiers["pkg_ext"] == "extension" and tiers["hello"] == "extension"


@pytest.mark.parametrize(
    ("content", "name", "message"),
    [
        (None, "missing.py", "-e {path}: no such file or folder"),
        (
            "x = 1\n",
            "plain.py",
            "-e {path}: {path} is not a pi-host plugin: it defines no @hookimpl functions",
        ),
        ("", "notes.txt", "-e {path}: not a plugin: give a .py file, a package folder or a project folder"),
    ],
)
def test_a_path_that_is_not_a_plugin_is_one_clear_error(
    tmp_path: Path, content: str | None, name: str, message: str
) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(UsageError) as caught:
        Host.load(controls=PluginControls(allow=frozenset()), extensions=[str(path)])
    assert str(caught.value) == message.format(path=path)
    result = subprocess.run(
        [sys.executable, "-c", _MAIN, "-e", str(path), "-p", "hi"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2 and result.stderr == f"Error: {message.format(path=path)}\n"


def test_an_extension_comes_before_project_plugins_though_it_registers_first() -> None:
    pm = PluginManager()
    order = []

    def plugin(label: str) -> object:
        @hookimpl
        def pi_agent_start(ctx: Any) -> None:
            order.append(label)

        return types.SimpleNamespace(pi_agent_start=pi_agent_start)

    pm.record("ext", "extension", "enabled")
    pm.register(plugin("ext"), name="ext")
    pm.record("local", "local", "enabled")
    pm.register(plugin("local"), name="local")
    pm.record("installed", "entrypoint", "enabled", distribution="someone-else")
    pm.register(plugin("installed"), name="installed")
    assert [impl.plugin_name for impl in pm.call_order(pm.hook.pi_agent_start)] == [
        "ext",
        "local",
        "installed",
    ]


def test_a_plugin_whose_registration_fails_is_unloaded_with_what_it_registered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from pydantic import BaseModel

    from pi_host import Tool, ToolResult

    class Params(BaseModel):
        pass

    async def run(params: Params, ctx: Any) -> ToolResult:
        return ToolResult.text("ok")

    calls = []

    class Broken:
        @hookimpl
        def pi_register_tools(self, register: Any) -> None:
            register(
                Tool(name="half", description="registered before the raise", parameters=Params, execute=run)
            )
            raise RuntimeError("cannot build my tools")

        @hookimpl
        def pi_agent_start(self, ctx: Any) -> None:
            calls.append("broken")

    class WrongType:
        @hookimpl
        def pi_register_commands(self, register: Any) -> None:
            register("not a command")

    with caplog.at_level(logging.WARNING, logger="pi_host.plugin"):
        host = Host.load(controls=PluginControls(allow=frozenset()), extra_plugins=[Broken(), WrongType()])
    names = {error.name for error in host.load_errors}
    assert len(names) == 2 and "half" not in host.tools
    broken = next(error for error in host.load_errors if "cannot build" in str(error))
    assert str(broken).endswith(
        "failed to load: RuntimeError: cannot build my tools. Disable it with "
        f"PI_HOST_DISABLE_PLUGINS={broken.name}"
    )
    assert host.plugin_manager.get_plugin(broken.name) is None
    assert not host.dispatcher.has_implementations("pi_agent_start")
    wrong = next(error for error in host.load_errors if error is not broken)
    assert "registered 'not a command' as a command, which is not a pi_host.hookspecs.Command" in str(wrong)
    listed = {info.name: info.status for info in host.plugin_manager.list_plugins()}
    assert listed[broken.name] == listed[wrong.name] == "failed"


def test_a_historic_replay_goes_through_the_same_loop_and_fails_the_registration() -> None:
    pm = PluginManager()
    seen = []

    class Late:
        @hookimpl
        def pi_configure(self, config: Any) -> None:
            seen.append(config)

    class Exits:
        @hookimpl
        def pi_configure(self, config: Any) -> None:
            raise SystemExit(4)

    assert pm.call_setup("pi_configure", config="cfg") == []
    pm.register(Late(), name="late")
    assert seen == ["cfg"]
    with pytest.raises(SystemExit):
        pm.register(Exits(), name="exits")
    assert pm.get_plugin("exits") is None


def test_sys_exit_in_a_setup_hook_fails_only_that_plugin() -> None:
    pm = PluginManager()

    class Exits:
        @hookimpl
        def pi_configure(self, config: Any) -> None:
            sys.exit(5)

    pm.register(Exits(), name="exits")
    (error,) = pm.call_setup("pi_configure", config="cfg")
    assert str(error).startswith('plugin "exits" failed to load: SystemExit: 5')
    assert pm.get_plugin("exits") is None


def test_local_plugin_sys_exit_at_import_is_contained(tmp_path: Path) -> None:
    from pi_host.plugin import load_local_plugins

    (tmp_path / ".pi" / "plugins").mkdir(parents=True)
    (tmp_path / ".pi" / "plugins" / "quits.py").write_text(
        textwrap.dedent("raise KeyboardInterrupt('plugin said stop')\n"), encoding="utf-8"
    )
    pm = PluginManager()
    (error,) = load_local_plugins(pm, tmp_path, trusted=True)
    assert "KeyboardInterrupt: plugin said stop" in str(error)


def test_the_default_tier_is_what_the_default_extra_installs() -> None:
    """Which plugins are default is packaging (``pi-host[default]`` in pyproject.toml), read
    from pi-host's metadata: core names no first-party plugin."""
    import re
    import tomllib

    from pi_host.plugin._manager import default_distributions, tier_of_source

    pyproject = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    extra = pyproject["project"]["optional-dependencies"]["default"]
    assert default_distributions() == {re.match(r"[A-Za-z0-9._-]+", r).group(0) for r in extra}  # type: ignore[union-attr]
    assert tier_of_source("entrypoint", "bash", "pi-bash") == "default"
    assert tier_of_source("entrypoint", "shell", "Pi_Bash") == "default"  # any entry-point name
    assert tier_of_source("entrypoint", "bash", "someones-bash") == "installed"
    assert tier_of_source("entrypoint", "bash", None) == "installed"
