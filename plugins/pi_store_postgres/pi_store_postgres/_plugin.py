"""The hook: ``postgresql://`` and ``postgres://`` URIs open a :class:`PostgresStore`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pi_host import hookimpl

if TYPE_CHECKING:
    from pi_host import SessionStore

__all__ = ["pi_session_store"]

SCHEMES = ("postgresql://", "postgres://")


@hookimpl
def pi_session_store(uri: str) -> SessionStore | None:
    """A PostgreSQL store for ``postgresql://`` URIs; None for any other."""
    if not uri.lower().startswith(SCHEMES):
        return None
    from ._store import PostgresStore  # psycopg is imported only when the store is used

    return PostgresStore(uri)
