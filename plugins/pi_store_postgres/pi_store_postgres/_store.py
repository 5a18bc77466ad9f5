"""Sessions in PostgreSQL on psycopg 3, through a connection pool."""

from __future__ import annotations

import builtins
import json
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg_pool import ConnectionPool

from pi_host import SessionStore, SessionStoreError, StoredSession, header_parent, split_new_lines

__all__ = ["PostgresStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS pi_sessions (
    id TEXT PRIMARY KEY,
    header TEXT NOT NULL,
    cwd TEXT NOT NULL,
    started TEXT NOT NULL,
    entries INTEGER NOT NULL DEFAULT 0,
    modified DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS pi_entries (
    session_id TEXT NOT NULL REFERENCES pi_sessions(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    entry_id TEXT,
    line TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE UNIQUE INDEX IF NOT EXISTS pi_entries_by_id ON pi_entries (session_id, entry_id)
    WHERE entry_id IS NOT NULL;
"""

# Concurrent "CREATE TABLE IF NOT EXISTS" can still collide in the catalogue: the first
# process to start creates the schema while the others wait on this lock.
_SCHEMA_LOCK = 0x7069_686F_7374  # "pihost"


def _without_password(uri: str) -> str:
    parts = urlsplit(uri)
    if parts.password is None:
        return uri
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" if parts.username else host
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))


class PostgresStore(SessionStore):
    """Sessions in a PostgreSQL database: one transaction per append, the session's row
    locked (``SELECT ... FOR UPDATE``) while the entry ids are checked, so concurrent
    writers on any number of machines neither lose nor duplicate lines. Lines are ``TEXT``,
    unchanged.

    :param uri: a libpq connection URI (``postgresql://user:password@host:port/db``).
    :param min_size: connections the pool keeps open.
    :param max_size: connections the pool opens at most.
    :raises SessionStoreError: when the server cannot be reached or the tables created.
    """

    def __init__(self, uri: str, *, min_size: int = 1, max_size: int = 4, timeout: float = 30.0) -> None:
        self._uri = _without_password(uri)
        try:
            self._pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
                uri, min_size=min_size, max_size=max_size, timeout=timeout, open=False, name="pi-host"
            )
            self._pool.open(wait=True, timeout=timeout)
            with self._pool.connection() as conn, conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                conn.execute(_SCHEMA)
        except Exception as exc:  # psycopg and pool errors alike: none may escape as a crash
            if hasattr(self, "_pool"):
                self._pool.close()
            raise SessionStoreError(
                f"cannot use the PostgreSQL session store {self._uri}: {type(exc).__name__}: {exc}. "
                "Check that the server runs and the URI's user may create tables in the database"
            ) from exc

    @property
    def uri(self) -> str:
        return self._uri

    def append(self, session_id: str, lines: Sequence[str]) -> None:
        if not lines:
            return
        first = lines[0]
        try:
            with self._pool.connection() as conn, conn.transaction():
                row = conn.execute(
                    "SELECT entries FROM pi_sessions WHERE id = %s FOR UPDATE", (session_id,)
                ).fetchone()
                if row is None and _is_header(first):
                    header_id, cwd, started = _header(first)
                    if header_id != session_id:
                        raise SessionStoreError(f"the header names session {header_id!r}, not {session_id!r}")
                    split_new_lines(session_id, lines, exists=False, known=set())  # check first
                    conn.execute(
                        "INSERT INTO pi_sessions (id, header, cwd, started, entries, modified) "
                        "VALUES (%s, %s, %s, %s, 0, %s) ON CONFLICT (id) DO NOTHING",
                        (session_id, first, cwd, started, time.time()),
                    )
                    row = conn.execute(
                        "SELECT entries FROM pi_sessions WHERE id = %s FOR UPDATE", (session_id,)
                    ).fetchone()
                if row is None:
                    split_new_lines(session_id, lines, exists=False, known=set())  # raises: no header
                    return
                ids = [key for key in (_entry_id(line) for line in lines) if key is not None]
                known = {
                    found
                    for (found,) in conn.execute(
                        "SELECT entry_id FROM pi_entries WHERE session_id = %s AND entry_id = ANY(%s)",
                        (session_id, ids),
                    )
                }
                _, new = split_new_lines(session_id, lines, exists=True, known=known)
                count = int(row[0])
                if new:
                    with conn.cursor() as cur:
                        cur.executemany(
                            "INSERT INTO pi_entries (session_id, seq, entry_id, line) "
                            "VALUES (%s, %s, %s, %s)",
                            [
                                (session_id, count + n, entry_id, line)
                                for n, (entry_id, line) in enumerate(new)
                            ],
                        )
                    conn.execute(
                        "UPDATE pi_sessions SET entries = %s, modified = %s WHERE id = %s",
                        (count + len(new), time.time(), session_id),
                    )
        except psycopg.OperationalError as exc:
            raise OSError(f"{self._uri}: {exc}") from exc

    def load(self, session_id: str) -> builtins.list[str] | None:
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")  # one snapshot
            row = conn.execute("SELECT header FROM pi_sessions WHERE id = %s", (session_id,)).fetchone()
            if row is None:
                return None
            lines = [row[0]]
            lines.extend(
                line
                for (line,) in conn.execute(
                    "SELECT line FROM pi_entries WHERE session_id = %s ORDER BY seq", (session_id,)
                )
            )
            return lines

    def list(self) -> builtins.list[StoredSession]:
        with self._pool.connection() as conn:
            rows = conn.execute(
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
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("DELETE FROM pi_entries WHERE session_id = %s", (session_id,))
            gone = conn.execute("DELETE FROM pi_sessions WHERE id = %s", (session_id,)).rowcount
        return gone > 0

    def close(self) -> None:
        self._pool.close()


def _parsed(line: str) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None


def _is_header(line: str) -> bool:
    obj = _parsed(line)
    return isinstance(obj, dict) and obj.get("type") == "session" and isinstance(obj.get("id"), str)


def _header(line: str) -> tuple[str, str, str]:
    obj = _parsed(line)
    cwd, started = obj.get("cwd"), obj.get("timestamp")
    return obj["id"], cwd if isinstance(cwd, str) else "", started if isinstance(started, str) else ""


def _entry_id(line: str) -> str | None:
    obj = _parsed(line)
    if isinstance(obj, dict) and obj.get("type") != "session" and isinstance(obj.get("id"), str):
        return str(obj["id"])
    return None
