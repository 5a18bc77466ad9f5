"""From the agent transcript to what a provider is sent: ``convert_to_llm`` and history repair."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ._content import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from ._kinds import BLOCK_KINDS, MESSAGE_KINDS

__all__ = [
    "BRANCH_SUMMARY_PREFIX",
    "BRANCH_SUMMARY_SUFFIX",
    "COMPACTION_SUMMARY_PREFIX",
    "COMPACTION_SUMMARY_SUFFIX",
    "bash_execution_to_text",
    "convert_to_llm",
    "repair_tool_history",
]

COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
)
COMPACTION_SUMMARY_SUFFIX = "\n</summary>"
BRANCH_SUMMARY_PREFIX = (
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
)
BRANCH_SUMMARY_SUFFIX = "</summary>"

MISSING_TOOL_RESULT_TEXT = "No result provided"


def bash_execution_to_text(message: BashExecutionMessage) -> str:
    """Render a user ``!cmd`` run as the text the model reads."""
    text = f"Ran `{message.command}`\n"
    text += f"```\n{message.output}\n```" if message.output else "(no output)"
    if message.cancelled:
        text += "\n\n(command cancelled)"
    elif message.exit_code not in (None, 0):
        text += f"\n\nCommand exited with code {message.exit_code}"
    if message.truncated and message.full_output_path:
        text += f"\n\n[Output truncated. Full output: {message.full_output_path}]"
    return text


def _as_user(text: str, timestamp: int) -> UserMessage:
    return UserMessage(content=[TextContent(text=text)], timestamp=timestamp)


def convert_to_llm(messages: Iterable[AgentMessage]) -> list[Message]:
    """Map the coding-agent roles to user messages, as pi does; drop ``!!cmd`` runs.

    User, assistant and tool-result messages pass through unchanged (the same objects).
    """
    out: list[Message] = []
    kinds = MESSAGE_KINDS
    for m in messages:
        kind = kinds[type(m)]
        if kind is UserMessage or kind is AssistantMessage or kind is ToolResultMessage:
            out.append(m)  # type: ignore[arg-type]  # one of the three: the kind says so
        elif kind is BashExecutionMessage:
            assert isinstance(m, BashExecutionMessage)
            if not m.exclude_from_context:
                out.append(_as_user(bash_execution_to_text(m), m.timestamp))
        elif kind is CustomMessage:
            assert isinstance(m, CustomMessage)
            content = [TextContent(text=m.content)] if isinstance(m.content, str) else list(m.content)
            out.append(UserMessage(content=content, timestamp=m.timestamp))
        elif kind is BranchSummaryMessage:
            assert isinstance(m, BranchSummaryMessage)
            out.append(_as_user(BRANCH_SUMMARY_PREFIX + m.summary + BRANCH_SUMMARY_SUFFIX, m.timestamp))
        elif kind is CompactionSummaryMessage:
            assert isinstance(m, CompactionSummaryMessage)
            out.append(
                _as_user(COMPACTION_SUMMARY_PREFIX + m.summary + COMPACTION_SUMMARY_SUFFIX, m.timestamp)
            )
    return out


def repair_tool_history(messages: Sequence[Message]) -> list[Message]:
    """Make a provider-ready history valid: every tool call answered, every result called for.

    - An assistant message that ended in ``error`` or ``aborted`` is skipped: it is kept in the
      transcript for the user but never replayed to a model (pi does the same).
    - A tool call with no result before the next user or assistant message gets a synthetic
      error result (``No result provided``), placed right after the other results.
    - A tool result whose call is not pending (orphaned, or a duplicate) is dropped.
    """
    out: list[Message] = []
    pending: dict[str, ToolCall] = {}

    def flush() -> None:
        for call in pending.values():
            out.append(
                ToolResultMessage(
                    tool_call_id=call.id,
                    tool_name=call.name,
                    content=[TextContent(text=MISSING_TOOL_RESULT_TEXT)],
                    is_error=True,
                    timestamp=out[-1].timestamp if out else 0,
                )
            )
        pending.clear()

    kinds = MESSAGE_KINDS
    for m in messages:
        kind = kinds[type(m)]
        if kind is ToolResultMessage:
            assert isinstance(m, ToolResultMessage)  # a match costs little; a miss is what is slow
            if pending.pop(m.tool_call_id, None) is not None:
                out.append(m)
            continue
        if pending:
            flush()
        if kind is AssistantMessage:
            assert isinstance(m, AssistantMessage)
            if m.stop_reason in ("error", "aborted"):
                continue
            for block in m.content:
                if BLOCK_KINDS[type(block)] is ToolCall:
                    assert isinstance(block, ToolCall)
                    pending[block.id] = block
        out.append(m)
    flush()
    return out
