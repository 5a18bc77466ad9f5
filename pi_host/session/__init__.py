"""The session store: pi's JSONL (version 3) session files, read lazily and appended safely.

A session is a tree of entries with a movable leaf; :class:`SessionManager` creates, opens,
appends to, branches and lists sessions, and :func:`build_session_context` resolves what the
model is sent at a leaf. Files are byte-compatible with pi 0.73 in both directions.
"""

from __future__ import annotations

from ._context import ModelRef, SessionContext, build_session_context, entry_to_message
from ._entries import (
    CURRENT_SESSION_VERSION,
    BranchSummaryEntry,
    CompactionEntry,
    CustomEntry,
    CustomMessageEntry,
    FileEntry,
    LabelEntry,
    ModelChangeEntry,
    SessionEntry,
    SessionHeader,
    SessionInfoEntry,
    SessionMessageEntry,
    ThinkingLevelChangeEntry,
    UnknownEntry,
    parse_entry,
    parse_header,
)
from ._index import SessionWarning
from ._listing import (
    SessionInfo,
    find_most_recent_session,
    list_all_sessions,
    list_sessions,
    read_session_info,
)
from ._migrate import migrate_entries
from ._paths import SESSION_ID_PATTERN, agent_dir, default_session_dir, session_file_name, validate_session_id
from ._store import EntryNotFoundError, SessionManager, SessionTreeNode

__all__ = [
    "CURRENT_SESSION_VERSION",
    "SESSION_ID_PATTERN",
    "BranchSummaryEntry",
    "CompactionEntry",
    "CustomEntry",
    "CustomMessageEntry",
    "EntryNotFoundError",
    "FileEntry",
    "LabelEntry",
    "ModelChangeEntry",
    "ModelRef",
    "SessionContext",
    "SessionEntry",
    "SessionHeader",
    "SessionInfo",
    "SessionInfoEntry",
    "SessionManager",
    "SessionMessageEntry",
    "SessionTreeNode",
    "SessionWarning",
    "ThinkingLevelChangeEntry",
    "UnknownEntry",
    "agent_dir",
    "build_session_context",
    "default_session_dir",
    "entry_to_message",
    "find_most_recent_session",
    "list_all_sessions",
    "list_sessions",
    "migrate_entries",
    "parse_entry",
    "parse_header",
    "read_session_info",
    "session_file_name",
    "validate_session_id",
]
