"""What a session sends to the model: the messages on the path to a leaf, and its settings."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import EllipsisType

from pi_host.messages import (
    AgentMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
)

from ._entries import (
    BranchSummaryEntry,
    CompactionEntry,
    CustomMessageEntry,
    ModelChangeEntry,
    SessionEntry,
    SessionMessageEntry,
    ThinkingLevelChangeEntry,
    iso_to_ms,
)

__all__ = ["ModelRef", "SessionContext", "build_session_context", "entry_to_message", "path_to_root"]


@dataclass(frozen=True, slots=True)
class ModelRef:
    """A model named by provider and id, as session entries record it."""

    provider: str
    model_id: str


@dataclass(frozen=True, slots=True)
class SessionContext:
    """The resolved state of a session at its leaf.

    Provisional public API (the embedding SDK): it may change before pi-host 1.0.

    :ivar messages: what the model sees, in order: after a compaction, its summary first, then
        the kept entries, then everything after the compaction.
    :ivar thinking_level: from the last ``thinking_level_change`` on the path, ``"off"`` if none.
    :ivar model: from the last ``model_change`` or assistant message on the path.
    :ivar has_thinking_entry: whether a ``thinking_level_change`` is on the path at all (pi's
        runtime records the current level on resume when there is none).
    """

    messages: list[AgentMessage] = field(default_factory=list)
    thinking_level: str = "off"
    model: ModelRef | None = None
    has_thinking_entry: bool = False


def entry_to_message(entry: SessionEntry) -> AgentMessage | None:
    """The message an entry contributes to the context, if any.

    ``message`` entries give their message, ``custom_message`` entries a
    :class:`~pi_host.messages.CustomMessage`, ``branch_summary`` entries with a non-empty
    summary a :class:`~pi_host.messages.BranchSummaryMessage`; other entries give nothing.
    """
    if isinstance(entry, SessionMessageEntry):
        return entry.message
    if isinstance(entry, CustomMessageEntry):
        return CustomMessage(
            custom_type=entry.custom_type,
            content=entry.content,
            display=entry.display,
            details=entry.details,
            timestamp=iso_to_ms(entry.timestamp),
        )
    if isinstance(entry, BranchSummaryEntry) and entry.summary:
        return BranchSummaryMessage(
            summary=entry.summary, from_id=entry.from_id, timestamp=iso_to_ms(entry.timestamp)
        )
    return None


def path_to_root(leaf: SessionEntry, lookup: Callable[[str], SessionEntry | None]) -> list[SessionEntry]:
    """The entries from the root down to ``leaf``, following ``parent_id``.

    The walk stops at a missing parent (the path then starts at the orphan) and at a cycle,
    which a hand-edited file can contain.
    """
    path = [leaf]
    seen = {leaf.id}
    current = leaf
    while current.parent_id is not None:
        parent = lookup(current.parent_id)
        if parent is None or parent.id in seen:
            break
        path.append(parent)
        seen.add(parent.id)
        current = parent
    path.reverse()
    return path


def build_session_context(
    entries: Sequence[SessionEntry],
    leaf_id: str | EllipsisType | None = ...,
    by_id: Mapping[str, SessionEntry] | None = None,
) -> SessionContext:
    """Resolve the context at ``leaf_id`` from a session's entries (pi's ``buildSessionContext``).

    :param entries: every entry of the session, in file order.
    :param leaf_id: the leaf to resolve; ``None`` means "before the first entry" (empty
        context); omitted, or an id not among ``entries``, means the last entry.
    :param by_id: an id index of ``entries``, if the caller has one.
    """
    if leaf_id is None:
        return SessionContext()
    if by_id is None:
        by_id = {entry.id: entry for entry in entries}
    leaf = by_id.get(leaf_id) if isinstance(leaf_id, str) else None
    if leaf is None:
        if not entries:
            return SessionContext()
        leaf = entries[-1]
    return context_from_path(path_to_root(leaf, by_id.get))


def context_from_path(path: Sequence[SessionEntry]) -> SessionContext:
    """Resolve the context of a root-to-leaf path (see :func:`build_session_context`)."""
    thinking_level = "off"
    has_thinking_entry = False
    model: ModelRef | None = None
    compaction_index = -1
    for index, entry in enumerate(path):
        if isinstance(entry, ThinkingLevelChangeEntry):
            thinking_level = entry.thinking_level
            has_thinking_entry = True
        elif isinstance(entry, ModelChangeEntry):
            model = ModelRef(entry.provider, entry.model_id)
        elif isinstance(entry, SessionMessageEntry) and entry.message.role == "assistant":
            model = ModelRef(entry.message.provider, entry.message.model)
        elif isinstance(entry, CompactionEntry):
            compaction_index = index
    return SessionContext(
        messages=messages_from_path(path, compaction_index),
        thinking_level=thinking_level,
        model=model,
        has_thinking_entry=has_thinking_entry,
    )


def messages_from_path(path: Sequence[SessionEntry], compaction_index: int) -> list[AgentMessage]:
    """The context messages of a root-to-leaf path whose last compaction is at ``compaction_index``.

    With ``compaction_index`` -1 (no compaction) every entry contributes.
    """
    compaction = path[compaction_index] if compaction_index >= 0 else None
    assert compaction is None or isinstance(compaction, CompactionEntry)
    items = [(entry.id, entry_to_message(entry)) for entry in path]
    return messages_from_items(items, compaction, compaction_index)


def messages_from_items(
    items: Sequence[tuple[str, AgentMessage | None]],
    compaction: CompactionEntry | None,
    compaction_index: int,
) -> list[AgentMessage]:
    """:func:`messages_from_path` for a path given as each entry's id and :func:`entry_to_message`.

    A walk can then let go of each entry as it goes (a resumed session's entries are otherwise
    all alive at once, beside their messages); ``compaction`` is the entry at ``compaction_index``.
    """
    if compaction is None:
        return [message for _, message in items if message is not None]
    messages: list[AgentMessage] = [
        CompactionSummaryMessage(
            summary=compaction.summary,
            tokens_before=compaction.tokens_before,
            timestamp=iso_to_ms(compaction.timestamp),
        )
    ]
    before = items[:compaction_index]
    for start, (entry_id, _) in enumerate(before):
        if entry_id == compaction.first_kept_entry_id:
            messages.extend(message for _, message in before[start:] if message is not None)
            break
    messages.extend(message for _, message in items[compaction_index + 1 :] if message is not None)
    return messages
