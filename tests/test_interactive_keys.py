"""keybindings.json: pi's key syntax, what a terminal sends for it, defaults, overrides, and every
way the file can be wrong (each a warning naming the file, the id and the key; the rest applies).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pi_host.modes._interactive._bindings import EDITOR_ACTION_IDS
from pi_host.modes._interactive._dialogs import SelectDialog
from pi_host.modes._interactive._hotkeys import hotkeys_markdown
from pi_host.modes._interactive._keymap import (
    ACTIONS,
    LEGACY_IDS,
    PI_ONLY_IDS,
    Keymap,
    default_keymap,
    load_keymap,
)
from pi_host.modes._interactive._keys import (
    KeyStroke,
    KeySyntaxError,
    UnsendableKeyError,
    key_label,
    parse_key,
    to_prompt_toolkit,
)

# -- key syntax -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "stroke"),
    [
        ("a", KeyStroke("a")),
        ("ctrl+x", KeyStroke("x", ctrl=True)),
        ("Ctrl+Shift+P", KeyStroke("p", ctrl=True, shift=True)),
        ("shift+ctrl+p", KeyStroke("p", ctrl=True, shift=True)),
        ("alt+ctrl+]", KeyStroke("]", ctrl=True, alt=True)),
        ("ctrl+shift+alt+x", KeyStroke("x", ctrl=True, shift=True, alt=True)),
        ("pageUp", KeyStroke("pageup")),
        ("esc", KeyStroke("escape")),
        ("return", KeyStroke("enter")),
        ("f12", KeyStroke("f12")),
        ("ctrl+1", KeyStroke("1", ctrl=True)),
        ("+", KeyStroke("+")),
        ("alt++", KeyStroke("+", alt=True)),
        ("super+k", KeyStroke("k", super=True)),
    ],
)
def test_parse_key(text: str, stroke: KeyStroke) -> None:
    assert parse_key(text) == stroke


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        ("hyper+x", '"hyper" is not a modifier'),
        ("ctrl+ctrl+x", "given twice"),
        ("ctrl+", "no key after"),
        ("ctrl+xy", '"xy" is not a key name'),
        ("f13", '"f13" is not a key name'),
        ("ctrl+é", "not a key name"),
    ],
)
def test_parse_key_rejects(text: str, reason: str) -> None:
    with pytest.raises(KeySyntaxError, match=reason):
        parse_key(text)


@pytest.mark.parametrize(
    ("text", "sequence"),
    [
        ("a", ("a",)),
        ("shift+l", ("L",)),
        ("ctrl+t", ("c-t",)),
        ("alt+enter", ("escape", "enter")),
        ("alt+up", ("escape", "up")),
        ("alt+backspace", ("escape", "backspace")),
        ("ctrl+alt+]", ("escape", "c-]")),
        ("ctrl+]", ("c-]",)),
        ("ctrl+-", ("c-_",)),
        ("ctrl+_", ("c-_",)),
        ("ctrl+space", ("c-@",)),
        ("space", (" ",)),
        ("shift+tab", ("s-tab",)),
        ("shift+enter", ("c-j",)),
        ("ctrl+left", ("c-left",)),
        ("ctrl+shift+delete", ("c-s-delete",)),
        ("shift+home", ("s-home",)),
        ("pageDown", ("pagedown",)),
        ("ctrl+f5", ("c-f5",)),
        ("escape", ("escape",)),
        ("!", ("!",)),
    ],
)
def test_to_prompt_toolkit(text: str, sequence: tuple[str, ...]) -> None:
    assert to_prompt_toolkit(parse_key(text)) == sequence


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("ctrl+shift+p", r"as ctrl\+p"),
        ("super+k", "kitty keyboard protocol"),
        ("ctrl+enter", "kitty keyboard protocol"),
        ("ctrl+backspace", "kitty keyboard protocol"),
        ("ctrl+1", "as another key or not at all"),
        ("shift+1", "shifted character"),
        ("shift+f1", "function key"),
        ("clear", "Clear key"),
        ("shift+space", "kitty"),
    ],
)
def test_unsendable_keys(text: str, reason: str) -> None:
    with pytest.raises(UnsendableKeyError, match=reason):
        to_prompt_toolkit(parse_key(text))


def test_key_labels() -> None:
    assert key_label("shift+ctrl+p") == "Ctrl+Shift+P"
    assert key_label("alt+enter") == "Alt+Enter"
    assert key_label("pageUp") == "PageUp"
    assert key_label("ctrl+]") == "Ctrl+]"
    assert key_label("nonsense+x") == "nonsense+x"


# -- the action table and defaults -----------------------------------------------------------


def test_ids_cover_pis_and_legacy_ids_map_into_them() -> None:
    ours = {action.id for action in ACTIONS}
    assert len(ours) == len(ACTIONS)
    assert not ours & PI_ONLY_IDS
    assert set(LEGACY_IDS.values()) <= ours | PI_ONLY_IDS
    assert LEGACY_IDS["expandTools"] == "app.tools.expand"
    assert LEGACY_IDS["cursorUp"] == "tui.editor.cursorUp"


def test_defaults_are_pis_with_pi_hosts_extras() -> None:
    keymap = default_keymap()
    assert keymap.problems == ()
    assert keymap.keys_for("app.thinking.toggle") == ("ctrl+t",)
    assert keymap.sequences_for("app.message.followUp") == (("escape", "enter"),)
    assert keymap.keys_for("tui.editor.cursorWordLeft") == ("alt+left", "ctrl+left", "alt+b")
    assert keymap.keys_for("tui.select.cancel") == ("escape", "ctrl+c")
    # Shift+Enter and Ctrl+J are one key in a terminal: one sequence, both names.
    assert keymap.keys_for("tui.input.newLine") == ("shift+enter", "ctrl+j")
    assert keymap.sequences_for("tui.input.newLine") == (("c-j",),)
    assert keymap.keys_for("app.session.new") == ()
    # pi's Shift+Ctrl+P needs the kitty protocol; it is left out, and /hotkeys says why.
    assert keymap.keys_for("app.model.cycleBackward") == ()
    assert keymap.unsendable_defaults["app.model.cycleBackward"] == ("shift+ctrl+p",)
    assert keymap.released(EDITOR_ACTION_IDS) == ()


# -- the file -------------------------------------------------------------------------------------


def write(tmp_path: Path, content: Any) -> Path:
    path = tmp_path / "keybindings.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def test_missing_or_empty_file_gives_the_defaults(tmp_path: Path) -> None:
    assert load_keymap(tmp_path / "keybindings.json").keys == default_keymap().keys
    assert load_keymap(write(tmp_path, "  \n")).problems == ()


def test_overrides_replace_an_actions_defaults(tmp_path: Path) -> None:
    keymap = load_keymap(
        write(
            tmp_path,
            {
                "app.thinking.toggle": "alt+t",
                "tui.editor.cursorUp": ["up", "alt+k", "up"],
                "app.session.tree": "f2",
                "app.suspend": [],
            },
        )
    )
    assert keymap.problems == ()
    assert keymap.keys_for("app.thinking.toggle") == ("alt+t",)
    assert keymap.keys_for("tui.editor.cursorUp") == ("up", "alt+k")
    assert keymap.sequences_for("tui.editor.cursorUp") == (("up",), ("escape", "k"))
    assert keymap.keys_for("app.session.tree") == ("f2",)
    assert keymap.keys_for("app.suspend") == ()
    assert keymap.keys_for("app.clear") == ("ctrl+c",)  # untouched actions keep their defaults
    # Keys moved away from their default action do nothing in the editor any more.
    assert set(keymap.released(EDITOR_ACTION_IDS)) == {("c-t",), ("c-z",)}


def test_legacy_ids_are_read_as_pi_migrates_them(tmp_path: Path) -> None:
    keymap = load_keymap(write(tmp_path, {"expandTools": "ctrl+x", "cursorUp": ["up", "ctrl+p"]}))
    assert keymap.problems == ()
    assert keymap.keys_for("app.tools.expand") == ("ctrl+x",)
    assert keymap.keys_for("tui.editor.cursorUp") == ("up", "ctrl+p")


def test_a_namespaced_id_wins_over_its_legacy_id(tmp_path: Path) -> None:
    keymap = load_keymap(write(tmp_path, {"expandTools": "ctrl+x", "app.tools.expand": "ctrl+y"}))
    assert keymap.keys_for("app.tools.expand") == ("ctrl+y",)


def test_pi_only_ids_are_accepted_and_unused(tmp_path: Path) -> None:
    keymap = load_keymap(write(tmp_path, {"app.tree.editLabel": "shift+l", "app.clipboard.pasteImage": "x"}))
    assert keymap.problems == ()
    assert keymap.keys == default_keymap().keys


def only_problem(keymap: Keymap) -> str:
    assert len(keymap.problems) == 1, keymap.problems
    return keymap.problems[0]


def test_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "keybindings.json"
    path.mkdir()  # reading a directory fails on every platform
    problem = only_problem(load_keymap(path))
    assert problem.startswith(f"{path}: cannot be read")
    assert "default keys are used" in problem and "/reload" in problem


def test_undecodable_file(tmp_path: Path) -> None:
    path = tmp_path / "keybindings.json"
    path.write_bytes(b'{"app.clear": "\xff"}')
    assert "cannot be read" in only_problem(load_keymap(path))


def test_bad_json_names_the_place(tmp_path: Path) -> None:
    path = write(tmp_path, '{\n  "app.clear": "ctrl+c",\n}')
    keymap = load_keymap(path)
    problem = only_problem(keymap)
    assert problem.startswith(f"{path}: not valid JSON")
    assert "line 3, column 1" in problem
    assert keymap.keys == default_keymap().keys


def test_json_that_is_not_an_object(tmp_path: Path) -> None:
    problem = only_problem(load_keymap(write(tmp_path, ["ctrl+c"])))
    assert "must hold a JSON object of action ids to keys" in problem


def test_unknown_id_suggests_the_closest(tmp_path: Path) -> None:
    path = write(tmp_path, {"app.thinkng.toggle": "alt+t", "app.tools.expand": "ctrl+x"})
    keymap = load_keymap(path)
    problem = only_problem(keymap)
    assert problem == (
        f'{path}: "app.thinkng.toggle" is not a keybinding id (did you mean "app.thinking.toggle"?); '
        "fix it and run /reload"
    )
    assert keymap.keys_for("app.tools.expand") == ("ctrl+x",)  # the rest applies
    far = only_problem(load_keymap(write(tmp_path, {"zzz": "x"})))
    assert "/hotkeys lists the ids" in far


def test_value_of_the_wrong_type(tmp_path: Path) -> None:
    keymap = load_keymap(write(tmp_path, {"app.clear": 5, "app.exit": ["ctrl+q", 1]}))
    assert len(keymap.problems) == 2
    assert '"app.clear" must be a key or a list of keys, not 5' in keymap.problems[0]
    assert '"app.exit" must be a key or a list of keys, not ["ctrl+q", 1]' in keymap.problems[1]
    assert keymap.keys_for("app.clear") == ("ctrl+c",)
    assert keymap.keys_for("app.exit") == ("ctrl+d",)


def test_a_key_that_does_not_parse(tmp_path: Path) -> None:
    path = write(tmp_path, {"app.clear": ["hyper+c", "ctrl+x"]})
    keymap = load_keymap(path)
    problem = only_problem(keymap)
    assert problem.startswith(f'{path}: "app.clear": "hyper+c" is not a key ("hyper" is not a modifier')
    assert "its other keys apply" in problem and '"ctrl+x"' in problem
    assert keymap.keys_for("app.clear") == ("ctrl+x",)


def test_a_key_a_terminal_cannot_send(tmp_path: Path) -> None:
    path = write(tmp_path, {"app.model.cycleBackward": "ctrl+shift+p"})
    keymap = load_keymap(path)
    problem = only_problem(keymap)
    assert problem.startswith(f'{path}: "app.model.cycleBackward": "ctrl+shift+p" cannot be told apart')
    assert "it keeps its default keys" in problem and "Bind another key" in problem


def test_no_usable_key_keeps_the_defaults(tmp_path: Path) -> None:
    keymap = load_keymap(write(tmp_path, {"app.thinking.toggle": "hyper+t"}))
    assert "it keeps its default keys" in only_problem(keymap)
    assert keymap.keys_for("app.thinking.toggle") == ("ctrl+t",)


def test_every_problem_is_reported_and_the_rest_applies(tmp_path: Path) -> None:
    keymap = load_keymap(
        write(
            tmp_path,
            {
                "nope": "x",
                "app.clear": "ctrl+shift+c",
                "app.exit": "meta+q",
                "app.suspend": True,
                "app.tools.expand": "alt+o",
            },
        )
    )
    assert len(keymap.problems) == 4
    assert keymap.keys_for("app.tools.expand") == ("alt+o",)


# -- /hotkeys ---------------------------------------------------------------------------------------


def test_hotkeys_shows_the_keys_in_force(tmp_path: Path) -> None:
    path = write(tmp_path, {"app.thinking.toggle": "alt+t", "app.session.new": "f2", "app.suspend": []})
    text = hotkeys_markdown(load_keymap(path))
    assert "| `Alt+T` | Show or hide thinking blocks | `app.thinking.toggle` |" in text
    assert "| `F2` | Start a new session (/new) | `app.session.new` |" in text
    assert "| none | Suspend to the background | `app.suspend` |" in text
    assert "Ctrl+Shift+P needs the kitty keyboard protocol" in text
    assert str(path) in text
    for action in ACTIONS:
        assert f"`{action.id}`" in text


def test_list_hints_show_the_keys_in_force(tmp_path: Path) -> None:
    assert SelectDialog("t", ["a"])._hint(default_keymap()) == "↑↓ navigate · enter select · esc cancel"
    keymap = load_keymap(write(tmp_path, {"tui.select.confirm": "tab", "tui.select.down": "alt+j"}))
    hint = SelectDialog("t", ["a"], keymap=keymap)._hint(keymap)
    assert hint == "↑ up · alt+j down · tab select · esc cancel"
