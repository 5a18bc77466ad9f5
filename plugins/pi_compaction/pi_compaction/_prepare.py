"""pi's compaction preparation: token estimates, cut points, split turns and file operations.

Pure functions over session entries (root first). A cut never separates a tool call from its
result: tool results are never cut points, so the results of a kept assistant reply are kept
with it. When the cut lands inside a turn, that turn's beginning is summarised separately.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pi_host import (
    AgentMessage,
    AssistantMessage,
    CompactionPreparation,
    FileOperations,
    ToolCall,
    build_session_context,
    context_tokens,
    entry_to_message,
    estimate_context_tokens,
    estimate_tokens,
)

from ._settings import CompactionSettings
from ._trigger import entry_ms, should_compact

__all__ = [
    "CutPoint",
    "add_file_ops",
    "context_tokens",
    "entry_ms",
    "estimate_context_tokens",
    "estimate_tokens",
    "extract_file_ops",
    "file_lists",
    "find_cut_point",
    "find_turn_start",
    "prepare_compaction",
    "should_compact",
]

# Message roles a cut may start at; a toolResult must stay behind its assistant reply.
_CUT_ROLES = frozenset({"user", "assistant", "bashExecution", "custom", "branchSummary", "compactionSummary"})


def _message(entry: Any) -> AgentMessage | None:
    return getattr(entry, "message", None) if entry.type == "message" else None


def _is_cut_point(entry: Any) -> bool:
    if entry.type in ("branch_summary", "custom_message"):
        return True
    message = _message(entry)
    return message is not None and getattr(message, "role", None) in _CUT_ROLES


def find_turn_start(entries: Sequence[Any], index: int, start: int) -> int:
    """The entry opening the turn that holds ``entries[index]`` (user, bash, branch summary or
    custom message), or ``-1``."""
    for i in range(index, start - 1, -1):
        entry = entries[i]
        if entry.type in ("branch_summary", "custom_message"):
            return i
        message = _message(entry)
        if message is not None and getattr(message, "role", None) in ("user", "bashExecution"):
            return i
    return -1


@dataclass(frozen=True)
class CutPoint:
    """Where to cut: keep from ``first_kept_index``; ``turn_start_index`` when a turn is split."""

    first_kept_index: int
    turn_start_index: int = -1
    is_split_turn: bool = False


def find_cut_point(entries: Sequence[Any], start: int, end: int, keep_recent_tokens: int) -> CutPoint:
    """Keep about ``keep_recent_tokens`` of the newest messages of ``entries[start:end]``."""
    cut_points = [i for i in range(start, end) if _is_cut_point(entries[i])]
    if not cut_points:
        return CutPoint(first_kept_index=start)
    cut = cut_points[0]
    accumulated = 0
    for i in range(end - 1, start - 1, -1):
        message = _message(entries[i])
        if message is None:
            continue
        accumulated += estimate_tokens(message)
        if accumulated >= keep_recent_tokens:
            cut = next((c for c in cut_points if c >= i), cut)
            break
    # Settings and label entries just before the cut travel with it.
    while cut > start and entries[cut - 1].type not in ("message", "compaction"):
        cut -= 1
    message = _message(entries[cut])
    if message is not None and getattr(message, "role", None) == "user":
        return CutPoint(first_kept_index=cut)
    turn_start = find_turn_start(entries, cut, start)
    return CutPoint(first_kept_index=cut, turn_start_index=turn_start, is_split_turn=turn_start != -1)


def _summarises_anything(entries: Sequence[Any], start: int, cut: CutPoint) -> bool:
    end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_index
    return any(_for_summary(entry) is not None for entry in entries[start:end]) or cut.is_split_turn


def _latest_user_message(entries: Sequence[Any], start: int) -> int | None:
    """The index of the last user message after ``start`` with something before it to summarise."""
    for index in range(len(entries) - 1, start, -1):
        message = _message(entries[index])
        if message is not None and getattr(message, "role", None) == "user":
            if any(_for_summary(entry) is not None for entry in entries[start:index]):
                return index
            return None
    return None


def extract_file_ops(messages: Sequence[AgentMessage], previous: Any = None) -> FileOperations:
    """Paths passed to ``read`` / ``write`` / ``edit`` calls, plus the files a previous
    pi-generated compaction entry (``previous``) recorded."""
    read: set[str] = set()
    written: set[str] = set()
    edited: set[str] = set()
    details = getattr(previous, "details", None)
    if previous is not None and not getattr(previous, "from_hook", None) and isinstance(details, dict):
        read.update(f for f in details.get("readFiles", ()) if isinstance(f, str))
        edited.update(f for f in details.get("modifiedFiles", ()) if isinstance(f, str))
    for message in messages:
        add_file_ops(message, read, written, edited)
    return FileOperations(read=frozenset(read), written=frozenset(written), edited=frozenset(edited))


def add_file_ops(message: AgentMessage, read: set[str], written: set[str], edited: set[str]) -> None:
    """Add the ``path`` of each ``read`` / ``write`` / ``edit`` call in ``message`` to its set."""
    if not isinstance(message, AssistantMessage):
        return
    sinks = {"read": read, "write": written, "edit": edited}
    for block in message.content:
        if isinstance(block, ToolCall) and block.name in sinks:
            path = (block.arguments or {}).get("path")
            if isinstance(path, str) and path:
                sinks[block.name].add(path)


def file_lists(ops: FileOperations) -> tuple[list[str], list[str]]:
    """``(read_only, modified)``, both sorted: files only read, and files edited or written."""
    modified = ops.edited | ops.written
    return sorted(ops.read - modified), sorted(modified)


def _for_summary(entry: Any) -> AgentMessage | None:
    # A previous compaction is carried by previous_summary, not as a message.
    return None if entry.type == "compaction" else entry_to_message(entry)


def prepare_compaction(
    entries: Sequence[Any], settings: CompactionSettings | None = None, *, reason: str = "threshold"
) -> CompactionPreparation | None:
    """pi's ``prepareCompaction`` over a branch (root first); ``None`` when nothing to do.

    When everything fits ``keepRecentTokens`` the cut keeps the whole history, and what
    happens then depends on ``reason``:

    - ``"manual"``: the compaction goes ahead as pi's does (its summary covers what is before
      the first kept entry, possibly nothing), unless the branch holds no message at all;
    - ``"overflow"``: the provider said the context does not fit, which beats the local
      estimate: the cut moves to the latest user message, so the history before the turn
      being answered is summarised (``None`` if there is none);
    - ``"threshold"``: nothing to do (checked after every turn of a long tool loop).
    """
    settings = settings or CompactionSettings()
    if not entries or entries[-1].type == "compaction":
        return None
    previous_index = next((i for i in range(len(entries) - 1, -1, -1) if entries[i].type == "compaction"), -1)
    previous = entries[previous_index] if previous_index >= 0 else None
    start = 0
    if previous is not None:
        kept = next((i for i, e in enumerate(entries) if e.id == previous.first_kept_entry_id), -1)
        start = kept if kept >= 0 else previous_index + 1
    tokens_before = estimate_context_tokens(build_session_context(list(entries)).messages)
    cut = find_cut_point(entries, start, len(entries), settings.keep_recent_tokens)
    if reason == "overflow" and not _summarises_anything(entries, start, cut):
        latest_user = _latest_user_message(entries, start)
        if latest_user is None:
            return None
        cut = CutPoint(first_kept_index=latest_user)
    first_kept = entries[cut.first_kept_index] if cut.first_kept_index < len(entries) else None
    if first_kept is None or not first_kept.id:
        return None
    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_index
    to_summarize = [m for e in entries[start:history_end] if (m := _for_summary(e)) is not None]
    prefix: list[AgentMessage] = []
    if cut.is_split_turn:
        prefix = [
            m
            for e in entries[cut.turn_start_index : cut.first_kept_index]
            if (m := _for_summary(e)) is not None
        ]
    # pi compacts a small session on request (the summary covers what little there is); a
    # session without a single message has nothing to compact.
    has_messages = any(_message(entry) is not None for entry in entries[start:])
    if not to_summarize and not prefix and (reason != "manual" or not has_messages):
        return None
    return CompactionPreparation(
        first_kept_entry_id=first_kept.id,
        messages_to_summarize=tuple(to_summarize),
        turn_prefix_messages=tuple(prefix),
        is_split_turn=cut.is_split_turn,
        tokens_before=tokens_before,
        previous_summary=getattr(previous, "summary", None),
        file_ops=extract_file_ops([*to_summarize, *prefix], previous),
        settings=settings,
    )
