"""A plugin UI for tests: records what plugins show and answers their dialogs from a script."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any

from pi_host.hookspecs import NotifyLevel

__all__ = ["RecordingUI"]


class RecordingUI:
    """Implements :class:`pi_host.hookspecs.PluginUI` for tests.

    ``notify`` calls land in :attr:`notifications`, status texts in :attr:`statuses`, widgets
    in :attr:`widgets`. Dialogs (``select``, ``confirm``, ``input``, ``editor``) take the next
    of :attr:`answers`; with none left they return what a dismissed dialog returns (``None``
    or ``False``). Every dialog is recorded in :attr:`dialogs` as ``(kind, title)``.

    Plugins check ``ctx.has_ui`` before asking: pass ``session_options={"mode": "rpc"}`` to
    ``make_host`` so that it is ``True``.
    """

    def __init__(self, answers: Iterable[Any] = ()) -> None:
        self.answers: deque[Any] = deque(answers)
        self.notifications: list[tuple[str, NotifyLevel]] = []
        self.statuses: dict[str, str | None] = {}
        self.widgets: dict[str, list[str] | None] = {}
        self.dialogs: list[tuple[str, str]] = []
        self.working_message: str | None = None
        self.title: str | None = None
        self.editor_text = ""

    def _answer(self, kind: str, title: str, default: Any) -> Any:
        self.dialogs.append((kind, title))
        return self.answers.popleft() if self.answers else default

    async def select(self, title: str, options: Sequence[str], *, timeout: float | None = None) -> str | None:
        answer = self._answer("select", title, None)
        assert answer is None or answer in options, (
            f"scripted answer {answer!r} is not one of {list(options)}"
        )
        return answer  # type: ignore[no-any-return]

    async def confirm(self, title: str, message: str, *, timeout: float | None = None) -> bool:
        return bool(self._answer("confirm", title, False))

    async def input(
        self, title: str, placeholder: str | None = None, *, timeout: float | None = None
    ) -> str | None:
        return self._answer("input", title, None)  # type: ignore[no-any-return]

    async def editor(self, title: str, prefill: str | None = None) -> str | None:
        return self._answer("editor", title, None)  # type: ignore[no-any-return]

    def notify(self, message: str, level: NotifyLevel = "info") -> None:
        self.notifications.append((message, level))

    def set_status(self, key: str, text: str | None) -> None:
        self.statuses[key] = text

    def set_widget(self, key: str, lines: Sequence[str] | None, *, placement: str = "aboveEditor") -> None:
        self.widgets[key] = None if lines is None else list(lines)

    def set_working_message(self, message: str | None = None) -> None:
        self.working_message = message

    def set_title(self, title: str) -> None:
        self.title = title

    def set_editor_text(self, text: str) -> None:
        self.editor_text = text

    def get_editor_text(self) -> str:
        return self.editor_text

    @property
    def messages(self) -> list[str]:
        """The notification texts, in order."""
        return [message for message, _ in self.notifications]
