"""The editor's key bindings, built from a :class:`Keymap` (pi's action ids and keys).

Actions that act on the application are added after the editor's own, so a key bound to both
does the application's action, as in pi (Ctrl+D quits on an empty editor and deletes otherwise).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from prompt_toolkit.filters import Condition, Filter, has_focus
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.key_binding.bindings.named_commands import get_by_name
from prompt_toolkit.keys import Keys

from ._keymap import ACTIONS, Keymap, KeySequence
from ._keys import KeySyntaxError, UnsendableKeyError, parse_key, to_prompt_toolkit

if TYPE_CHECKING:
    from ._app import InteractiveApp

__all__ = ["EDITOR_ACTION_IDS", "build_key_bindings"]

Handler = Callable[[KeyPressEvent], object]

EDITOR_ACTION_IDS = tuple(
    action.id for action in ACTIONS if not action.id.startswith(("tui.select.", "app.models.", "app.tree."))
)
"""The actions bound while the editor has the focus (the select ones belong to the lists, the
``app.models`` ones to ``/scoped-models``, the ``app.tree`` ones to ``/tree``)."""

# pi's editor actions that prompt_toolkit has as readline commands.
_NAMED_COMMANDS = {
    "tui.editor.cursorLeft": "backward-char",
    "tui.editor.cursorRight": "forward-char",
    "tui.editor.cursorWordLeft": "backward-word",
    "tui.editor.cursorWordRight": "forward-word",
    "tui.editor.cursorLineStart": "beginning-of-line",
    "tui.editor.cursorLineEnd": "end-of-line",
    "tui.editor.deleteCharBackward": "backward-delete-char",
    "tui.editor.deleteCharForward": "delete-char",
    "tui.editor.deleteWordBackward": "backward-kill-word",
    "tui.editor.deleteWordForward": "kill-word",
    "tui.editor.deleteToLineStart": "unix-line-discard",
    "tui.editor.deleteToLineEnd": "kill-line",
    "tui.editor.yank": "yank",
    "tui.editor.yankPop": "yank-pop",
    "tui.editor.undo": "undo",
}

_SLASH_ACTIONS = {
    "app.session.new": "/new",
    "app.session.tree": "/tree",
    "app.session.fork": "/fork",
    "app.session.resume": "/resume",
}

_PAGE_ROWS = 12


def _nothing(event: KeyPressEvent) -> None:
    """A key the user took away from its default action does nothing."""


def _jump(backward: bool) -> Handler:
    def handler(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        document = buffer.document
        if backward:
            offset = document.find_backwards(event.data, in_current_line=True, count=event.arg)
        else:
            offset = document.find(event.data, in_current_line=True, count=event.arg)
        if offset:
            buffer.cursor_position += offset

    return handler


def build_key_bindings(app: InteractiveApp, keymap: Keymap) -> KeyBindings:
    """The key bindings of ``app``'s editor with the keys of ``keymap``."""
    kb = KeyBindings()
    editing = has_focus(app.buffer)

    def bind(action_id: str, handler: Handler, when: Filter = editing, *, then_any: bool = False) -> None:
        for sequence in keymap.sequences_for(action_id):
            keys = (*sequence, Keys.Any) if then_any else sequence
            kb.add(*keys, filter=when)(handler)

    # Plugin shortcuts first: for one key, the binding added last wins, so every key the
    # application binds itself keeps its own action.
    shortcuts, app.shortcut_problems = plugin_shortcut_sequences(app, keymap)
    for key, sequence in shortcuts:
        kb.add(*sequence, filter=editing)(_run_shortcut(app, key))

    for sequence in keymap.released(EDITOR_ACTION_IDS):
        kb.add(*sequence, filter=editing)(_nothing)
    # app.exit's keys on a non-empty editor do their editor action if they have one, else nothing.
    for sequence in keymap.sequences_for("app.exit"):
        kb.add(*sequence, filter=editing)(_nothing)

    # -- the editor ----------------------------------------------------------------------------
    for action_id, name in _NAMED_COMMANDS.items():
        bind(action_id, get_by_name(name).handler)
    bind("tui.editor.cursorUp", lambda event: event.current_buffer.auto_up(count=event.arg))
    bind("tui.editor.cursorDown", lambda event: event.current_buffer.auto_down(count=event.arg))
    bind("tui.editor.pageUp", lambda event: event.current_buffer.cursor_up(count=_PAGE_ROWS))
    bind("tui.editor.pageDown", lambda event: event.current_buffer.cursor_down(count=_PAGE_ROWS))
    bind("tui.editor.jumpForward", _jump(backward=False), then_any=True)
    bind("tui.editor.jumpBackward", _jump(backward=True), then_any=True)
    bind("tui.input.newLine", lambda event: app.buffer.insert_text("\n"))
    bind("tui.input.submit", lambda event: app.on_enter())
    bind("tui.input.tab", lambda event: app.on_tab())
    kb.add(Keys.BracketedPaste, filter=editing)(lambda event: app.on_paste(event.data))

    # -- the application -------------------------------------------------------------------------
    bind("app.interrupt", lambda event: app.on_escape())
    bind("app.clear", lambda event: app.clear_or_exit())
    # Only on an empty editor; otherwise the key does its editor action (pi: Ctrl+D deletes).
    bind("app.exit", lambda event: app.request_exit(), editing & Condition(lambda: not app.buffer.text))
    bind("app.suspend", _suspend)
    bind("app.editor.external", lambda event: app.buffer.open_in_editor(validate_and_handle=False))
    bind("app.model.select", lambda event: app.spawn(app.commands.run, "/model"))
    bind("app.model.cycleForward", lambda event: app.spawn(app.commands.cycle_model))
    bind("app.model.cycleBackward", lambda event: app.spawn(app.commands.cycle_model, -1))
    bind("app.thinking.cycle", lambda event: app.commands.cycle_thinking_level())
    bind("app.thinking.toggle", lambda event: app.toggle_thinking())
    bind("app.tools.expand", lambda event: app.toggle_tools())
    bind("app.message.followUp", lambda event: app.submit(follow_up=True))
    bind("app.message.dequeue", lambda event: app.dequeue())
    for action_id, command in _SLASH_ACTIONS.items():
        bind(action_id, _run_command(app, command))
    return kb


def plugin_shortcut_sequences(
    app: InteractiveApp, keymap: Keymap
) -> tuple[list[tuple[str, KeySequence]], list[str]]:
    """``(key, sequence)`` of each plugin shortcut that can be bound, and one problem line for
    each that cannot (a key that is no key, or one the editor binds itself)."""
    shortcuts = getattr(app.session, "plugin_shortcuts", None)
    taken = {sequence for action_id in EDITOR_ACTION_IDS for sequence in keymap.sequences_for(action_id)}
    bound: list[tuple[str, KeySequence]] = []
    problems: list[str] = []
    for shortcut in app._safe(shortcuts, ()) if shortcuts is not None else ():
        where = f"plugin shortcut {shortcut.key!r} ({shortcut.description}) is not bound"
        try:
            sequence = to_prompt_toolkit(parse_key(shortcut.key))
        except (KeySyntaxError, UnsendableKeyError) as exc:
            problems.append(f"{where}: {exc}")
            continue
        if sequence in taken:
            problems.append(f"{where}: the key has an action of its own (see /hotkeys)")
            continue
        bound.append((shortcut.key, sequence))
    return bound, problems


def _run_shortcut(app: InteractiveApp, key: str) -> Handler:
    return lambda event: app.spawn(app.session.run_plugin_shortcut, key)  # type: ignore[attr-defined]


def _run_command(app: InteractiveApp, command: str) -> Handler:
    return lambda event: app.spawn(app.commands.run, command)


def _suspend(event: KeyPressEvent) -> None:
    if hasattr(os, "killpg"):  # job control exists only where process groups do
        event.app.suspend_to_background()
