"""Structured hook arguments that pi_host.messages does not already model.

Most hooks receive plain values and message models as separate keyword arguments; the few
compound payloads (what a compaction or a tree navigation is about to do) are frozen models
defined here, with pi's field names in snake_case.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from pydantic import BaseModel, ConfigDict

from pi_host.messages import AgentMessage

__all__ = [
    "CompactionPreparation",
    "CompactionReason",
    "EntryView",
    "FileOperations",
    "InputSource",
    "ModelSelectSource",
    "SessionShutdownReason",
    "SessionStartReason",
    "StreamingBehavior",
    "TreePreparation",
]

InputSource: TypeAlias = Literal["interactive", "rpc", "extension"]
"""Where a prompt came from: the terminal, an RPC client, or a plugin (``send_user_message``)."""

StreamingBehavior: TypeAlias = Literal["steer", "followUp"]
"""How input that arrives during a run is queued."""

SessionStartReason: TypeAlias = Literal["startup", "reload", "new", "resume", "fork"]
SessionShutdownReason: TypeAlias = Literal["quit", "reload", "new", "resume", "fork"]
CompactionReason: TypeAlias = Literal["manual", "threshold", "overflow"]
ModelSelectSource: TypeAlias = Literal["set", "cycle", "restore"]


@runtime_checkable
class EntryView(Protocol):
    """What every session entry offers, whatever its type (pi's ``SessionEntryBase``).

    The session store's entry models satisfy this structurally; hooks that receive entries
    are typed with it so this layer does not depend on the store.
    """

    @property
    def type(self) -> str:
        """``message``, ``compaction``, ``branch_summary``, ``custom`` …"""
        ...

    @property
    def id(self) -> str: ...

    @property
    def parent_id(self) -> str | None: ...

    @property
    def timestamp(self) -> str:
        """ISO 8601 time the entry was written."""
        ...


class _Payload(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid", arbitrary_types_allowed=True)


class FileOperations(_Payload):
    """Files the summarised history touched, from ``read``/``write``/``edit`` tool calls."""

    read: frozenset[str] = frozenset()
    written: frozenset[str] = frozenset()
    edited: frozenset[str] = frozenset()


class CompactionPreparation(_Payload):
    """What a compaction is about to do (pi's ``CompactionPreparation``).

    :ivar first_kept_entry_id: the first entry kept verbatim after compaction.
    :ivar messages_to_summarize: the history the summary replaces.
    :ivar turn_prefix_messages: when the cut falls inside a turn, that turn's early part,
        summarised separately.
    :ivar is_split_turn: whether the cut falls inside a turn.
    :ivar tokens_before: the estimated context size now.
    :ivar previous_summary: the previous compaction's summary, for an iterative update.
    :ivar file_ops: files read and modified in the summarised history.
    :ivar settings: the settings the preparing plugin used (its own settings model, with
        pi's ``reserve_tokens`` and ``keep_recent_tokens`` if it follows pi), for the
        summariser's budgets; ``None`` when it gave none.
    """

    first_kept_entry_id: str
    messages_to_summarize: tuple[AgentMessage, ...] = ()
    turn_prefix_messages: tuple[AgentMessage, ...] = ()
    is_split_turn: bool = False
    tokens_before: int = 0
    previous_summary: str | None = None
    file_ops: FileOperations = FileOperations()
    settings: Any = None


class TreePreparation(_Payload):
    """What a session-tree navigation is about to do (pi's ``TreePreparation``).

    :ivar target_id: the entry being navigated to.
    :ivar old_leaf_id: the current leaf, ``None`` in an empty session.
    :ivar common_ancestor_id: where the old and new branches meet.
    :ivar entries_to_summarize: the entries of the branch being left.
    :ivar user_wants_summary: whether the user asked for a summary of that branch.
    :ivar custom_instructions: the user's instructions for the summary.
    :ivar replace_instructions: the instructions replace the default prompt.
    :ivar label: the label for the branch summary entry.
    """

    target_id: str
    old_leaf_id: str | None = None
    common_ancestor_id: str | None = None
    entries_to_summarize: tuple[EntryView, ...] = ()
    user_wants_summary: bool = False
    custom_instructions: str | None = None
    replace_instructions: bool | None = None
    label: str | None = None
