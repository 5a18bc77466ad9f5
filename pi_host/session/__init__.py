"""The session store: pi's JSONL (version 3) session files, read lazily and appended safely.

A session is a tree of entries with a movable leaf; :class:`SessionManager` creates, opens,
appends to, branches and lists sessions, and :func:`build_session_context` resolves what the
model is sent at a leaf. Files are byte-compatible with pi 0.73 in both directions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pi_host import _lazy

if TYPE_CHECKING:
    from ._backend import (
        SessionStore,
        SessionStoreError,
        StoredSession,
        entry_key,
        header_fields,
        header_parent,
        split_new_lines,
    )
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
    from ._jsonl_store import JsonlStore
    from ._listing import (
        SessionInfo,
        find_most_recent_session,
        list_all_sessions,
        list_sessions,
        read_session_info,
    )
    from ._migrate import migrate_entries
    from ._paths import (
        SESSION_ID_PATTERN,
        agent_dir,
        default_session_dir,
        session_file_name,
        validate_session_id,
    )
    from ._sqlite_store import SqliteStore
    from ._store import (
        EntryNotFoundError,
        NextSession,
        SessionFileError,
        SessionManager,
        SessionTreeNode,
        check_session_file,
    )
    from ._uri import DEFAULT_STORE_URI, builtin_store, session_reference, split_session_reference, uri_scheme

__all__ = [
    "CURRENT_SESSION_VERSION",
    "DEFAULT_STORE_URI",
    "SESSION_ID_PATTERN",
    "BranchSummaryEntry",
    "CompactionEntry",
    "CustomEntry",
    "CustomMessageEntry",
    "EntryNotFoundError",
    "FileEntry",
    "JsonlStore",
    "LabelEntry",
    "ModelChangeEntry",
    "ModelRef",
    "NextSession",
    "SessionContext",
    "SessionEntry",
    "SessionFileError",
    "SessionHeader",
    "SessionInfo",
    "SessionInfoEntry",
    "SessionManager",
    "SessionMessageEntry",
    "SessionStore",
    "SessionStoreError",
    "SessionTreeNode",
    "SessionWarning",
    "SqliteStore",
    "StoredSession",
    "ThinkingLevelChangeEntry",
    "UnknownEntry",
    "agent_dir",
    "build_session_context",
    "builtin_store",
    "check_session_file",
    "default_session_dir",
    "entry_key",
    "entry_to_message",
    "find_most_recent_session",
    "header_fields",
    "header_parent",
    "list_all_sessions",
    "list_sessions",
    "migrate_entries",
    "parse_entry",
    "parse_header",
    "read_session_info",
    "session_file_name",
    "session_reference",
    "split_new_lines",
    "split_session_reference",
    "uri_scheme",
    "validate_session_id",
]

# Names are imported on first access (PEP 562): a new session needs the store, not the
# listing of sessions or the migration of old files.
_EXPORTS: dict[str, str] = {
    "BranchSummaryEntry": "_entries",
    "CURRENT_SESSION_VERSION": "_entries",
    "DEFAULT_STORE_URI": "_uri",
    "JsonlStore": "_jsonl_store",
    "SessionStore": "_backend",
    "SessionStoreError": "_backend",
    "SqliteStore": "_sqlite_store",
    "StoredSession": "_backend",
    "builtin_store": "_uri",
    "entry_key": "_backend",
    "header_fields": "_backend",
    "header_parent": "_backend",
    "split_new_lines": "_backend",
    "session_reference": "_uri",
    "split_session_reference": "_uri",
    "uri_scheme": "_uri",
    "CompactionEntry": "_entries",
    "CustomEntry": "_entries",
    "CustomMessageEntry": "_entries",
    "EntryNotFoundError": "_store",
    "FileEntry": "_entries",
    "LabelEntry": "_entries",
    "ModelChangeEntry": "_entries",
    "ModelRef": "_context",
    "NextSession": "_store",
    "SESSION_ID_PATTERN": "_paths",
    "SessionContext": "_context",
    "SessionEntry": "_entries",
    "SessionFileError": "_store",
    "SessionHeader": "_entries",
    "SessionInfo": "_listing",
    "SessionInfoEntry": "_entries",
    "SessionManager": "_store",
    "SessionMessageEntry": "_entries",
    "SessionTreeNode": "_store",
    "SessionWarning": "_index",
    "ThinkingLevelChangeEntry": "_entries",
    "UnknownEntry": "_entries",
    "agent_dir": "_paths",
    "build_session_context": "_context",
    "check_session_file": "_store",
    "default_session_dir": "_paths",
    "entry_to_message": "_context",
    "find_most_recent_session": "_listing",
    "list_all_sessions": "_listing",
    "list_sessions": "_listing",
    "migrate_entries": "_migrate",
    "parse_entry": "_entries",
    "parse_header": "_entries",
    "read_session_info": "_listing",
    "session_file_name": "_paths",
    "validate_session_id": "_paths",
}


__getattr__, __dir__ = _lazy.lazy_exports(__name__, _EXPORTS, __all__)
