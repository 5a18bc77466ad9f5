"""The ``task`` tool: hand a piece of work to a child agent with a context of its own.

Each call runs a child session in this process (``ctx.create_child_session``) with the
definition's system prompt, tools and model, prompts it once, and returns its final answer.
The child's transcript is a session file of its own whose header names the parent's file
(``parentSession``), so ``pi-host --session <file>`` resumes it. The loop runs the calls of
one turn in parallel; a per-session limiter bounds how many children run at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any, Literal

import anyio
from pydantic import BaseModel, ConfigDict, Field

from pi_host import (
    AssistantMessage,
    PluginContext,
    SessionError,
    SessionOptions,
    TextContent,
    Tool,
    ToolCallContext,
    ToolError,
    ToolResult,
    Usage,
    message_usage,
)

from ._definitions import AgentDefinition
from ._events import FORWARDED_EVENTS, SubagentEndEvent, SubagentEvent, SubagentStartEvent
from ._settings import SubagentSettings
from ._state import CHILD_DEPTH, TASK_TOOL, ChildRun, SessionState, state_of

if TYPE_CHECKING:
    from pi_host import AgentSession

__all__ = ["SubagentError", "TaskParams", "task_tool"]


class TaskParams(BaseModel):
    """The ``task`` tool's parameters (Claude Code's ``Task`` tool)."""

    model_config = ConfigDict(frozen=True)

    description: str = Field(description="A short (3-5 word) description of the task")
    prompt: str = Field(description="The task for the agent to perform")
    subagent_type: str = Field(
        default="general-purpose", description="The type of specialized agent to use for this task"
    )


class SubagentError(ToolError):
    """A ``task`` call that cannot run or did not finish; the text is what the model reads,
    the details (a child's usage, its session file) what the session keeps."""


def task_tool() -> Tool[TaskParams]:
    return Tool(
        name=TASK_TOOL,
        label="Task",
        description=(
            "Launch a new agent to handle a piece of work on its own, with a fresh context: a "
            "search across many files, research, or an independent multi-step task. It returns "
            "only the agent's final report, so your context stays small. Give it a complete, "
            "self-contained prompt (it does not see this conversation) and say what to report "
            "back. Several task calls in one message run in parallel. subagent_type picks one "
            "of the agent types listed in the system prompt (default general-purpose)."
        ),
        parameters=TaskParams,
        execute=_execute,
        prompt_snippet="Hand a self-contained piece of work to a sub-agent with its own context",
        prompt_guidelines=(
            "Use task for broad searches or independent work that would fill your context; "
            "run independent tasks in parallel by calling task several times in one message.",
        ),
    )


async def _execute(params: TaskParams, call: ToolCallContext) -> ToolResult:
    ctx: PluginContext | None = call.session
    if ctx is None:
        raise SubagentError("task runs only inside a pi-host session")
    state = state_of(ctx)
    if state is None:
        raise SubagentError("pi-subagents is not set up in this session (its pi_session_start did not run)")
    definition = state.definitions.agents.get(params.subagent_type)
    if definition is None:
        known = ", ".join(sorted(state.definitions.agents))
        raise SubagentError(f"Unknown subagent_type {params.subagent_type!r}; agent types: {known}")
    settings = state.settings
    if state.depth >= settings.max_depth:
        raise SubagentError(
            f"Sub-agents may nest {settings.max_depth} level(s) deep (subagents.maxDepth) and this "
            "agent is at that depth: do the work yourself"
        )
    _check_run_budget(state)
    options = _child_options(ctx, state, definition, params)
    async with state.capacity():
        _check_run_budget(state)  # children that ran while this call waited may have spent it
        return await _run_child(ctx, call, state, definition, params, options)


def _check_run_budget(state: SessionState) -> None:
    settings, run = state.settings, state.run
    if settings.run_max_turns is not None and run.turns >= settings.run_max_turns:
        raise SubagentError(
            f"Sub-agent budget spent: this run's children took {run.turns} turns, the limit is "
            f"{settings.run_max_turns} (subagents.runMaxTurns). Finish with what you have."
        )
    if settings.run_max_cost is not None and run.cost >= settings.run_max_cost:
        raise SubagentError(
            f"Sub-agent budget spent: this run's children cost ${run.cost:.4f}, the limit is "
            f"${settings.run_max_cost:.4f} (subagents.runMaxCost). Finish with what you have."
        )


def _child_tools(
    ctx: PluginContext, state: SessionState, definition: AgentDefinition
) -> tuple[list[str], tuple[str, ...] | None]:
    """The child's active tools at its start, and its allow-list (``None``: no limit).

    Without ``tools:`` the child starts with the parent's active tools and may gain more (an
    MCP server's, say). With it, the list is an allow-list for the child's whole run: it
    starts with the listed tools, and tools a plugin registers later (pi-mcp's) are active
    only when listed or matched by a pattern (``mcp__db__*``). ``task`` is left out at the
    depth limit.
    """
    from ._definitions import is_tool_pattern

    available = [tool.name for tool in ctx.get_all_tools()]
    at_limit = state.depth + 1 >= state.settings.max_depth
    if definition.tools is None:
        names = list(ctx.get_active_tools())
        allowlist: tuple[str, ...] | None = None
    else:
        exact = [name for name in definition.tools if not is_tool_pattern(name)]
        # An MCP tool may come from a server the parent has not started yet, or one only the
        # child's configuration has (pi-mcp in the child decides): it is not checked here.
        unknown = [name for name in exact if name not in available and not name.startswith("mcp__")]
        if unknown:
            raise SubagentError(
                f"Agent {definition.name!r} ({definition.where}) names tool(s) {', '.join(unknown)}, "
                f"which no loaded plugin provides; available tools: {', '.join(sorted(available))}. "
                "Fix its tools: line."
            )
        patterns = [name for name in definition.tools if is_tool_pattern(name)]
        matched = [
            name for name in available if name not in exact and any(fnmatchcase(name, p) for p in patterns)
        ]
        names = [*exact, *matched]
        allowlist = tuple(name for name in definition.tools if not (at_limit and name == TASK_TOOL))
    if at_limit:
        names = [name for name in names if name != TASK_TOOL]
    return names, allowlist


def _child_options(
    ctx: PluginContext, state: SessionState, definition: AgentDefinition, params: TaskParams
) -> SessionOptions:
    tools, allowlist = _child_tools(ctx, state, definition)
    provider: str | None = None
    model: str | None = definition.model
    if model is None and ctx.model is not None:
        provider, model = ctx.model.provider, ctx.model.id
    return SessionOptions(
        cwd=ctx.cwd,
        mode=ctx.mode,
        provider=provider,
        model=model,
        thinking=ctx.thinking_level,
        tools=tools,
        tool_allowlist=allowlist,
        no_tools=not tools and allowlist is None,
        system_prompt=definition.system_prompt,
        name=f"{definition.name}: {params.description}",
    )


def _text(message: AssistantMessage) -> str:
    return "".join(block.text for block in message.content if isinstance(block, TextContent))


def _event_json(event: Any) -> dict[str, Any] | None:
    dump = getattr(event, "to_json_dict", None)
    if dump is None:
        return None
    data = dump()
    return data if isinstance(data, dict) else None


def _add_usage(total: dict[str, Any], usage: Usage) -> dict[str, Any]:
    """pi's usage object ``total`` plus ``usage``."""
    data = dict(total)
    other = usage.to_json_dict()
    for key in ("input", "output", "cacheRead", "cacheWrite", "totalTokens"):
        data[key] = data.get(key, 0) + other.get(key, 0)
    cost = dict(data.get("cost") or {})
    for key, value in (other.get("cost") or {}).items():
        cost[key] = cost.get(key, 0) + value
    data["cost"] = cost
    return data


async def _run_child(
    ctx: PluginContext,
    call: ToolCallContext,
    state: SessionState,
    definition: AgentDefinition,
    params: TaskParams,
    options: SessionOptions,
) -> ToolResult:
    from ._worktree import Worktree, WorktreeError, create_worktree

    worktree: Worktree | None = None
    if definition.isolation == "worktree":
        try:
            worktree = await create_worktree(ctx.cwd, definition.name)
        except WorktreeError as exc:
            raise SubagentError(str(exc)) from None
        options.cwd = worktree.path
    try:
        child = await ctx.create_child_session(options)
    except BaseException as exc:
        if worktree is not None:
            with anyio.CancelScope(shield=True):
                await worktree.finish()
        if not isinstance(exc, SessionError):
            raise
        raise SubagentError(
            f"Agent {definition.name!r} ({definition.where}) cannot start: {exc}"
            + (" Fix its model: line." if definition.model else "")
        ) from None
    child.stash[CHILD_DEPTH] = state.depth + 1
    manager = child.session_manager
    run = ChildRun(
        subagent_id=manager.session_id,
        tool_call_id=call.tool_call_id,
        agent=definition.name,
        description=params.description,
        # The file, or ``<store URI>#<id>`` in a session store: what --session resumes.
        session_file=manager.session_reference,
    )
    limits = _Limits.of(state.settings, definition)
    stop = anyio.Event()
    run.stop, run.stash = stop, child.stash
    state.running[run.subagent_id] = run

    async def report() -> None:
        await call.update(ToolResult.text(_progress(run), details=_details(run, None)))

    def trip(reason: str) -> None:
        """A budget is spent: stop the child now (its request in flight ends aborted)."""
        run.stop_reason = run.stop_reason or reason
        child.agent.abort()
        stop.set()  # and the rest of its work (plugins' scopes, hooks) through child.abort()

    def on_event(event: Any) -> Any:
        kind = getattr(event, "type", None)
        if kind == "turn_start":
            run_turns = state.settings.run_max_turns
            if run.turns >= limits.turns:
                reason = f"it reached its budget of {limits.turns} turns ({limits.turns_source})"
            elif run_turns is not None and state.run.turns >= run_turns:
                reason = (
                    f"this run's children reached their budget of {run_turns} turns (subagents.runMaxTurns)"
                )
            else:
                reason = None
            if reason is not None:
                trip(reason)
                return None
            run.turns += 1
            state.run.turns += 1
        elif kind == "message_end" and (usage := message_usage(getattr(event, "message", None))) is not None:
            # The child's replies, and what its own children spent (their task results).
            run.usage = _add_usage(run.usage, usage)
            cost = float(usage.cost.total)
            run.cost += cost
            state.run.cost += cost
            reason = _over_cost(run, state, limits)
            if reason is not None:
                trip(reason)
        elif kind == "tool_execution_start":
            run.current_tool = _call_summary(event.tool_name, event.args)
            run.tools_run.append(run.current_tool)
        elif kind == "tool_execution_end":
            run.current_tool = None
        if kind in FORWARDED_EVENTS:
            data = _event_json(event)
            if data is not None:
                ctx.emit(
                    SubagentEvent(
                        subagent_id=run.subagent_id,
                        tool_call_id=run.tool_call_id,
                        agent=run.agent,
                        event=data,
                    )
                )
        if kind in ("tool_execution_start", "tool_execution_end", "turn_start"):
            return report()
        return None

    unsubscribe = child.subscribe(on_event)
    ctx.emit(
        SubagentStartEvent(
            subagent_id=run.subagent_id,
            tool_call_id=run.tool_call_id,
            agent=run.agent,
            description=run.description,
            depth=state.depth + 1,
            session_file=run.session_file,
            cwd=options.cwd,
        )
    )
    # What the end event says if driving the child raises (a bug, not a model failure).
    status: Literal["done", "error", "aborted", "budget"] = "error"
    error: str | None = "the sub-agent's run raised an exception"
    branch: str | None = None
    kept_because: str | None = None
    answer = ""
    try:
        answer, status, error = await _drive(child, call, params.prompt, run, stop)
    finally:
        unsubscribe()
        with anyio.CancelScope(shield=True):
            await child.shutdown("quit")
            if worktree is not None:
                try:
                    branch = await worktree.finish()
                except WorktreeError as exc:
                    kept_because = str(exc)
            state.running.pop(run.subagent_id, None)
            ctx.emit(
                SubagentEndEvent(
                    subagent_id=run.subagent_id,
                    tool_call_id=run.tool_call_id,
                    agent=run.agent,
                    status=status,
                    turns=run.turns,
                    cost=run.cost,
                    session_file=run.session_file,
                    branch=branch,
                    error=error,
                )
            )
    if kept_because is not None and worktree is not None:
        answer += f"\n\n[Its worktree {worktree.path} (branch {worktree.branch}) was kept: {kept_because}]"
    elif worktree is not None:
        answer += (
            f"\n\n[Changes are on branch {branch} (worktree {worktree.path}).]"
            if branch
            else "\n\n[The agent changed no files; its worktree was removed.]"
        )
    details = _details(run, branch)
    if status == "done":
        return ToolResult.text(answer, details=details)
    where = f" Its transcript: {run.session_file}." if run.session_file else ""
    last = f" Its last message: {answer}" if answer.strip() else ""
    if status == "budget":
        message = f"Sub-agent {run.agent!r} was stopped: {run.stop_reason}.{where}{last}"
    elif status == "aborted" and run.aborted_by_user and not call.signal.aborted:
        # The user stopped this child alone: the others and this run go on.
        message = (
            f"Sub-agent {run.agent!r} ({run.description}) was aborted by the user; its task is "
            f"not done. Do not start it again unless the user asks.{where}{last}"
        )
    elif status == "aborted":
        message = f"Sub-agent {run.agent!r} was aborted.{where}"
    else:
        message = f"Sub-agent {run.agent!r} failed: {error}.{where}{last}"
    raise SubagentError(message, details=details)


@dataclass(frozen=True)
class _Limits:
    turns: int
    turns_source: str
    cost: float | None

    @classmethod
    def of(cls, settings: SubagentSettings, definition: AgentDefinition) -> _Limits:
        turns, source = settings.child_max_turns, "subagents.childMaxTurns"
        if definition.max_turns is not None and definition.max_turns < turns:
            turns, source = definition.max_turns, f"maxTurns of {definition.where}"
        return cls(turns=turns, turns_source=source, cost=settings.child_max_cost)


def _over_cost(run: ChildRun, state: SessionState, limits: _Limits) -> str | None:
    """Which cost budget the child's spending so far exceeds, if any."""
    if limits.cost is not None and run.cost >= limits.cost:
        return f"it spent ${run.cost:.4f}, over its budget of ${limits.cost:.4f} (subagents.childMaxCost)"
    run_limit = state.settings.run_max_cost
    if run_limit is not None and state.run.cost >= run_limit:
        return (
            f"this run's children spent ${state.run.cost:.4f}, over the budget of ${run_limit:.4f} "
            "(subagents.runMaxCost)"
        )
    return None


async def _drive(
    child: AgentSession, call: ToolCallContext, prompt: str, run: ChildRun, stop: anyio.Event
) -> tuple[str, Literal["done", "error", "aborted", "budget"], str | None]:
    """Start the child, prompt it, and wait for its run; the parent's abort or a budget stops it."""
    aborted = False

    async def watch_parent() -> None:
        nonlocal aborted
        await call.signal.wait()
        aborted = True
        stop.set()

    async def enforce() -> None:
        await stop.wait()
        await child.abort()

    # The parent's abort cancels this tool's scope at once; the child is shielded from that so
    # it ends its run itself (aborted by ``enforce``), leaving a complete transcript.
    with anyio.CancelScope(shield=True):
        async with anyio.create_task_group() as tg:
            child.bind_task_group(tg)
            try:
                tg.start_soon(watch_parent)
                tg.start_soon(enforce)
                await child.start("startup")
                if not stop.is_set():
                    await child.prompt(prompt)
                await child.agent.wait_for_idle()
            finally:
                child.bind_task_group(None)
                tg.cancel_scope.cancel()
    replies = [m for m in child.messages if isinstance(m, AssistantMessage)]
    last = replies[-1] if replies else None
    answer = next((text for text in (_text(m).strip() for m in reversed(replies)) if text), "")
    if aborted or run.aborted_by_user:
        return answer, "aborted", None
    if run.stop_reason is not None:
        return answer, "budget", run.stop_reason
    if last is None:
        return answer, "error", "it gave no answer"
    if last.stop_reason in ("error", "aborted"):
        return answer, "error", last.error_message or last.stop_reason
    return answer, "done", None


def _call_summary(name: Any, args: Any) -> str:
    if isinstance(args, dict):
        for key in ("command", "path", "pattern", "description", "query"):
            value = args.get(key)
            if isinstance(value, str):
                short = value if len(value) <= 60 else value[:57] + "..."
                return f"{name} {short}"
    return str(name)


def _progress(run: ChildRun) -> str:
    now = run.current_tool or ("thinking" if run.turns else "starting")
    return f"{run.agent}: {now} (turn {run.turns}, {len(run.tools_run)} tool calls)"


def _details(run: ChildRun, branch: str | None) -> dict[str, Any]:
    details: dict[str, Any] = {
        "subagentId": run.subagent_id,
        "agent": run.agent,
        "description": run.description,
        "sessionFile": run.session_file,
        "turns": run.turns,
        "currentTool": run.current_tool,
        "toolCalls": list(run.tools_run),
        "usage": Usage.model_validate(run.usage).to_json_dict(),
    }
    if branch is not None:
        details["branch"] = branch
    return details
