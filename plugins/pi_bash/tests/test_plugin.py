"""pi-bash as a plugin: its entry point, its hooks against the host's specs, its imports."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pi_bash
import pluggy
import pytest

from pi_host import AbortSignal, Settings, Tool, ToolCallContext
from pi_host.hookspecs import Stash, UserBashResult
from pi_host.testing import assert_entry_point, assert_hooks_match_specs, assert_public_imports_only


def test_the_entry_point_names_the_package() -> None:
    assert_entry_point("bash", pi_bash, distribution="pi-bash")


@pytest.fixture
def plugin_manager() -> pluggy.PluginManager:
    return assert_hooks_match_specs(pi_bash, name="bash")


def test_every_hook_implementation_matches_a_spec() -> None:
    hooks = {
        "pi_register_tools",
        "pi_register_tool_renderers",
        "pi_user_bash",
        "pi_session_shutdown",
    }
    assert_hooks_match_specs(pi_bash, hooks, name="bash")


def test_user_bash_is_the_last_resort(plugin_manager: pluggy.PluginManager) -> None:
    (implementation,) = plugin_manager.hook.pi_user_bash.get_hookimpls()
    assert implementation.trylast


def test_registers_the_bash_tool(plugin_manager: pluggy.PluginManager) -> None:
    tools: list[Tool[Any]] = []
    plugin_manager.hook.pi_register_tools(register=tools.append, config=None)
    assert [tool.name for tool in tools] == ["bash"]


async def test_the_user_bash_hook_runs_the_command(tmp_path: Path) -> None:
    chunks: list[str] = []
    result = await pi_bash.pi_user_bash(
        command="echo hi; exit 3",
        exclude_from_context=False,
        cwd=str(tmp_path),
        signal=AbortSignal(),
        on_output=chunks.append,
        ctx=_session_ctx(),
    )
    assert result == UserBashResult(output="hi\n", exit_code=3)
    assert "".join(chunks) == "hi\n"


async def test_the_user_bash_hook_follows_its_signal(tmp_path: Path) -> None:
    signal = AbortSignal()
    signal.abort()
    result = await pi_bash.pi_user_bash(
        command="sleep 100",
        exclude_from_context=True,
        cwd=str(tmp_path),
        signal=signal,
        on_output=None,
        ctx=_session_ctx(),
    )
    assert result.cancelled and result.exit_code is None


async def _leave_background_sleep(tmp_path: Path, ctx: Any) -> int:
    result = await pi_bash.pi_user_bash(
        command="sleep 100 & echo $$",
        exclude_from_context=False,
        cwd=str(tmp_path),
        signal=AbortSignal(),
        on_output=None,
        ctx=ctx,
    )
    return int(result.output)


async def test_shutdown_on_quit_stops_background_processes(tmp_path: Path) -> None:
    ctx = _session_ctx()
    pgid = await _leave_background_sleep(tmp_path, ctx)
    assert pgid in pi_bash.background_process_groups()
    await pi_bash.pi_session_shutdown(reason="reload", ctx=ctx)
    assert pgid in pi_bash.background_process_groups()
    await pi_bash.pi_session_shutdown(reason="quit", ctx=ctx)
    assert pi_bash.background_process_groups() == frozenset()


async def test_quitting_one_session_keeps_the_background_processes_of_another(tmp_path: Path) -> None:
    # Many sessions in one process (issue 21): a session's quit stopped every session's.
    first, second = _session_ctx(), _session_ctx()
    first_group = await _leave_background_sleep(tmp_path, first)
    second_group = await _leave_background_sleep(tmp_path, second)
    await pi_bash.pi_session_shutdown(reason="quit", ctx=first)
    assert pi_bash.background_process_groups() == {second_group}
    assert first_group not in pi_bash.background_process_groups()
    await pi_bash.pi_session_shutdown(reason="quit", ctx=second)
    assert pi_bash.background_process_groups() == frozenset()


async def test_the_tool_files_background_processes_under_its_session(tmp_path: Path) -> None:
    sessions = [_session_ctx(), _session_ctx()]
    (tool,) = _registered_tools()
    groups = []
    for number, session in enumerate(sessions):
        ctx = ToolCallContext(
            tool_call_id=f"call-{number}", signal=AbortSignal(), cwd=str(tmp_path), session=session
        )
        result = await tool.execute(tool.parameters(command="sleep 100 & echo $$"), ctx)
        groups.append(int(result.content[0].text))
    await pi_bash.pi_session_shutdown(reason="quit", ctx=sessions[1])
    assert pi_bash.background_process_groups() == {groups[0]}
    await pi_bash.pi_session_shutdown(reason="quit", ctx=sessions[0])
    assert pi_bash.background_process_groups() == frozenset()


def _session_ctx(**settings: Any) -> Any:
    """What ``pi_user_bash`` reads of a plugin context: the session's stash and settings."""
    return SimpleNamespace(stash=Stash(), settings=Settings.model_validate(settings))


def _registered_tools(settings: dict[str, Any] | None = None) -> list[Tool[Any]]:
    tools: list[Tool[Any]] = []
    config = None if settings is None else SimpleNamespace(settings=settings)
    pi_bash.pi_register_tools(tools.append, config)
    return tools


def test_imports_only_the_public_pi_host_api() -> None:
    assert_public_imports_only(pi_bash)


def test_settings_configure_the_registered_tool() -> None:
    settings = {"shellCommandPrefix": "set -u", "bash": {"defaultTimeout": 7, "background": "kill"}}
    (tool,) = _registered_tools(settings)
    assert "default 7 seconds" in tool.spec().parameters["properties"]["timeout"]["description"]
    # nothing is kept between hosts: another host's registration has its own settings
    (other,) = _registered_tools({})
    assert "default 120 seconds" in other.spec().parameters["properties"]["timeout"]["description"]


def test_malformed_bash_settings_are_ignored() -> None:
    bad = {"shellPath": 3, "bash": {"defaultTimeout": "soon", "background": "maybe"}}
    (tool,) = _registered_tools(bad)
    assert "default 120 seconds" in tool.spec().parameters["properties"]["timeout"]["description"]


async def test_user_bash_runs_in_the_sessions_shell_with_its_prefix(tmp_path: Path) -> None:
    """pi runs ``!cmd`` with ``shellPath`` and ``shellCommandPrefix`` as it runs the tool's."""
    shell = tmp_path / "my-shell"
    # a real shell behind a wrapper that says it ran, so the test sees which shell was used
    shell.write_text('#!/bin/sh\necho "via my-shell"\nexec /bin/sh "$@"\n')
    shell.chmod(0o755)
    ctx = _session_ctx(shellPath=str(shell), shellCommandPrefix="GREETING=prefixed")
    result = await pi_bash.pi_user_bash(
        command='echo "$GREETING"',
        exclude_from_context=False,
        cwd=str(tmp_path),
        signal=AbortSignal(),
        on_output=None,
        ctx=ctx,
    )
    assert result.output == "via my-shell\nprefixed\n"
    assert result.exit_code == 0


@pytest.mark.parametrize("default_timeout", [None, 120.0, 2.5, 7])
def test_written_schema_is_the_generated_one(default_timeout: float | None) -> None:
    # The schema is written out so that no process pays pydantic's schema generation; it must
    # stay exactly what the parameter model generates, key order included.
    tool = pi_bash.create_bash_tool(default_timeout=default_timeout)
    assert tool.parameters_schema is not None
    generated = dataclasses.replace(tool, parameters_schema=None).spec().parameters
    assert json.dumps(tool.spec().parameters) == json.dumps(generated)


def _modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    script = code + "\nimport sys\nprint('\\n'.join(sys.modules))"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return set(result.stdout.split())


def test_loading_the_plugin_imports_no_process_runner() -> None:
    modules = _modules_after(
        "import pi_bash\n"
        "from pi_host.plugin import PluginManager\n"
        "manager = PluginManager()\n"
        "manager.register(pi_bash, name='bash')\n"
        "tools = []\n"
        "manager.hook.pi_register_tools(register=tools.append, config=None)\n"
        "manager.hook.pi_register_tool_renderers(register=tools.append, config=None)\n"
        "specs = [tool.spec() for tool in tools[:1]]\n"
    )
    own = sorted(name for name in modules if name.startswith("pi_bash"))
    assert "pi_bash._tool" in own  # the tools were described
    # The process runner loads on the first call. A budget, not a list: three modules of
    # seven when it was set (the package, its limits and the tool's definition).
    assert "subprocess" not in modules
    assert len(own) <= 4, own
    assert "rich" not in modules  # the renderer's module comes with the first call drawn


def test_importing_the_entry_point_stays_light() -> None:
    # --help imports plugin modules only to read their flags.
    modules = _modules_after("import pi_bash")
    assert {name for name in modules if name.startswith("pi_bash")} == {"pi_bash"}
    assert "pi_host.runtime" not in modules
    assert "pi_host.agent" not in modules
