"""What a hook command's exit status and output mean (Claude Code's contract, with pi's events).

- exit 0 with empty output: no opinion;
- exit 0 with a JSON object on stdout: the answer (fields below);
- exit 0 with other text: context for ``input``, ``before_agent_start`` and ``session_start``
  (added for the model, as Claude Code does); for the other events it is a malformed answer;
- exit 2: block, with standard error as the reason;
- any other status, a timeout, a command that cannot start, or malformed JSON: the hook
  *failed* — reported to the user, ignored, except for ``tool_call`` where it blocks.

JSON fields (all optional): ``continue`` (false stops the agent), ``stopReason``,
``systemMessage`` (shown to the user), ``decision`` (``"block"``) with ``reason``, and
``hookSpecificOutput`` with ``permissionDecision`` (``allow``/``deny``/``ask``),
``permissionDecisionReason``, ``updatedInput``, ``additionalContext``, ``updatedPrompt``,
``updatedToolOutput``, ``isError``, ``systemPrompt`` and ``summary``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from ._config import Event, HookCommand
from ._runner import CommandResult

__all__ = ["CONTEXT_EVENTS", "HookAnswer", "interpret"]

CONTEXT_EVENTS: frozenset[Event] = frozenset({"input", "before_agent_start", "session_start"})
"""Events whose plain-text output is context for the model."""

_PREVIEW = 200


@dataclass(frozen=True)
class HookAnswer:
    """One hook's answer, normalised.

    :ivar failure: why the hook failed (``None`` when it answered).
    :ivar block: block the action (``decision: "block"``, ``permissionDecision: "deny"``, exit 2).
    :ivar reason: the reason for a block (for the model or the user).
    :ivar permission: ``allow``, ``ask`` or ``deny`` from ``permissionDecision``.
    :ivar context: text to add for the model.
    :ivar updated_input: replacement tool arguments (merged over the current ones).
    :ivar updated_prompt: replacement prompt text.
    :ivar updated_output: replacement tool result content (text or content blocks).
    :ivar is_error: mark the tool result as an error or not.
    :ivar system_prompt: replacement system prompt for the run.
    :ivar summary: a compaction summary to use instead of generating one.
    :ivar stop: ``continue: false``: stop the agent.
    :ivar stop_reason: why, for the user.
    :ivar system_message: a message for the user.
    """

    failure: str | None = None
    block: bool = False
    reason: str | None = None
    permission: Literal["allow", "ask", "deny"] | None = None
    context: str | None = None
    updated_input: dict[str, Any] | None = None
    updated_prompt: str | None = None
    updated_output: str | list[Any] | None = None
    is_error: bool | None = None
    system_prompt: str | None = None
    summary: str | None = None
    stop: bool = False
    stop_reason: str | None = None
    system_message: str | None = None


def _preview(text: str) -> str:
    text = text.strip().replace("\n", "\\n")
    return text if len(text) <= _PREVIEW else text[: _PREVIEW - 3] + "..."


class _Malformed(ValueError):
    pass


def _text(data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _Malformed(f"{key} must be a string, not {type(value).__name__}")
    return value


def _from_json(data: dict[str, Any]) -> HookAnswer:
    specific = data.get("hookSpecificOutput") or {}
    if not isinstance(specific, dict):
        raise _Malformed("hookSpecificOutput must be an object")
    fields: dict[str, Any] = {}
    if data.get("continue") is False:
        fields["stop"] = True
        fields["stop_reason"] = _text(data, "stopReason")
    fields["system_message"] = _text(data, "systemMessage")
    decision = data.get("decision")
    if decision == "block":
        fields["block"] = True
        fields["reason"] = _text(data, "reason")
    elif decision not in (None, "approve", "allow", "undefined"):
        raise _Malformed(f'decision must be "block" or "approve", not {decision!r}')
    permission = specific.get("permissionDecision")
    if permission is not None:
        if permission not in ("allow", "ask", "deny"):
            raise _Malformed(f'permissionDecision must be "allow", "ask" or "deny", not {permission!r}')
        fields["permission"] = permission
        reason = _text(specific, "permissionDecisionReason")
        if permission == "deny":
            fields["block"] = True
            fields["reason"] = reason or fields.get("reason")
        elif reason is not None and not fields.get("reason"):
            fields["reason"] = reason
    updated = specific.get("updatedInput")
    if updated is not None:
        if not isinstance(updated, dict):
            raise _Malformed("updatedInput must be an object of tool arguments")
        fields["updated_input"] = updated
    fields["context"] = _text(specific, "additionalContext")
    fields["updated_prompt"] = _text(specific, "updatedPrompt")
    output = specific.get("updatedToolOutput", data.get("updatedToolOutput"))
    if output is not None:
        if not isinstance(output, (str, list)):
            raise _Malformed("updatedToolOutput must be a string or a list of content blocks")
        fields["updated_output"] = output
    is_error = specific.get("isError")
    if is_error is not None:
        if not isinstance(is_error, bool):
            raise _Malformed("isError must be true or false")
        fields["is_error"] = is_error
    fields["system_prompt"] = _text(specific, "systemPrompt")
    fields["summary"] = _text(specific, "summary")
    return HookAnswer(**fields)


def interpret(command: HookCommand, result: CommandResult) -> HookAnswer:
    """Turn a finished command into a :class:`HookAnswer` (see the module docstring)."""
    if result.error is not None:
        return HookAnswer(failure=f"could not start: {result.error}")
    if result.timed_out:
        return HookAnswer(failure=f"timed out after {command.timeout:g} s; its process group was killed")
    if result.exit_code == 2:
        reason = result.stderr.strip() or f"blocked by the hook {command.label!r} (exit status 2)"
        return HookAnswer(block=True, reason=reason)
    if result.exit_code != 0:
        detail = f": {_preview(result.stderr)}" if result.stderr.strip() else ""
        return HookAnswer(failure=f"exited with status {result.exit_code}{detail}")
    output = result.stdout.strip()
    if not output:
        return HookAnswer()
    if not output.startswith("{"):
        if command.event in CONTEXT_EVENTS:
            return HookAnswer(context=output)
        return HookAnswer(failure=f"printed output that is not a JSON object: {_preview(output)}")
    try:
        data = json.loads(output)
    except json.JSONDecodeError as exc:
        return HookAnswer(
            failure=f"printed invalid JSON ({exc.msg} at line {exc.lineno}): {_preview(output)}"
        )
    if not isinstance(data, dict):
        return HookAnswer(failure=f"printed JSON that is not an object: {_preview(output)}")
    try:
        return _from_json(data)
    except _Malformed as exc:
        return HookAnswer(failure=f"answered with malformed JSON: {exc}")
