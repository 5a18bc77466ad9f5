"""Inline dialogs shown in place of the editor: select lists, yes/no, one-line input, text editor.

Each dialog is a prompt_toolkit container with its own key bindings and a result that the
caller awaits. Its keys are pi's ``tui.select.*`` (and ``tui.input.*``) actions of a
:class:`Keymap`; by default Esc (or Ctrl+C) cancels with ``None``, as pi's dialogs do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

import anyio
from prompt_toolkit.buffer import Buffer
from prompt_toolkit.document import Document
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import (
    ConditionalContainer,
    Container,
    Dimension,
    FormattedTextControl,
    HSplit,
    VSplit,
    Window,
)
from prompt_toolkit.layout.controls import BufferControl

from ._completion import fuzzy_score
from ._keymap import Keymap, default_keymap
from ._keys import key_label

__all__ = ["Dialog", "EditorDialog", "InputDialog", "SelectDialog"]

T = TypeVar("T")
Handler = Callable[[KeyPressEvent], None]


class Dialog(Generic[T]):
    """A dialog's container, the control to focus, and its result once closed."""

    container: Container
    focus: Window | BufferControl | Buffer

    def __init__(self) -> None:
        self._done = anyio.Event()
        self._result: T | None = None

    def close(self, result: T | None) -> None:
        if not self._done.is_set():
            self._result = result
            self._done.set()

    @property
    def closed(self) -> bool:
        return self._done.is_set()

    async def wait(self) -> T | None:
        await self._done.wait()
        return self._result

    def height(self) -> int:
        """Rows the dialog takes, so the live area above can leave room for it."""
        return 4


def _title_window(title: str) -> Window:
    return Window(FormattedTextControl([("class:picker.title", title)]), height=1, dont_extend_height=True)


def _hint_window(text: str) -> Window:
    return Window(FormattedTextControl([("class:picker.hint", text)]), height=1, dont_extend_height=True)


def _bind(bindings: KeyBindings, keymap: Keymap, action_id: str, handler: Handler) -> None:
    for sequence in keymap.sequences_for(action_id):
        bindings.add(*sequence)(handler)


_SHORT = {"escape": "esc", "up": "↑", "down": "↓"}


def _hint_text(keymap: Keymap, *parts: tuple[str, str]) -> str:
    """``key what · key what`` for the first key of each action that has one."""
    shown = []
    for action_id, what in parts:
        keys = keymap.keys_for(action_id)
        if keys:
            label = key_label(keys[0]).lower()
            shown.append(f"{_SHORT.get(label, label)} {what}")
    return " · ".join(shown)


def _rule() -> Window:
    return Window(char="─", height=1, style="class:picker.rule")


class SelectDialog(Dialog[int]):
    """Pick one of ``options``; the result is the option's index.

    :param filterable: typing narrows the list (fuzzy), as in pi's model and session pickers.
    :param shortcuts: single keys that pick an option directly (``{"y": 0, "n": 1}``).
    :param details: one line per option, shown under the list for the selected option.
    """

    def __init__(
        self,
        title: str,
        options: Sequence[str],
        *,
        message: str | None = None,
        initial: int = 0,
        filterable: bool = False,
        max_visible: int = 10,
        shortcuts: dict[str, int] | None = None,
        keymap: Keymap | None = None,
        details: Sequence[str] | None = None,
    ) -> None:
        super().__init__()
        self.title = title
        self.options = list(options)
        self._details = list(details) if details is not None else None
        self._max_visible = max(1, max_visible)
        self._filter = Buffer(multiline=False, on_text_changed=lambda _: self._refilter())
        self._visible: list[int] = list(range(len(self.options)))
        self._selected = min(max(initial, 0), max(len(self.options) - 1, 0))
        self.filterable = filterable

        keymap = keymap or default_keymap()
        bindings = KeyBindings()
        # Shortcuts first: a list's own keys win where they share one.
        for key, index in (shortcuts or {}).items():

            def _pick(event: KeyPressEvent, index: int = index) -> None:
                self.close(index)

            bindings.add(key)(_pick)
        _bind(bindings, keymap, "tui.select.up", lambda event: self._move(-1))
        _bind(bindings, keymap, "tui.select.down", lambda event: self._move(1))
        _bind(bindings, keymap, "tui.select.pageUp", lambda event: self._move(-self._max_visible))
        _bind(bindings, keymap, "tui.select.pageDown", lambda event: self._move(self._max_visible))
        _bind(bindings, keymap, "tui.select.confirm", lambda event: self._choose())
        _bind(bindings, keymap, "tui.select.cancel", lambda event: self.close(None))
        self._list = Window(
            FormattedTextControl(self._list_fragments, focusable=not filterable, show_cursor=False),
            height=lambda: Dimension.exact(self._list_height()),
            dont_extend_height=True,
        )
        parts: list[Container] = [_rule(), _title_window(title)]
        if message:
            parts.append(
                Window(
                    FormattedTextControl([("class:picker.message", message)]),
                    wrap_lines=True,
                    dont_extend_height=True,
                )
            )
        filter_window = Window(
            BufferControl(self._filter, input_processors=[]),
            height=1,
            dont_extend_height=True,
            style="class:picker.filter",
        )
        if filterable:
            label = Window(FormattedTextControl([("class:picker.hint", "search: ")]), width=8, height=1)
            parts.append(VSplit([label, filter_window], height=1))
        parts.append(self._list)
        if self._details is not None:
            parts.append(Window(FormattedTextControl(self._detail_fragments), height=1))
        parts.append(_hint_window(self._hint(keymap)))
        self.container = HSplit(parts, key_bindings=bindings)
        self.focus = filter_window if filterable else self._list
        self._message_lines = len(message.split("\n")) if message else 0
        self._ensure_visible_selected()

    def _choose(self) -> None:
        if self._visible:
            self.close(self._selected)

    def _hint(self, keymap: Keymap) -> str:
        hint = _hint_text(
            keymap,
            ("tui.select.up", "up"),
            ("tui.select.down", "down"),
            ("tui.select.confirm", "select"),
            ("tui.select.cancel", "cancel"),
        )
        # The usual arrows read as one hint.
        hint = hint.replace("↑ up · ↓ down", "↑↓ navigate")
        return ("type to filter · " + hint) if self.filterable else hint

    def _refilter(self) -> None:
        query = self._filter.text.strip()
        if not query:
            self._visible = list(range(len(self.options)))
        else:
            scored = []
            for index, option in enumerate(self.options):
                score = fuzzy_score(query, option)
                if score is not None:
                    scored.append((-score, index))
            scored.sort()
            self._visible = [index for _, index in scored]
        self._selected = self._visible[0] if self._visible else 0

    def _ensure_visible_selected(self) -> None:
        if self._visible and self._selected not in self._visible:
            self._selected = self._visible[0]

    def _move(self, delta: int) -> None:
        if not self._visible:
            return
        position = self._visible.index(self._selected) if self._selected in self._visible else 0
        position = max(0, min(len(self._visible) - 1, position + delta))
        self._selected = self._visible[position]

    def _list_height(self) -> int:
        return min(len(self._visible), self._max_visible) + 1

    def height(self) -> int:
        extra = (1 if self.filterable else 0) + (1 if self._details is not None else 0)
        return self._list_height() + 3 + self._message_lines + extra

    def _detail_fragments(self) -> StyleAndTextTuples:
        if not self._details or not self._visible or self._selected >= len(self._details):
            return []
        return [("class:picker.hint", f"  {self._details[self._selected]}")]

    def _list_fragments(self) -> StyleAndTextTuples:
        fragments: StyleAndTextTuples = []
        if not self._visible:
            return [("class:picker.hint", "  No matches\n")]
        position = self._visible.index(self._selected) if self._selected in self._visible else 0
        start = max(0, min(position - self._max_visible // 2, len(self._visible) - self._max_visible))
        for index in self._visible[start : start + self._max_visible]:
            selected = index == self._selected
            marker = "› " if selected else "  "  # noqa: RUF001
            style = "class:picker.selected" if selected else "class:picker.option"
            fragments.append((style, f"{marker}{self.options[index]}"))
            fragments.append(("", "\n"))
        fragments.append(("class:picker.hint", f"  ({position + 1}/{len(self._visible)})"))
        return fragments

    @property
    def selected(self) -> int:
        return self._selected

    def type_filter(self, text: str) -> None:
        self._filter.text = text


class InputDialog(Dialog[str]):
    """One line of text; Enter gives it, Esc gives ``None``."""

    def __init__(
        self,
        title: str,
        placeholder: str | None = None,
        *,
        initial: str = "",
        keymap: Keymap | None = None,
    ) -> None:
        super().__init__()
        self.buffer = Buffer(multiline=False, document=Document(initial, len(initial)))
        keymap = keymap or default_keymap()
        bindings = KeyBindings()
        _bind(bindings, keymap, "tui.input.submit", lambda event: self.close(self.buffer.text))
        _bind(bindings, keymap, "tui.select.cancel", lambda event: self.close(None))

        window = Window(BufferControl(self.buffer), height=1, style="class:picker.input")
        placeholder_window = ConditionalContainer(
            Window(FormattedTextControl([("class:picker.placeholder", placeholder or "")]), height=1),
            filter=Condition(lambda: bool(placeholder) and not self.buffer.text),
        )
        self.container = HSplit(
            [
                _rule(),
                _title_window(title),
                window,
                placeholder_window,
                _hint_window(
                    _hint_text(keymap, ("tui.input.submit", "submit"), ("tui.select.cancel", "cancel"))
                ),
            ],
            key_bindings=bindings,
        )
        self.focus = window


class EditorDialog(Dialog[str]):
    """Multi-line text: Enter submits, Shift+Enter / Ctrl+J / Alt+Enter add a line, Esc cancels
    (with the default keys)."""

    def __init__(self, title: str, prefill: str | None = None, *, keymap: Keymap | None = None) -> None:
        super().__init__()
        text = prefill or ""
        self.buffer = Buffer(multiline=True, document=Document(text, len(text)))
        keymap = keymap or default_keymap()
        bindings = KeyBindings()

        def newline(event: KeyPressEvent) -> None:
            self.buffer.insert_text("\n")

        # Alt+Enter too: in this dialog it has no follow-up to queue, and terminals send it everywhere.
        bindings.add("escape", "enter")(newline)
        _bind(bindings, keymap, "tui.input.newLine", newline)
        _bind(bindings, keymap, "tui.input.submit", lambda event: self.close(self.buffer.text))
        _bind(bindings, keymap, "tui.select.cancel", lambda event: self.close(None))

        window = Window(
            BufferControl(self.buffer),
            height=Dimension(min=1, max=12),
            wrap_lines=True,
            style="class:picker.input",
        )
        self.container = HSplit(
            [
                _rule(),
                _title_window(title),
                window,
                _hint_window(
                    _hint_text(
                        keymap,
                        ("tui.input.submit", "submit"),
                        ("tui.input.newLine", "new line"),
                        ("tui.select.cancel", "cancel"),
                    )
                ),
            ],
            key_bindings=bindings,
        )
        self.focus = window

    def height(self) -> int:
        return min(max(self.buffer.document.line_count, 1), 12) + 3
