"""pi-bash: the ``bash`` tool and user ``!cmd`` execution for pi-host.

Every command runs in its own process group with a default timeout (120 s, configurable,
overridable per call); timeout and abort stop the whole group (SIGTERM, then SIGKILL); a
background process that keeps the output pipe open cannot hold a call open. Names,
parameters, limits and texts are pi's, so models tuned on pi behave the same.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pi_host import hookimpl

if TYPE_CHECKING:
    from pi_host import (
        DEFAULT_MAX_BYTES,
        DEFAULT_MAX_LINES,
        AbortSignal,
        PluginContext,
        Tool,
        TruncationResult,
        format_size,
        truncate_tail,
    )
    from pi_host.hookspecs import (
        HostConfig,
        SessionShutdownReason,
        ToolCallView,
        ToolRenderer,
        UserBashResult,
    )

    from ._limits import DEFAULT_KILL_GRACE, BackgroundPolicy
    from ._output import OutputAccumulator, OutputSnapshot, TextFilter
    from ._process import (
        EXIT_DRAIN_SECONDS,
        BashError,
        CommandOutcome,
        background_process_groups,
        build_env,
        kill_background_processes,
        resolve_shell,
        run_shell_command,
    )
    from ._tool import (
        BASH_DESCRIPTION,
        BASH_PROMPT_SNIPPET,
        DEFAULT_TIMEOUT,
        UPDATE_INTERVAL,
        BashParams,
        create_bash_tool,
    )
    from ._user import TerminalTextFilter, run_user_bash, sanitize_output

__all__ = [
    "BASH_DESCRIPTION",
    "BASH_PROMPT_SNIPPET",
    "DEFAULT_KILL_GRACE",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LINES",
    "DEFAULT_TIMEOUT",
    "EXIT_DRAIN_SECONDS",
    "UPDATE_INTERVAL",
    "BackgroundPolicy",
    "BashError",
    "BashParams",
    "CommandOutcome",
    "OutputAccumulator",
    "OutputSnapshot",
    "TerminalTextFilter",
    "TextFilter",
    "TruncationResult",
    "background_process_groups",
    "build_env",
    "create_bash_tool",
    "format_size",
    "kill_background_processes",
    "pi_register_tools",
    "pi_session_shutdown",
    "pi_user_bash",
    "resolve_shell",
    "run_shell_command",
    "run_user_bash",
    "sanitize_output",
    "truncate_tail",
]

# Everything is imported on first access (PEP 562): loading the plugin, or reading its flags
# for ``--help``, imports neither the tool nor the process runner; the tool is defined when
# it is registered and runs its first command with the runner imported then.
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(
        ["DEFAULT_MAX_BYTES", "DEFAULT_MAX_LINES", "TruncationResult", "format_size", "truncate_tail"],
        "pi_host",
    ),
    **dict.fromkeys(["DEFAULT_KILL_GRACE", "BackgroundPolicy"], f"{__name__}._limits"),
    **dict.fromkeys(["OutputAccumulator", "OutputSnapshot", "TextFilter"], f"{__name__}._output"),
    **dict.fromkeys(
        [
            "EXIT_DRAIN_SECONDS",
            "BashError",
            "CommandOutcome",
            "background_process_groups",
            "build_env",
            "kill_background_processes",
            "resolve_shell",
            "run_shell_command",
        ],
        f"{__name__}._process",
    ),
    **dict.fromkeys(
        [
            "BASH_DESCRIPTION",
            "BASH_PROMPT_SNIPPET",
            "DEFAULT_TIMEOUT",
            "UPDATE_INTERVAL",
            "BashParams",
            "create_bash_tool",
        ],
        f"{__name__}._tool",
    ),
    **dict.fromkeys(["TerminalTextFilter", "run_user_bash", "sanitize_output"], f"{__name__}._user"),
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def _tool_options(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The ``bash`` tool's options from the merged settings: pi's ``shellPath`` and
    ``shellCommandPrefix``, and pi-host's ``bash`` section (``bash.defaultTimeout`` in
    seconds, 0 for none; ``bash.background``: keep or kill)."""
    options: dict[str, Any] = {}
    if isinstance(settings.get("shellPath"), str):
        options["shell_path"] = settings["shellPath"]
    if isinstance(settings.get("shellCommandPrefix"), str):
        options["command_prefix"] = settings["shellCommandPrefix"]
    bash = settings.get("bash")
    if isinstance(bash, Mapping):
        timeout = bash.get("defaultTimeout")
        if isinstance(timeout, int | float) and not isinstance(timeout, bool) and timeout >= 0:
            options["default_timeout"] = float(timeout) or None
        if bash.get("background") in ("keep", "kill"):
            options["background"] = bash["background"]
    return options


@hookimpl
def pi_register_tools(register: Callable[[Tool[Any]], None], config: HostConfig | None) -> None:
    """Register the ``bash`` tool, built from the settings of the host it registers with.

    Read from ``config`` each time rather than kept from ``pi_configure``: hosts in one
    process (many ``create_session`` sessions) each have their own settings, and a reload
    re-collects with its own host's.
    """
    from ._tool import create_bash_tool

    register(create_bash_tool(**_tool_options(config.settings if config is not None else {})))


def _render_call(view: ToolCallView) -> Any:
    from ._render import render_bash_call

    return render_bash_call(view)


def _render_result(view: ToolCallView) -> Any:
    from ._render import render_bash_result

    return render_bash_result(view)


@hookimpl
def pi_register_tool_renderers(register: Callable[[ToolRenderer], None]) -> None:
    """Draw ``bash`` calls as ``$ command`` over the tail of the output (the interactive mode)."""
    from pi_host.hookspecs import ToolRenderer

    register(ToolRenderer(tool="bash", render_call=_render_call, render_result=_render_result))


@hookimpl(trylast=True)
async def pi_user_bash(
    command: str,
    exclude_from_context: bool,
    cwd: str,
    signal: AbortSignal,
    on_output: Callable[[str], None] | None,
    ctx: PluginContext,
) -> UserBashResult:
    """Run the user's ``!command`` when no other plugin did (the default executor), with the
    session's ``shellPath`` and ``shellCommandPrefix`` as the ``bash`` tool has them."""
    from pi_host.hookspecs import UserBashResult

    from ._owner import session_owner
    from ._user import run_user_bash

    # pi runs the user's command with the same shell and prefix as the model's (``shellPath``,
    # ``shellCommandPrefix``), read from this session's settings.
    settings = ctx.settings
    message = await run_user_bash(
        command,
        cwd,
        shell_path=settings.shell_path,
        command_prefix=settings.shell_command_prefix,
        signal=signal,
        on_output=on_output,
        exclude_from_context=exclude_from_context,
        owner=session_owner(ctx),
    )
    return UserBashResult(
        output=message.output,
        exit_code=message.exit_code,
        cancelled=message.cancelled,
        truncated=message.truncated,
        full_output_path=message.full_output_path,
    )


@hookimpl
async def pi_session_shutdown(reason: SessionShutdownReason, ctx: PluginContext) -> None:
    """On exit, stop the processes this session's commands left running in the background.

    Switching sessions or reloading keeps them, as a terminal keeps its jobs. Other sessions
    of the process keep theirs (they are stopped when those sessions quit, or at exit).
    """
    # No command ran if the runner was never imported, so nothing can be left running.
    process = sys.modules.get(f"{__name__}._process")
    if reason == "quit" and process is not None:
        from ._owner import session_owner

        await process.kill_background_processes(owner=session_owner(ctx))
