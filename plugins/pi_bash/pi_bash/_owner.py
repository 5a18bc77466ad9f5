"""The token a session's commands run with, so its background processes are its own."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pi_host import StashKey

if TYPE_CHECKING:
    from pi_host import Stash

__all__ = ["session_owner"]

_OWNER: StashKey[object] = StashKey()


def session_owner(ctx: Any) -> object | None:
    """The owner token of the session ``ctx`` (a plugin context) belongs to; ``None`` outside
    a session (a tool run by hand).

    Kept in the session's stash, which outlives ``/new`` and ``/resume`` (the session's
    background processes do too, as a terminal keeps its jobs) and is no other session's:
    many sessions may share one process (``create_session`` on one event loop).
    """
    stash: Stash | None = getattr(ctx, "stash", None)
    if stash is None:
        return None
    return stash.setdefault(_OWNER, object())
