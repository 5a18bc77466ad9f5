"""Sessions in one SQLite database (stdlib ``sqlite3``), for many writers on one machine."""

from __future__ import annotations

import builtins
import os
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ._backend import (
    SessionStore,
    SessionStoreError,
    StoredSession,
    header_fields,
    header_parent,
    split_new_lines,
)

__all__ = ["SqliteStore", "sqlite_path"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS pi_sessions (
    id TEXT PRIMARY KEY,
    header TEXT NOT NULL,
    cwd TEXT NOT NULL,
    started TEXT NOT NULL,
    entries INTEGER NOT NULL DEFAULT 0,
    modified REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS pi_entries (
    session_id TEXT NOT NULL REFERENCES pi_sessions(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    entry_id TEXT,
    line TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE UNIQUE INDEX IF NOT EXISTS pi_entries_by_id ON pi_entries(session_id, entry_id)
    WHERE entry_id IS NOT NULL;
"""

BUSY_TIMEOUT_S = 30.0
"""How long a writer waits for another one's transaction before giving up."""


def sqlite_path(uri: str) -> Path:
    """The database file of a ``sqlite:///path`` URI (``sqlite:////abs`` and ``sqlite:///rel``
    as in SQLAlchemy; ``sqlite:///~/x.db`` expands the home directory).

    :raises SessionStoreError: for a URI without a path.
    """
    parts = urlsplit(uri)
    path = unquote(parts.path)
    if parts.netloc or not path or path == "/":
        raise SessionStoreError(
            f"{uri!r} names no database file: write sqlite:///relative/path.db or sqlite:////absolute/path.db"
        )
    path = path[1:]  # the slash after the (empty) host
    return Path(os.path.abspath(os.path.expanduser(path)))


class SqliteStore(SessionStore):
    """Sessions in a SQLite database: WAL journal, a busy timeout, and each append one
    ``BEGIN IMMEDIATE`` transaction, so writers from many processes queue instead of failing
    with "database is locked". Lines are stored as text, unchanged."""

    def __init__(self, path: str | os.PathLike[str], *, uri: str | None = None) -> None:
        self._path = Path(os.path.abspath(path))
        self._uri = uri or f"sqlite:///{self._path}"
        self._lock = threading.Lock()
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(
                self._path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
            self._db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA foreign_keys = ON")
            self._db.execute("PRAGMA synchronous = NORMAL")  # WAL: durable at checkpoints, never torn
            self._db.executescript("BEGIN IMMEDIATE;" + _SCHEMA + "COMMIT;")
        except sqlite3.DatabaseError as exc:
            raise SessionStoreError(
                f"{self._path} cannot be used as a session database ({exc}); give a new file or "
                "one made by pi-host"
            ) from exc

    @property
    def uri(self) -> str:
        return self._uri

    def append(self, session_id: str, lines: Sequence[str]) -> None:
        if not lines:
            return
        with self._lock:
            db = self._db
            try:
                db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise OSError(f"{self._path}: {exc}") from exc
            try:
                row = db.execute("SELECT entries FROM pi_sessions WHERE id = ?", (session_id,)).fetchone()
                exists = row is not None
                ids = {entry_id for _, entry_id in _ids_in(lines) if entry_id is not None}
                known: set[str] = set()
                if exists and ids:
                    marks = ",".join("?" * len(ids))
                    known = {
                        found
                        for (found,) in db.execute(
                            f"SELECT entry_id FROM pi_entries WHERE session_id = ? AND entry_id IN ({marks})",
                            (session_id, *ids),
                        )
                    }
                header, new = split_new_lines(session_id, lines, exists=exists, known=known)
                now = time.time()
                if header is not None:
                    _, cwd, started = header_fields(header)
                    db.execute(
                        "INSERT INTO pi_sessions (id, header, cwd, started, entries, modified) "
                        "VALUES (?, ?, ?, ?, 0, ?)",
                        (session_id, header, cwd, started, now),
                    )
                    count = 0
                else:
                    count = row[0] if row is not None else 0
                if new:
                    db.executemany(
                        "INSERT INTO pi_entries (session_id, seq, entry_id, line) VALUES (?, ?, ?, ?)",
                        [(session_id, count + n, entry_id, line) for n, (entry_id, line) in enumerate(new)],
                    )
                if header is not None or new:
                    db.execute(
                        "UPDATE pi_sessions SET entries = ?, modified = ? WHERE id = ?",
                        (count + len(new), now, session_id),
                    )
                db.execute("COMMIT")
            except BaseException as exc:
                db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.OperationalError):
                    raise OSError(f"{self._path}: {exc}") from exc
                raise

    def load(self, session_id: str) -> builtins.list[str] | None:
        with self._lock:
            db = self._db
            db.execute("BEGIN")  # one snapshot: the header and the entries agree
            try:
                row = db.execute("SELECT header FROM pi_sessions WHERE id = ?", (session_id,)).fetchone()
                if row is None:
                    return None
                lines = [row[0]]
                lines.extend(
                    line
                    for (line,) in db.execute(
                        "SELECT line FROM pi_entries WHERE session_id = ? ORDER BY seq", (session_id,)
                    )
                )
                return lines
            finally:
                db.execute("COMMIT")

    def list(self) -> builtins.list[StoredSession]:
        with self._lock:
            rows = self._db.execute(
                "SELECT id, cwd, started, entries, modified, header FROM pi_sessions ORDER BY modified DESC"
            ).fetchall()
        return [
            StoredSession(
                id=session_id,
                cwd=cwd,
                timestamp=started,
                entries=entries,
                modified=modified,
                location=f"{self._uri}#{session_id}",
                parent_session=header_parent(header),
            )
            for session_id, cwd, started, entries, modified, header in rows
        ]

    def delete(self, session_id: str) -> bool:
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute("DELETE FROM pi_entries WHERE session_id = ?", (session_id,))
                gone = db.execute("DELETE FROM pi_sessions WHERE id = ?", (session_id,)).rowcount
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        return gone > 0

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _ids_in(lines: Sequence[str]) -> builtins.list[tuple[str, str | None]]:
    from ._backend import entry_key

    keys = []
    for line in lines:
        try:
            keys.append(entry_key(line))
        except SessionStoreError:
            continue  # reported by split_new_lines, with the line
    return keys
