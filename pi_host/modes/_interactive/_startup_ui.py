"""The plugin UI of interactive mode before its screen exists: questions asked at start-up.

The session is created before the terminal UI starts, and creating it may need the user: an
undecided project's trust, or a plugin's ``pi_project_trust`` asking through ``ctx.ui``. This UI
asks inline in the terminal with prompt_toolkit prompts that end before the full-screen app
takes over. Escape or Ctrl+C dismisses a question (``None``, or ``False`` for a confirmation),
as the app's own dialogs do.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

import anyio

from pi_host.runtime._context import NullUI

if TYPE_CHECKING:
    from prompt_toolkit.key_binding import KeyBindings

    from pi_host.hookspecs import NotifyLevel

__all__ = ["StartupUI"]

T = TypeVar("T")


class _Dismissed(Exception):
    """Escape or Ctrl+C in a start-up question."""


def _dismiss_keys(*, escape: bool = True) -> KeyBindings:
    """Ctrl+C, and Escape unless the prompt needs it (Esc then Enter ends a multi-line text)."""
    from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

    bindings = KeyBindings()

    def dismiss(event: KeyPressEvent) -> None:
        event.app.exit(exception=_Dismissed())

    bindings.add("c-c")(dismiss)
    if escape:
        bindings.add("escape", eager=True)(dismiss)
    return bindings


async def _ask(question: Callable[[], Awaitable[T]], timeout: float | None) -> T | None:
    with anyio.move_on_after(timeout):
        try:
            return await question()
        except (_Dismissed, EOFError):
            return None
    return None


class StartupUI(NullUI):
    """:class:`pi_host.hookspecs.PluginUI` for the moments before interactive mode's screen.

    Footer, widget, title and editor calls are :class:`~pi_host.runtime._context.NullUI`'s: they
    have no screen to go to yet.
    """

    async def select(self, title: str, options: Sequence[str], *, timeout: float | None = None) -> str | None:
        from prompt_toolkit.shortcuts.choice_input import ChoiceInput

        choice = ChoiceInput(
            message=title,
            options=[(option, option) for option in options],
            key_bindings=_dismiss_keys(),
            interrupt_exception=_Dismissed,
        )
        return await _ask(choice.prompt_async, timeout)

    async def confirm(self, title: str, message: str, *, timeout: float | None = None) -> bool:
        question = f"{title}\n{message}" if message else title
        return await self.select(question, ["Yes", "No"], timeout=timeout) == "Yes"

    async def input(
        self, title: str, placeholder: str | None = None, *, timeout: float | None = None
    ) -> str | None:
        from prompt_toolkit import PromptSession

        session: PromptSession[str] = PromptSession(
            f"{title}\n> ", placeholder=placeholder, key_bindings=_dismiss_keys()
        )
        return await _ask(session.prompt_async, timeout)

    async def editor(self, title: str, prefill: str | None = None) -> str | None:
        from prompt_toolkit import PromptSession

        session: PromptSession[str] = PromptSession(
            f"{title} (Alt+Enter to finish, Ctrl+C to cancel)\n",
            multiline=True,
            key_bindings=_dismiss_keys(escape=False),
        )
        return await _ask(lambda: session.prompt_async(default=prefill or ""), None)

    def notify(self, message: str, level: NotifyLevel = "info") -> None:
        prefix = {"info": "", "warning": "Warning: ", "error": "Error: "}.get(level, "")
        print(f"{prefix}{message}", file=sys.stderr, flush=True)
