"""pi-store-postgres: pi-host sessions in PostgreSQL, for agents with no shared disk.

``--session-store postgresql://user:password@host:5432/db`` (or the ``sessionStore``
setting). The tables (``pi_sessions``, ``pi_entries``) are created on first use.
"""

from __future__ import annotations

from ._plugin import pi_session_store
from ._store import PostgresStore

__all__ = ["PostgresStore", "pi_session_store"]
