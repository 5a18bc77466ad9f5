"""The built-in session stores: pi's JSONL files (the default) and SQLite.

An essential plugin (registered by module path, cannot be disabled). Its ``pi_session_store``
runs last, so a plugin may serve these schemes differently.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pi_host.hookspecs import hookimpl

if TYPE_CHECKING:
    from pi_host.session import SessionStore

__all__ = ["pi_session_store"]


@hookimpl(trylast=True)
def pi_session_store(uri: str) -> SessionStore | None:
    """``sqlite:///path``; ``jsonl:DIR``, ``file:///DIR`` or a plain directory (pi's files)."""
    from pi_host.session import builtin_store

    return builtin_store(uri)
