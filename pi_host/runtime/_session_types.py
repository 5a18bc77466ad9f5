"""What the session's parts share: its error, its outcomes, and the names of its callbacks.

Kept apart from :mod:`._session` so that the parts the session is composed of can raise and
return these without importing the session itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["SessionError", "SessionImport", "SessionListener", "StreamingBehavior", "TreeNavigation"]

SessionListener = Callable[[Any], Awaitable[None] | None]
"""``listener(event)``: every agent event and session event, in order."""

StreamingBehavior = Literal["steer", "followUp"]


class SessionError(RuntimeError):
    """The session cannot do what was asked (no model, no credentials, bad entry id …).

    Provisional public API (the embedding SDK): it may change before pi-host 1.0.
    """


@dataclass(frozen=True)
class SessionImport:
    """How ``/import`` went.

    :ivar cancelled: the user or a plugin (``pi_session_before_switch``) stopped it.
    :ivar file: the imported copy, now the session file.
    :ivar recorded_cwd: the working directory the session was recorded in, when it differs
        from the one this session works in.
    :ivar warnings: what was skipped while reading the file (malformed lines …).
    """

    cancelled: bool
    file: str | None = None
    recorded_cwd: str | None = None
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class TreeNavigation:
    """The outcome of :meth:`AgentSession.navigate_tree`.

    :ivar cancelled: a plugin cancelled the navigation, or the user aborted the summary.
    :ivar aborted: the user aborted the branch summary (pi: "Branch summarization cancelled").
    :ivar editor_text: the text of the user message navigated to, for re-editing.
    """

    cancelled: bool
    aborted: bool = False
    editor_text: str | None = None
