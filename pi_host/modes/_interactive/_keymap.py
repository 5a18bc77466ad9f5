"""The keyboard actions of the interactive mode and ``<agent dir>/keybindings.json``, in pi's format.

The file maps pi's action ids to a key or a list of keys (``{"app.thinking.toggle": "alt+t"}``);
an action named there gets exactly those keys instead of its defaults, and ``[]`` unbinds it.
pi's older un-namespaced ids (``expandTools``) are read as the ids pi migrates them to.

Nothing in the file stops the interactive mode: every problem becomes one warning that names the
file, the action and the key and says what to do, and everything else in the file applies.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._keys import KeySyntaxError, UnsendableKeyError, parse_key, to_prompt_toolkit

__all__ = [
    "ACTIONS",
    "LEGACY_IDS",
    "PI_ONLY_IDS",
    "Action",
    "Keymap",
    "default_keymap",
    "load_keymap",
]

KeySequence = tuple[str, ...]


@dataclass(frozen=True)
class Action:
    """One keyboard action pi-host's interactive mode has, under pi's id.

    :param defaults: pi's default keys.
    :param extras: keys pi-host adds to the defaults, where pi's default needs a terminal that
        speaks the kitty keyboard protocol or where pi-host always had them; a user setting
        for the action replaces them as it replaces the defaults.
    """

    id: str
    defaults: tuple[str, ...]
    description: str
    extras: tuple[str, ...] = ()

    @property
    def default_keys(self) -> tuple[str, ...]:
        return (*self.defaults, *self.extras)


def _a(
    action_id: str, defaults: str | tuple[str, ...], description: str, extras: tuple[str, ...] = ()
) -> Action:
    keys = (defaults,) if isinstance(defaults, str) else defaults
    return Action(action_id, keys, description, extras)


ACTIONS: tuple[Action, ...] = (
    # The editor (pi's tui package).
    _a("tui.editor.cursorUp", "up", "Move the cursor up / older history"),
    _a("tui.editor.cursorDown", "down", "Move the cursor down / newer history"),
    _a("tui.editor.cursorLeft", ("left", "ctrl+b"), "Move the cursor left"),
    _a("tui.editor.cursorRight", ("right", "ctrl+f"), "Move the cursor right"),
    _a("tui.editor.cursorWordLeft", ("alt+left", "ctrl+left", "alt+b"), "Move a word left"),
    _a("tui.editor.cursorWordRight", ("alt+right", "ctrl+right", "alt+f"), "Move a word right"),
    _a("tui.editor.cursorLineStart", ("home", "ctrl+a"), "Start of the line"),
    _a("tui.editor.cursorLineEnd", ("end", "ctrl+e"), "End of the line"),
    _a("tui.editor.jumpForward", "ctrl+]", "Jump forward to the next character typed"),
    _a("tui.editor.jumpBackward", "ctrl+alt+]", "Jump back to the character typed"),
    _a("tui.editor.pageUp", "pageUp", "Move the cursor up a page"),
    _a("tui.editor.pageDown", "pageDown", "Move the cursor down a page"),
    _a("tui.editor.deleteCharBackward", "backspace", "Delete the character before the cursor"),
    _a("tui.editor.deleteCharForward", ("delete", "ctrl+d"), "Delete the character under the cursor"),
    _a("tui.editor.deleteWordBackward", ("ctrl+w", "alt+backspace"), "Delete the word before the cursor"),
    _a("tui.editor.deleteWordForward", ("alt+d", "alt+delete"), "Delete the word after the cursor"),
    _a("tui.editor.deleteToLineStart", "ctrl+u", "Delete to the start of the line"),
    _a("tui.editor.deleteToLineEnd", "ctrl+k", "Delete to the end of the line"),
    _a("tui.editor.yank", "ctrl+y", "Paste the most recently deleted text"),
    _a("tui.editor.yankPop", "alt+y", "Cycle through deleted text after pasting"),
    _a("tui.editor.undo", "ctrl+-", "Undo"),
    _a("tui.input.newLine", "shift+enter", "New line", extras=("ctrl+j",)),
    _a("tui.input.submit", "enter", "Send the message (while the agent works: steer)"),
    _a("tui.input.tab", "tab", "Complete paths, commands and @file references"),
    # Lists (model, session and tree pickers, plugin selects).
    _a("tui.select.up", "up", "Selection up", extras=("ctrl+p",)),
    _a("tui.select.down", "down", "Selection down", extras=("ctrl+n",)),
    _a("tui.select.pageUp", "pageUp", "Selection a page up"),
    _a("tui.select.pageDown", "pageDown", "Selection a page down"),
    _a("tui.select.confirm", "enter", "Choose the selection"),
    _a("tui.select.cancel", ("escape", "ctrl+c"), "Close the list (or dialog) without choosing"),
    # The application.
    _a("app.interrupt", "escape", "Abort (queued messages return to the editor); twice on empty: /tree"),
    _a("app.clear", "ctrl+c", "Clear the editor; twice to quit"),
    _a("app.exit", "ctrl+d", "Quit (on an empty editor)"),
    _a("app.suspend", "ctrl+z", "Suspend to the background"),
    _a("app.editor.external", "ctrl+g", "Edit the message in $VISUAL / $EDITOR"),
    _a("app.model.select", "ctrl+l", "Open the model picker"),
    _a("app.model.cycleForward", "ctrl+p", "Next model"),
    _a("app.model.cycleBackward", "shift+ctrl+p", "Previous model"),
    _a("app.thinking.cycle", "shift+tab", "Cycle the thinking level"),
    _a("app.thinking.toggle", "ctrl+t", "Show or hide thinking blocks"),
    _a("app.tools.expand", "ctrl+o", "Expand or collapse tool output"),
    _a("app.message.followUp", "alt+enter", "Queue a follow-up (delivered when the agent is done)"),
    _a("app.message.dequeue", "alt+up", "Take queued messages back into the editor"),
    _a("app.session.new", (), "Start a new session (/new)"),
    _a("app.session.tree", (), "Open the session tree (/tree)"),
    _a("app.session.fork", (), "Fork from an earlier message (/fork)"),
    _a("app.session.resume", (), "Resume a session (/resume)"),
    # /tree: folding and pi's filter modes.
    _a(
        "app.tree.foldOrUp",
        ("ctrl+left", "alt+left"),
        "Fold the branch segment, or up to the previous segment start",
    ),
    _a(
        "app.tree.unfoldOrDown",
        ("ctrl+right", "alt+right"),
        "Unfold the branch segment, or down to the next branch",
    ),
    _a("app.tree.filter.default", "ctrl+d", "Tree: the default view"),
    _a("app.tree.filter.noTools", "ctrl+t", "Tree: hide tool results (again: default)"),
    _a("app.tree.filter.userOnly", "ctrl+u", "Tree: only user messages (again: default)"),
    _a("app.tree.filter.labeledOnly", "ctrl+l", "Tree: only labeled entries (again: default)"),
    _a("app.tree.filter.all", "ctrl+a", "Tree: every entry (again: default)"),
    _a("app.tree.filter.cycleForward", "ctrl+o", "Tree: next filter"),
    _a("app.tree.filter.cycleBackward", "shift+ctrl+o", "Tree: previous filter"),
    # /scoped-models: the models Ctrl+P cycles through.
    _a("app.models.save", "ctrl+s", "Save the model selection to settings.json"),
    _a("app.models.enableAll", "ctrl+a", "Enable all models (the listed ones while searching)"),
    _a("app.models.clearAll", "ctrl+x", "Disable all models (the listed ones while searching)"),
    _a("app.models.toggleProvider", "ctrl+p", "Enable or disable every model of the selected one's provider"),
    _a("app.models.reorderUp", "alt+up", "Move the selected model up the cycling order"),
    _a("app.models.reorderDown", "alt+down", "Move the selected model down the cycling order"),
)

_BY_ID = {action.id: action for action in ACTIONS}

PI_ONLY_IDS = frozenset(
    {
        "tui.input.copy",
        "app.clipboard.pasteImage",
        "app.session.togglePath",
        "app.session.toggleSort",
        "app.session.toggleNamedFilter",
        "app.session.rename",
        "app.session.delete",
        "app.session.deleteNoninvasive",
        "app.tree.editLabel",
        "app.tree.toggleLabelTimestamp",
    }
)
"""pi's ids for screens pi-host does not have (yet): accepted in the file, and not used."""

LEGACY_IDS: Mapping[str, str] = {
    **{
        name: f"tui.editor.{name}"
        for name in (
            "cursorUp",
            "cursorDown",
            "cursorLeft",
            "cursorRight",
            "cursorWordLeft",
            "cursorWordRight",
            "cursorLineStart",
            "cursorLineEnd",
            "jumpForward",
            "jumpBackward",
            "pageUp",
            "pageDown",
            "deleteCharBackward",
            "deleteCharForward",
            "deleteWordBackward",
            "deleteWordForward",
            "deleteToLineStart",
            "deleteToLineEnd",
            "yank",
            "yankPop",
            "undo",
        )
    },
    "newLine": "tui.input.newLine",
    "submit": "tui.input.submit",
    "tab": "tui.input.tab",
    "copy": "tui.input.copy",
    "selectUp": "tui.select.up",
    "selectDown": "tui.select.down",
    "selectPageUp": "tui.select.pageUp",
    "selectPageDown": "tui.select.pageDown",
    "selectConfirm": "tui.select.confirm",
    "selectCancel": "tui.select.cancel",
    "interrupt": "app.interrupt",
    "clear": "app.clear",
    "exit": "app.exit",
    "suspend": "app.suspend",
    "cycleThinkingLevel": "app.thinking.cycle",
    "cycleModelForward": "app.model.cycleForward",
    "cycleModelBackward": "app.model.cycleBackward",
    "selectModel": "app.model.select",
    "expandTools": "app.tools.expand",
    "toggleThinking": "app.thinking.toggle",
    "toggleSessionNamedFilter": "app.session.toggleNamedFilter",
    "externalEditor": "app.editor.external",
    "followUp": "app.message.followUp",
    "dequeue": "app.message.dequeue",
    "pasteImage": "app.clipboard.pasteImage",
    "newSession": "app.session.new",
    "tree": "app.session.tree",
    "fork": "app.session.fork",
    "resume": "app.session.resume",
    "treeFoldOrUp": "app.tree.foldOrUp",
    "treeUnfoldOrDown": "app.tree.unfoldOrDown",
    "treeEditLabel": "app.tree.editLabel",
    "treeToggleLabelTimestamp": "app.tree.toggleLabelTimestamp",
    "toggleSessionPath": "app.session.togglePath",
    "toggleSessionSort": "app.session.toggleSort",
    "renameSession": "app.session.rename",
    "deleteSession": "app.session.delete",
    "deleteSessionNoninvasive": "app.session.deleteNoninvasive",
}
"""pi's ids from before it namespaced them, and the ids pi reads them as."""

_KNOWN_IDS = sorted({*_BY_ID, *PI_ONLY_IDS})
_AFTER_FIX = "fix it and run /reload"


@dataclass(frozen=True)
class Keymap:
    """The keys in force for every action, and what was wrong with the file they came from.

    :param keys: per action id, the pi keys bound (those a terminal can send), in order.
    :param sequences: per action id, the same keys as prompt_toolkit key sequences.
    :param unsendable_defaults: per action id, default keys left out because no terminal
        key press gives them (``shift+ctrl+p``); ``/hotkeys`` says so.
    :param problems: one message per problem in the file, for the user to read.
    """

    keys: Mapping[str, tuple[str, ...]]
    sequences: Mapping[str, tuple[KeySequence, ...]]
    unsendable_defaults: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    problems: tuple[str, ...] = ()
    path: Path | None = None

    def keys_for(self, action_id: str) -> tuple[str, ...]:
        return self.keys.get(action_id, ())

    def sequences_for(self, action_id: str) -> tuple[KeySequence, ...]:
        return self.sequences.get(action_id, ())

    def released(self, action_ids: Iterable[str]) -> tuple[KeySequence, ...]:
        """Default key sequences of ``action_ids`` that none of those actions is bound to now.

        The editor gives such keys nothing to do, so a key the user moved away from an action
        stops doing it (prompt_toolkit's own bindings would otherwise keep it working).
        """
        ids = list(action_ids)
        bound = {sequence for action_id in ids for sequence in self.sequences_for(action_id)}
        default = default_keymap()
        released: list[KeySequence] = []
        for action_id in ids:
            for sequence in default.sequences_for(action_id):
                if sequence not in bound and sequence not in released:
                    released.append(sequence)
        return tuple(released)


def _resolve(action: Action, keys: Iterable[str]) -> tuple[list[str], list[KeySequence], list[str]]:
    """The usable keys, their sequences, and the keys a terminal cannot send."""
    usable: list[str] = []
    sequences: list[KeySequence] = []
    unsendable: list[str] = []
    for key in keys:
        try:
            sequence = to_prompt_toolkit(parse_key(key))
        except (KeySyntaxError, UnsendableKeyError):
            unsendable.append(key)
            continue
        if key not in usable:
            usable.append(key)
        if sequence not in sequences:
            sequences.append(sequence)
    return usable, sequences, unsendable


def _build(overrides: Mapping[str, list[str]], problems: list[str], path: Path | None) -> Keymap:
    keys: dict[str, tuple[str, ...]] = {}
    sequences: dict[str, tuple[KeySequence, ...]] = {}
    unsendable_defaults: dict[str, tuple[str, ...]] = {}
    for action in ACTIONS:
        if action.id in overrides:
            usable, seqs, _ = _resolve(action, overrides[action.id])
        else:
            usable, seqs, unsendable = _resolve(action, action.default_keys)
            if unsendable:
                unsendable_defaults[action.id] = tuple(unsendable)
        keys[action.id] = tuple(usable)
        sequences[action.id] = tuple(seqs)
    return Keymap(keys, sequences, unsendable_defaults, tuple(problems), path)


_DEFAULT: Keymap | None = None


def default_keymap() -> Keymap:
    """pi's default keys (with pi-host's extras), as no keybindings.json gives them."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = _build({}, [], None)
    return _DEFAULT


def load_keymap(path: Path) -> Keymap:
    """The keymap ``path`` (a keybindings.json, possibly missing) gives; never raises for its content."""
    problems: list[str] = []
    raw = _read(path, problems)
    overrides: dict[str, list[str]] = {}
    for action_id, value in _migrate(raw).items():
        keys = _check_entry(path, action_id, value, problems)
        if keys is not None:
            overrides[action_id] = keys
    return _build(overrides, problems, path)


def _read(path: Path, problems: list[str]) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(f"{path}: cannot be read ({exc}); the default keys are used until you {_AFTER_FIX}")
        return {}
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        problems.append(
            f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); "
            f"the default keys are used until you {_AFTER_FIX}"
        )
        return {}
    if not isinstance(data, dict):
        problems.append(
            f"{path}: must hold a JSON object of action ids to keys, "
            f'like {{"app.thinking.toggle": "ctrl+t"}}; the default keys are used until you {_AFTER_FIX}'
        )
        return {}
    return data


def _migrate(raw: Mapping[str, Any]) -> dict[str, Any]:
    # As pi does: a legacy id gives way to its namespaced id when the file has both.
    migrated: dict[str, Any] = {}
    for key, value in raw.items():
        new = LEGACY_IDS.get(key, key)
        if new != key and new in raw:
            continue
        migrated[new] = value
    return migrated


def _check_entry(path: Path, action_id: str, value: Any, problems: list[str]) -> list[str] | None:
    """The keys given for ``action_id``, or ``None`` when the entry is left out (a problem or pi-only)."""
    if action_id not in _BY_ID:
        if action_id not in PI_ONLY_IDS:
            import difflib  # only for a misspelt id: the interactive mode's start-up is timed

            close = difflib.get_close_matches(action_id, _KNOWN_IDS, n=1)
            hint = f'did you mean "{close[0]}"?' if close else "/hotkeys lists the ids"
            problems.append(f'{path}: "{action_id}" is not a keybinding id ({hint}); {_AFTER_FIX}')
        return None
    if isinstance(value, str):
        given = [value]
    elif isinstance(value, list) and all(isinstance(item, str) for item in value):
        given = list(value)
    else:
        problems.append(
            f'{path}: "{action_id}" must be a key or a list of keys, not {json.dumps(value)}; '
            f"its default keys stay until you {_AFTER_FIX}"
        )
        return None
    usable: list[str] = []
    rejected: list[tuple[str, Exception]] = []
    for key in given:
        try:
            to_prompt_toolkit(parse_key(key))
        except (KeySyntaxError, UnsendableKeyError) as exc:
            rejected.append((key, exc))
        else:
            usable.append(key)
    # Nothing in the entry works: keep the action reachable rather than unbind it by accident.
    outcome = "its other keys apply" if usable else "it keeps its default keys"
    for key, reason in rejected:
        if isinstance(reason, KeySyntaxError):
            problems.append(
                f'{path}: "{action_id}": "{key}" is not a key ({reason}); {outcome}. Write keys as pi does, '
                f'like "ctrl+x", "alt+enter", "shift+tab", "pageUp", "f5", then run /reload'
            )
        else:
            problems.append(
                f'{path}: "{action_id}": "{key}" cannot be told apart in a terminal ({reason}); {outcome}. '
                "Bind another key, then run /reload"
            )
    return usable if usable or not given else None
