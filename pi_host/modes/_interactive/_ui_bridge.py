"""Plugin UI requests (pi's ``ctx.ui``) rendered by the interactive mode.

The session runtime receives a :class:`UiBridge` through ``set_ui`` and forwards its plugins'
``ctx.ui`` calls to it. Dialogs (``select``, ``confirm``, ``input``, ``editor``) replace the editor
until answered and return ``None`` / ``False`` when cancelled; a caller that is cancelled (a
timeout) closes its dialog. The other calls draw at once and return nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

import anyio

if TYPE_CHECKING:
    from ._app import InteractiveApp

__all__ = ["UiBridge"]

NotifyLevel = Literal["info", "warning", "error"]
WidgetPlacement = Literal["aboveEditor", "belowEditor"]


class UiBridge:
    """The interactive mode's implementation of pi's extension UI context."""

    def __init__(self, app: InteractiveApp) -> None:
        self._app = app

    # dialogs -------------------------------------------------------------------------------

    async def select(self, title: str, options: Sequence[str], *, timeout: float | None = None) -> str | None:
        """Let the user pick one of ``options``; ``None`` if they press Esc or ``timeout`` passes."""
        choices = list(options)
        if not choices:
            return None
        index = None
        with anyio.move_on_after(timeout):
            index = await self._app.select(title, choices)
        return None if index is None else choices[index]

    async def confirm(self, title: str, message: str, *, timeout: float | None = None) -> bool:
        """Ask a yes/no question; Esc (or ``timeout``) means no."""
        answer = False
        with anyio.move_on_after(timeout):
            answer = await self._app.confirm(title, message)
        return answer

    async def input(
        self, title: str, placeholder: str | None = None, *, timeout: float | None = None
    ) -> str | None:
        """Ask for one line of text; ``None`` if they press Esc or ``timeout`` passes."""
        text = None
        with anyio.move_on_after(timeout):
            text = await self._app.input(title, placeholder)
        return text

    async def editor(self, title: str, prefill: str | None = None) -> str | None:
        """Let the user edit a multi-line text; ``None`` if they press Esc."""
        return await self._app.editor(title, prefill)

    # fire and forget -------------------------------------------------------------------------

    def notify(self, message: str, level: NotifyLevel = "info") -> None:
        """A line in the transcript: plain (info), ``Warning: …`` or ``Error: …``."""
        self._app.notice(message, level if level in ("info", "warning", "error") else "info")

    def set_status(self, key: str, text: str | None) -> None:
        """Set (or with ``None`` clear) a plugin's status in the footer; statuses sort by key."""
        if text is None:
            self._app.statuses.pop(key, None)
        else:
            self._app.statuses[key] = text
        self._app.invalidate()

    def set_widget(
        self, key: str, lines: Sequence[str] | None, placement: WidgetPlacement = "aboveEditor"
    ) -> None:
        """Show ``lines`` (ANSI styling allowed) above or below the editor; ``None`` removes it."""
        for store in (self._app.widgets_above, self._app.widgets_below):
            store.pop(key, None)
        if lines is not None:
            store = self._app.widgets_below if placement == "belowEditor" else self._app.widgets_above
            store[key] = [str(line) for line in lines]
        self._app.invalidate()

    def set_title(self, title: str) -> None:
        """Set the terminal window's title."""
        self._app.set_title(title)

    def set_editor_text(self, text: str) -> None:
        """Replace the editor's text (cursor at the end)."""
        buffer = self._app.buffer
        buffer.text = text
        buffer.cursor_position = len(text)
        self._app.invalidate()

    def get_editor_text(self) -> str:
        return self._app.buffer.text

    def set_working_message(self, message: str | None = None) -> None:
        """Replace the spinner's "Working..." text while the agent runs; ``None`` restores it."""
        self._app.set_working_message(message)
