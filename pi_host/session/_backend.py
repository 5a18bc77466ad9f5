"""What a session store is: an append log of pi's exact entry lines per session.

A store knows nothing of the tree (ids as parents, branches, labels, compaction): the
:class:`~pi_host.session.SessionManager` keeps that. It keeps, per session id, the header
line first and then every entry line exactly as given, and answers load, list and delete.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = [
    "SessionStore",
    "SessionStoreError",
    "StoredSession",
    "entry_key",
    "header_fields",
    "header_parent",
    "split_new_lines",
]


class SessionStoreError(RuntimeError):
    """A store refused an operation (a malformed line, an unknown URI, a broken database).

    The message names the store and the remedy; nothing already stored was changed.
    """


class StoredSession(BaseModel):
    """One session of a store, as :meth:`SessionStore.list` reports it.

    :ivar id: the session id (the header's ``id``).
    :ivar cwd: the header's working directory.
    :ivar timestamp: the header's timestamp (when the session started).
    :ivar entries: how many entry lines follow the header.
    :ivar modified: when the last line was appended, in seconds since the epoch.
    :ivar location: where the store keeps it (a file path, a database URI), for people.
    :ivar parent_session: the header's ``parentSession``: the session it was started from (a
        sub-agent's parent, a fork's source) as a file path or ``<store URI>#<id>``; None
        when there is none, or the store does not report it.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    cwd: str
    timestamp: str
    entries: int
    modified: float
    location: str
    parent_session: str | None = None


def entry_key(line: str) -> tuple[str, str | None]:
    """A line's ``type`` and entry ``id`` (``None`` for lines without one, as in version 1).

    :raises SessionStoreError: when the line is not a JSON object (a store keeps only
        lines pi can read back).
    """
    try:
        obj: Any = json.loads(line)
    except ValueError as exc:
        raise SessionStoreError(f"not a JSON line ({exc}): {line[:80]!r}") from None
    if not isinstance(obj, dict):
        raise SessionStoreError(f"a session line must be a JSON object: {line[:80]!r}")
    kind = obj.get("type")
    entry_id = obj.get("id")
    return (kind if isinstance(kind, str) else ""), (entry_id if isinstance(entry_id, str) else None)


def header_fields(line: str) -> tuple[str, str, str]:
    """A header line's ``id``, ``cwd`` and ``timestamp``.

    :raises SessionStoreError: when the line is not a session header.
    """
    try:
        obj: Any = json.loads(line)
    except ValueError:
        obj = None
    if not isinstance(obj, dict) or obj.get("type") != "session" or not isinstance(obj.get("id"), str):
        raise SessionStoreError(
            'a new session must start with its header (a JSON line with "type": "session" and an "id"); '
            f"got {line[:80]!r}"
        )
    cwd, timestamp = obj.get("cwd"), obj.get("timestamp")
    return obj["id"], cwd if isinstance(cwd, str) else "", timestamp if isinstance(timestamp, str) else ""


def header_parent(line: str) -> str | None:
    """A header line's ``parentSession`` (None when it has none or is not JSON)."""
    try:
        obj: Any = json.loads(line)
    except ValueError:
        return None
    parent = obj.get("parentSession") if isinstance(obj, dict) else None
    return parent if isinstance(parent, str) else None


def split_new_lines(
    session_id: str, lines: Sequence[str], *, exists: bool, known: set[str]
) -> tuple[str | None, list[tuple[str | None, str]]]:
    """Check a batch for :meth:`SessionStore.append`: the header to store (for a new session)
    and the entry lines still to store, each with its id, in order. Store implementations
    call it inside their transaction, with the ids of ``lines`` the session already holds.

    Header lines of an existing session, and entries whose id is in ``known`` (or earlier in
    the batch), are dropped: appends are idempotent.

    :raises SessionStoreError: for a malformed line, or a new session whose first line is not
        its header (or whose header names another id).
    """
    header: str | None = None
    rest = list(lines)
    if not exists:
        if not rest:
            return None, []
        header_id, _, _ = header_fields(rest[0])
        if header_id != session_id:
            raise SessionStoreError(f"the header names session {header_id!r}, not {session_id!r}")
        header = rest.pop(0)
    out: list[tuple[str | None, str]] = []
    batch: set[str] = set()  # ids earlier in this batch (``known`` is not copied: it may be large)
    for line in rest:
        if "\n" in line or "\r" in line:
            raise SessionStoreError(f"a session line cannot hold a line break: {line[:80]!r}")
        kind, entry_id = entry_key(line)
        if kind == "session":
            continue  # the header again: a retried first append
        if entry_id is not None:
            if entry_id in known or entry_id in batch:
                continue
            batch.add(entry_id)
        out.append((entry_id, line))
    return header, out


class SessionStore(ABC):
    """Where sessions are kept: per session id, the header line and then pi's entry lines,
    exactly as appended.

    Implement the five methods; pass :func:`pi_host.testing.check_session_store` to be sure
    (round trips byte-identical, idempotent appends, concurrent writers from several
    processes). Return an instance from the ``pi_session_store`` hook for your URI scheme.

    Several processes may append to one session, or to one store, at once; a store must
    neither lose nor duplicate lines then. A store object itself is used from one thread at
    a time.
    """

    @property
    @abstractmethod
    def uri(self) -> str:
        """The URI this store was opened from (without a password)."""

    @abstractmethod
    def append(self, session_id: str, lines: Sequence[str]) -> None:
        """Append lines (each one JSON object, no line break) to a session, atomically.

        For a session not in the store yet, the first line must be its header. Header
        lines for an existing session, and entry lines whose ``id`` the session already
        holds, are skipped: appending the same batch again (a retry after a failure) is
        harmless. Lines are stored as text, unchanged.

        :raises SessionStoreError: for a malformed line or a new session without a header;
            nothing of the batch is stored then.
        :raises OSError: when the storage cannot be written (the caller retries later).
        """

    @abstractmethod
    def load(self, session_id: str) -> list[str] | None:
        """Every line of a session, header first, exactly as appended; None when there is
        no such session."""

    @abstractmethod
    def list(self) -> list[StoredSession]:
        """Every session in the store, most recently modified first."""

    @abstractmethod
    def delete(self, session_id: str) -> bool:
        """Remove a session; returns whether there was one."""

    def close(self) -> None:  # noqa: B027 - optional: most stores hold nothing to release
        """Release connections and files (the store may not be used afterwards)."""

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
