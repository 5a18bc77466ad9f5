"""pi-store-postgres: pi-host sessions in PostgreSQL, for agents with no shared disk.

``--session-store postgresql://user:password@host:5432/db`` (or the ``sessionStore``
setting). The tables (``pi_sessions``, ``pi_entries``) are created on first use.

The entry point imports this package on every pi-host start, so psycopg (about a second to
import) is loaded only when a PostgreSQL store is opened or :class:`PostgresStore` is asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._plugin import pi_session_store

if TYPE_CHECKING:
    from ._store import PostgresStore

__all__ = ["PostgresStore", "pi_session_store"]


def __getattr__(name: str) -> Any:
    if name == "PostgresStore":
        from ._store import PostgresStore

        return PostgresStore
    raise AttributeError(f"module 'pi_store_postgres' has no attribute {name!r}")
