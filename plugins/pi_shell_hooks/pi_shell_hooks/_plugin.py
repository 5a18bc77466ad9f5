"""The hooks that run configured commands, one pi hook per supported event.

Commands for an event run one after another in configuration order (global, then project),
each seeing what the previous ones changed (a rewritten input, a patched result); the first
one that blocks ends the chain. A failing or hanging command is reported with
``ctx.ui.notify`` and a log line and otherwise ignored — except for ``tool_call``, where a
failure blocks the call (fail closed).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from pi_host import CustomMessage, TextContent, hookimpl
from pi_host.hookspecs import (
    BeforeAgentStartResult,
    Cancel,
    CompactionResult,
    InputHandled,
    InputTransform,
    StashKey,
    ToolCallBlock,
    ToolCallRewrite,
    ToolResultPatch,
)

from ._config import Event, HookCommand, HookConfig, load_config
from ._protocol import HookAnswer, interpret
from ._runner import run_command

if TYPE_CHECKING:
    from pi_host import ImageContent
    from pi_host.hookspecs import CompactionPreparation, PluginContext

__all__ = [
    "CONTEXT_MESSAGE_TYPE",
    "MAX_STOP_CONTINUATIONS",
    "ShellHooksState",
    "pi_agent_end",
    "pi_before_agent_start",
    "pi_input",
    "pi_session_before_compact",
    "pi_session_shutdown",
    "pi_session_start",
    "pi_tool_call",
    "pi_tool_result",
    "pi_turn_end",
    "run_event",
]

logger = logging.getLogger("pi_shell_hooks")

CONTEXT_MESSAGE_TYPE = "shell-hook"
"""The ``customType`` of messages that carry hooks' ``additionalContext`` to the model."""

_CANNOT_BLOCK: frozenset[Event] = frozenset({"before_agent_start", "session_start", "session_shutdown"})

MAX_STOP_CONTINUATIONS = 8
"""How many times in a row ``agent_end`` hooks may keep the agent going (Claude Code's cap)."""


@dataclass
class ShellHooksState:
    """Per-session state: the configuration, and context waiting for the next run."""

    config: HookConfig
    pending_context: list[str] = field(default_factory=list)
    stop_continuations: int = 0


_STATE = StashKey[ShellHooksState]()


def _state(ctx: PluginContext) -> ShellHooksState:
    state = ctx.stash.get(_STATE, None)
    if state is None:
        state = ShellHooksState(load_config(ctx.cwd, trusted=ctx.is_project_trusted()))
        ctx.stash[_STATE] = state
        _report_problems(ctx, state.config)
    return state


def _report_problems(ctx: PluginContext, config: HookConfig) -> None:
    for problem in config.problems:
        logger.warning("pi-shell-hooks: %s", problem)
        ctx.ui.notify(f"pi-shell-hooks: {problem}", "warning")
    config.problems.clear()


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    return repr(value)


def _common(ctx: PluginContext, command: HookCommand) -> dict[str, Any]:
    manager = ctx.session_manager
    return {
        "session_id": manager.session_id,
        "transcript_path": manager.session_file,
        "cwd": ctx.cwd,
        "hook_event_name": command.configured_as,
        "pi_event": command.event,
        "mode": ctx.mode,
    }


def _env(ctx: PluginContext, command: HookCommand) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "PI_HOST_HOOK_EVENT": command.event,
            "PI_PROJECT_DIR": ctx.cwd,
            "CLAUDE_PROJECT_DIR": ctx.cwd,  # scripts written for Claude Code look for this
            "PI_SESSION_ID": ctx.session_manager.session_id,
        }
    )
    return env


def _report_failure(ctx: PluginContext, command: HookCommand, failure: str) -> None:
    message = f"pi-shell-hooks: the {command.event} hook {command.label!r} {failure}"
    logger.warning(message)
    ctx.ui.notify(message, "warning")


async def _run_one(ctx: PluginContext, command: HookCommand, payload: dict[str, Any]) -> HookAnswer:
    data = json.dumps({**_common(ctx, command), **payload}, default=_jsonable, ensure_ascii=False)
    result = await run_command(
        command.argv, data.encode("utf-8"), cwd=ctx.cwd, env=_env(ctx, command), timeout=command.timeout
    )
    answer = interpret(command, result)
    if answer.failure is not None:
        _report_failure(ctx, command, answer.failure)
    elif answer.block and command.event in _CANNOT_BLOCK:
        # nothing to block here: the user sees the reason (Claude Code shows stderr)
        ctx.ui.notify(
            f"pi-shell-hooks: the {command.event} hook {command.label!r} cannot block"
            + (f": {answer.reason}" if answer.reason else ""),
            "warning",
        )
    if answer.system_message:
        ctx.ui.notify(answer.system_message, "warning")
    if answer.stop:
        ctx.ui.notify(
            f"pi-shell-hooks: {command.label!r} stopped the agent"
            + (f": {answer.stop_reason}" if answer.stop_reason else ""),
            "warning",
        )
        ctx.abort()
    return answer


async def run_event(
    ctx: PluginContext, event: Event, payload: dict[str, Any], subject: str | None = None
) -> list[tuple[HookCommand, HookAnswer]]:
    """Run every command configured for ``event`` (matching ``subject``), in order; stop at a block."""
    answers = []
    for command in _state(ctx).config.for_event(event, subject):
        answer = await _run_one(ctx, command, payload)
        answers.append((command, answer))
        if answer.block or answer.stop:
            break
    return answers


def _has(ctx: PluginContext, event: Event, subject: str | None = None) -> bool:
    return bool(_state(ctx).config.for_event(event, subject))


# -- session ---------------------------------------------------------------------------------


@hookimpl
async def pi_session_start(reason: str, previous_session_file: str | None, ctx: PluginContext) -> None:
    """Read the hooks configuration for this session, then run ``session_start`` hooks."""
    state = ShellHooksState(load_config(ctx.cwd, trusted=ctx.is_project_trusted()))
    ctx.stash[_STATE] = state
    _report_problems(ctx, state.config)
    source = {"startup": "startup", "resume": "resume", "new": "clear", "fork": "resume"}.get(reason, reason)
    for _, answer in await run_event(ctx, "session_start", {"reason": reason, "source": source}, reason):
        if answer.context:
            state.pending_context.append(answer.context)


@hookimpl
async def pi_session_shutdown(reason: str, target_session_file: str | None, ctx: PluginContext) -> None:
    """Run ``session_shutdown`` hooks (observe only)."""
    await run_event(ctx, "session_shutdown", {"reason": reason}, reason)


@hookimpl
async def pi_session_before_compact(
    preparation: CompactionPreparation, custom_instructions: str | None, reason: str, ctx: PluginContext
) -> Cancel | CompactionResult | None:
    """Let ``session_before_compact`` hooks cancel the compaction or supply its summary."""
    if not _has(ctx, "session_before_compact", reason):
        return None
    payload = {
        "reason": reason,
        "trigger": "manual" if reason == "manual" else "auto",
        "custom_instructions": custom_instructions,
        "tokens_before": preparation.tokens_before,
        "messages_to_summarize": len(preparation.messages_to_summarize),
    }
    for command, answer in await run_event(ctx, "session_before_compact", payload, reason):
        if answer.block or answer.stop:
            return Cancel(reason=answer.reason or f"cancelled by the hook {command.label!r}")
        if answer.summary is not None:
            return CompactionResult(
                summary=answer.summary,
                first_kept_entry_id=preparation.first_kept_entry_id,
                tokens_before=preparation.tokens_before,
                details={"source": "pi-shell-hooks", "hook": command.label},
            )
    return None


# -- prompts -----------------------------------------------------------------------------------


@hookimpl
async def pi_input(
    text: str, images: Sequence[ImageContent], source: str, ctx: PluginContext
) -> InputTransform | InputHandled | None:
    """Let ``input`` hooks block or rewrite the prompt, or add context for the run."""
    state = _state(ctx)
    state.stop_continuations = 0  # a new prompt from someone: agent_end hooks start over
    if not _has(ctx, "input"):
        return None
    current = text
    for command in state.config.for_event("input"):
        answer = await _run_one(ctx, command, {"prompt": current, "source": source, "images": len(images)})
        if answer.block or answer.stop:
            ctx.ui.notify(
                f"Prompt blocked by the hook {command.label!r}"
                + (f": {answer.reason}" if answer.reason else ""),
                "warning",
            )
            return InputHandled()
        if answer.updated_prompt is not None:
            current = answer.updated_prompt
        if answer.context:
            state.pending_context.append(answer.context)
    return InputTransform(text=current) if current != text else None


@hookimpl
async def pi_before_agent_start(
    prompt: str, system_prompt: str, ctx: PluginContext
) -> BeforeAgentStartResult | None:
    """Inject context from ``session_start`` and ``input`` hooks; run ``before_agent_start`` hooks."""
    state = _state(ctx)
    contexts = state.pending_context
    state.pending_context = []
    replacement: str | None = None
    if _has(ctx, "before_agent_start"):
        payload = {"prompt": prompt, "system_prompt": system_prompt}
        for _, answer in await run_event(ctx, "before_agent_start", payload):
            if answer.context:
                contexts.append(answer.context)
            if answer.system_prompt is not None:
                replacement = answer.system_prompt
    if not contexts and replacement is None:
        return None
    message = None
    if contexts:
        message = CustomMessage(
            custom_type=CONTEXT_MESSAGE_TYPE, content="\n\n".join(contexts), display=False
        )
    return BeforeAgentStartResult(message=message, system_prompt=replacement)


# -- tools -------------------------------------------------------------------------------------


@hookimpl
async def pi_tool_call(
    tool_call_id: str, tool_name: str, input: Mapping[str, Any], ctx: PluginContext
) -> ToolCallBlock | ToolCallRewrite | None:
    """Run ``tool_call`` hooks; a block, a deny, an unanswered ask or a failure blocks the call."""
    if not _has(ctx, "tool_call", tool_name):
        return None
    current = dict(input)
    for command in _state(ctx).config.for_event("tool_call", tool_name):
        payload = {"tool_name": tool_name, "tool_input": current, "tool_use_id": tool_call_id}
        answer = await _run_one(ctx, command, payload)
        if answer.failure is not None:
            return ToolCallBlock(
                reason=f"pi-shell-hooks: the tool_call hook {command.label!r} {answer.failure}; "
                "tool_call hooks fail closed, so the call was blocked"
            )
        if answer.block or answer.stop:
            return ToolCallBlock(reason=answer.reason or f"Blocked by the hook {command.label!r}")
        if answer.updated_input is not None:
            current = {**current, **answer.updated_input}
        if answer.permission == "ask":
            question = answer.reason or f"The hook {command.label!r} asks before {tool_name} runs."
            if not ctx.has_ui or not await ctx.ui.confirm(f"Allow {tool_name}?", question):
                return ToolCallBlock(reason=f"Not approved: {question}")
    return ToolCallRewrite(input=current) if current != dict(input) else None


def _content_json(content: Sequence[Any]) -> list[Any]:
    return [block.to_json_dict() if hasattr(block, "to_json_dict") else block for block in content]


def _as_content(output: str | list[Any]) -> tuple[Any, ...]:
    if isinstance(output, str):
        return (TextContent(text=output),)
    blocks: list[Any] = []
    for item in output:
        if isinstance(item, str):
            blocks.append(TextContent(text=item))
        elif isinstance(item, dict) and item.get("type") == "text":
            blocks.append(TextContent(text=str(item.get("text", ""))))
        else:
            raise ValueError(
                f"updatedToolOutput holds {item!r}; use strings or {{'type': 'text', ...}} blocks"
            )
    return tuple(blocks)


@hookimpl
async def pi_tool_result(
    tool_call_id: str,
    tool_name: str,
    input: Mapping[str, Any],
    content: Sequence[Any],
    details: Any,
    is_error: bool,
    ctx: PluginContext,
) -> ToolResultPatch | None:
    """Let ``tool_result`` hooks replace the output, add to it, or flip its error flag."""
    if not _has(ctx, "tool_result", tool_name):
        return None
    blocks: tuple[Any, ...] = tuple(content)
    error = is_error
    changed = False
    for command in _state(ctx).config.for_event("tool_result", tool_name):
        text = "".join(b.text for b in blocks if getattr(b, "type", None) == "text")
        payload = {
            "tool_name": tool_name,
            "tool_input": dict(input),
            "tool_use_id": tool_call_id,
            "tool_response": {"content": _content_json(blocks), "details": details, "is_error": error},
            "tool_response_text": text,
        }
        answer = await _run_one(ctx, command, payload)
        if answer.updated_output is not None:
            try:
                blocks, changed = _as_content(answer.updated_output), True
            except ValueError as exc:
                _report_failure(ctx, command, f"answered with malformed JSON: {exc}")
        feedback = [t for t in (answer.reason if answer.block else None, answer.context) if t]
        if feedback:
            blocks, changed = (*blocks, TextContent(text="\n".join(feedback))), True
        if answer.is_error is not None and answer.is_error != error:
            error, changed = answer.is_error, True
    if not changed:
        return None
    return ToolResultPatch(content=blocks, is_error=error)


# -- turns and runs ----------------------------------------------------------------------------


@hookimpl
async def pi_turn_end(turn_index: int, message: Any, tool_results: Sequence[Any], ctx: PluginContext) -> None:
    """Run ``turn_end`` hooks; their context goes with the next turn.

    When the reply called tools the agent takes another turn anyway, and the context steers
    it; after the final reply it waits for the next prompt (``nextTurn``) — steering then would
    start a turn of its own, and a hook that always answers would never let the agent stop.
    """
    if not _has(ctx, "turn_end"):
        return
    payload = {"turn_index": turn_index, "message": message, "tool_results": list(tool_results)}
    continues = any(getattr(block, "type", None) == "toolCall" for block in getattr(message, "content", ()))
    for _, answer in await run_event(ctx, "turn_end", payload):
        context = answer.context or (answer.reason if answer.block else None)
        if context:
            ctx.send_message(
                CustomMessage(custom_type=CONTEXT_MESSAGE_TYPE, content=context, display=False),
                deliver_as="steer" if continues else "nextTurn",
            )


def _last_assistant_text(messages: Sequence[Any]) -> str:
    for message in reversed(messages):
        if getattr(message, "role", None) == "assistant":
            return "".join(b.text for b in message.content if getattr(b, "type", None) == "text")
    return ""


@hookimpl
async def pi_agent_end(messages: Sequence[Any], ctx: PluginContext) -> None:
    """Run ``agent_end`` hooks; a block keeps the agent going with the reason (at most 8 times in a row)."""
    if not _has(ctx, "agent_end"):
        return
    state = _state(ctx)
    payload = {
        "stop_hook_active": state.stop_continuations > 0,
        "last_assistant_message": _last_assistant_text(messages),
        "messages": len(messages),
    }
    for command, answer in await run_event(ctx, "agent_end", payload):
        if not answer.block:
            continue
        if state.stop_continuations >= MAX_STOP_CONTINUATIONS:
            ctx.ui.notify(
                f"pi-shell-hooks: {command.label!r} asked to continue {MAX_STOP_CONTINUATIONS} times in a "
                "row; letting the agent stop",
                "warning",
            )
            return
        state.stop_continuations += 1
        reason = answer.reason or f"The hook {command.label!r} asked you to continue."
        ctx.send_message(
            CustomMessage(custom_type=CONTEXT_MESSAGE_TYPE, content=reason, display=True),
            trigger_turn=True,
            deliver_as="followUp",
        )
        return
