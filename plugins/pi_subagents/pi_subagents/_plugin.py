"""pi-subagents' hooks: the ``task`` tool, ``/agents``, the ``subagents`` settings, the screen's view."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pi_host import SettingsSection, agent_dir, hookimpl
from pi_host.hookspecs import Command, RpcCommand, Shortcut, ToolRenderer

from ._state import (
    CHILD_DEPTH,
    STATE,
    TASK_TOOL,
    ChildRun,
    SessionState,
    find_child,
    running_children,
    state_of,
)

if TYPE_CHECKING:
    from pi_host import BeforeAgentStartResult, Tool
    from pi_host.hookspecs import CommandContext, PluginContext, ToolCallView

    from ._definitions import LoadedDefinitions

STOP_KEY = "alt+s"
"""The terminal UI's key that stops one running child (chosen from a list)."""

# This module is the entry point, imported by every pi-host start (``--help`` too): the tool,
# the definitions and the settings model (pydantic) load when a session asks for them.

__all__ = [
    "agents_report",
    "pi_agent_start",
    "pi_before_agent_start",
    "pi_register_commands",
    "pi_register_rpc_commands",
    "pi_register_settings",
    "pi_register_shortcuts",
    "pi_register_tool_renderers",
    "pi_register_tools",
    "pi_session_start",
]


@hookimpl
def pi_register_settings(register: Callable[[SettingsSection], None]) -> None:
    """``"subagents": {"maxConcurrency": 4, "maxDepth": 1, "childMaxTurns": 50, ...}``."""
    from ._settings import SubagentSettings

    register(SettingsSection("subagents", SubagentSettings, "Sub-agents: concurrency, depth and budgets"))


@hookimpl
def pi_register_tools(register: Callable[[Tool[Any]], None]) -> None:
    """``task``: run a child agent on a piece of work and return its final answer."""
    from ._task import task_tool

    register(task_tool())


@hookimpl
def pi_register_commands(register: Callable[[Command], None]) -> None:
    """``/agents`` lists the agent definitions and the children running now; ``/agents stop
    [ID]`` stops one child (the only one, or the one whose id starts with ``ID``)."""
    register(
        Command(
            name="agents",
            description="Sub-agent definitions and running children; /agents stop [ID] stops one",
            handler=_agents,
        )
    )


@hookimpl
def pi_register_rpc_commands(register: Callable[[RpcCommand], None]) -> None:
    """``{"type": "abort_subagent", "subagentId": ...}`` stops one child, at any depth."""
    register(RpcCommand("abort_subagent", _rpc_abort_subagent, "Abort one running sub-agent by its id"))


@hookimpl
def pi_register_shortcuts(register: Callable[[Shortcut], None]) -> None:
    """Alt+S: choose a running child and stop it (the others and the parent go on)."""
    register(Shortcut(key=STOP_KEY, description="Stop a running sub-agent", handler=_stop_key))


async def _agents(args: str, ctx: CommandContext) -> None:
    state = state_of(ctx)
    if state is None:
        ctx.ui.notify("pi-subagents is not set up in this session", "error")
        return
    words = args.split()
    if words and words[0] == "stop":
        await _stop_chosen(ctx, state, words[1] if len(words) > 1 else None)
        return
    ctx.ui.notify(agents_report(state), "info")


async def _rpc_abort_subagent(command: Mapping[str, Any], ctx: CommandContext) -> dict[str, Any]:
    state = state_of(ctx)
    if state is None:
        raise RuntimeError("pi-subagents is not set up in this session")
    reference = command.get("subagentId")
    if not isinstance(reference, str) or not reference:
        raise ValueError(
            'abort_subagent needs "subagentId": the id of a running sub-agent (the subagentId of '
            "its subagent_start line)"
        )
    found = find_child(state, reference)
    if isinstance(found, str):
        raise ValueError(found)
    found.abort()
    return {"subagentId": found.subagent_id, "agent": found.agent}


def _label(run: ChildRun) -> str:
    doing = run.current_tool or "thinking"
    # The whole id: ids of children started in the same millisecond share their first half.
    return f"{run.subagent_id} {run.agent}: {run.description} - {doing}"


async def _stop_chosen(ctx: CommandContext, state: SessionState, reference: str | None) -> None:
    """Stop the child ``reference`` names, else the only one running, else the one chosen
    from a list."""
    if reference is not None:
        found = find_child(state, reference)
        if isinstance(found, str):
            ctx.ui.notify(found, "error")
            return
        chosen: ChildRun | None = found
    else:
        children = running_children(state)
        if not children:
            ctx.ui.notify("No sub-agents running.", "info")
            return
        labels = {_label(run): run for run in children}
        picked = await ctx.ui.select("Stop which sub-agent? (the others go on)", list(labels))
        chosen = labels.get(picked) if picked is not None else None
    if chosen is None:
        return
    chosen.abort()
    ctx.ui.notify(f"Stopping sub-agent {chosen.subagent_id} ({chosen.agent}: {chosen.description})", "info")


async def _stop_key(ctx: CommandContext) -> None:
    state = state_of(ctx)
    if state is not None:
        await _stop_chosen(ctx, state, None)


def agents_report(state: SessionState) -> str:
    """What ``/agents`` shows: each definition (where from, tools, model), then running children."""
    lines = ["Agent definitions:"]
    for definition in sorted(state.definitions.agents.values(), key=lambda d: d.name):
        tools = "parent's tools" if definition.tools is None else ", ".join(definition.tools) or "no tools"
        model = definition.model or "parent's model"
        extra = ", worktree" if definition.isolation else ""
        lines.append(f"  {definition.name} ({definition.where}): {tools}; {model}{extra}")
        lines.append(f"      {definition.description}")
    for problem in state.definitions.problems:
        lines.append(f"  skipped {problem}")
    for directory in state.definitions.untrusted_dirs:
        lines.append(f"  not read (project not trusted): {directory}")
    if state.running:
        lines.append("Running:")
        now = time.monotonic()
        for run in state.running.values():
            doing = run.current_tool or "thinking"
            lines.append(
                f"  {run.subagent_id} {run.agent}: {run.description} - {doing}, turn {run.turns}, "
                f"{len(run.tools_run)} tool calls, ${run.cost:.4f}, {now - run.started:.0f}s"
            )
    else:
        lines.append("No sub-agents running.")
    return "\n".join(lines)


def _report_problems(ctx: PluginContext, loaded: LoadedDefinitions) -> None:
    """Each skipped file where the user sees it: stderr in print mode, an event for JSON and
    RPC clients, a notice in the terminal UI."""
    from ._events import SubagentDefinitionErrorEvent

    for problem in loaded.problems:
        text = f"pi-subagents: skipped agent definition {problem}"
        if ctx.mode == "print":
            print(text, file=sys.stderr, flush=True)
        elif ctx.mode in ("json", "rpc"):
            ctx.emit(
                SubagentDefinitionErrorEvent(path=problem.path, line=problem.line, message=problem.message)
            )
        else:
            ctx.ui.notify(text, "warning")


@hookimpl
def pi_session_start(reason: str, previous_session_file: str | None, ctx: PluginContext) -> None:
    """Read the agent definitions (the project's only when trusted) and report broken files."""
    from ._definitions import load_definitions
    from ._settings import SubagentSettings

    loaded = load_definitions(agent_dir=agent_dir(), cwd=ctx.cwd, trusted=ctx.is_project_trusted())
    depth = ctx.stash.get(CHILD_DEPTH, 0)
    previous = state_of(ctx)
    running = previous.running if previous is not None else {}
    ctx.stash[STATE] = SessionState(
        definitions=loaded, settings=ctx.plugin_settings(SubagentSettings), depth=depth, running=running
    )
    if depth == 0:  # a child's parent has reported them already
        _report_problems(ctx, loaded)


@hookimpl
def pi_agent_start(ctx: PluginContext) -> None:
    """A parent run begins: the per-run budgets start again."""
    state = state_of(ctx)
    if state is not None:
        state.run.turns = 0
        state.run.cost = 0.0


@hookimpl
def pi_before_agent_start(
    prompt: str, images: Any, system_prompt: str, system_prompt_options: Any, ctx: PluginContext
) -> BeforeAgentStartResult | None:
    """With ``task`` active, the system prompt lists the agent types it can start."""
    from pi_host import BeforeAgentStartResult

    state = state_of(ctx)
    if state is None or TASK_TOOL not in ctx.get_active_tools():
        return None
    lines = ["", "Agent types for the task tool (subagent_type):"]
    for definition in sorted(state.definitions.agents.values(), key=lambda d: d.name):
        tools = "" if definition.tools is None else f" (tools: {', '.join(definition.tools)})"
        lines.append(f"- {definition.name}: {definition.description}{tools}")
    return BeforeAgentStartResult(system_prompt=system_prompt + "\n".join(lines))


# -- the terminal UI ---------------------------------------------------------------------------


@hookimpl
def pi_register_tool_renderers(register: Callable[[ToolRenderer], None]) -> None:
    """A ``task`` call shows as a block: the agent and its task, then its current tool while it
    runs (every tool call so far when expanded with Ctrl+O), then its answer."""
    register(ToolRenderer(tool=TASK_TOOL, render_call=_render_call, render_result=_render_result))


def _render_call(view: ToolCallView) -> Any:
    from rich.text import Text

    args = view.args if isinstance(view.args, dict) else {}
    agent = args.get("subagent_type") or "general-purpose"
    text = Text()
    text.append("task ", style="bold")
    text.append(str(agent), style="cyan")
    if args.get("description"):
        text.append(f"  {args['description']}")
    return text


def _render_result(view: ToolCallView) -> Any:
    from rich.text import Text

    details = view.details if isinstance(view.details, dict) else {}
    calls = [str(call) for call in details.get("toolCalls") or []]
    text = Text()
    if view.partial:
        current = details.get("currentTool")
        text.append(f"▸ {current}" if current else "▸ thinking", style="yellow")
        text.append(f"  turn {details.get('turns', 0)}, {len(calls)} tool calls", style="dim")
        if view.expanded:
            for call in calls:
                text.append(f"\n  {call}", style="dim")
        return text
    body = view.result_text or ""
    if view.expanded:
        for call in calls:
            text.append(f"{call}\n", style="dim")
        text.append(body)
    else:
        lines = body.splitlines()
        text.append("\n".join(lines[:3]))
        if len(lines) > 3 or calls:
            text.append(f"\n… {len(calls)} tool calls, {len(lines)} lines (Ctrl+O to expand)", style="dim")
    return text
