"""What ``/hotkeys`` shows: the keys in force for every action, with the ids keybindings.json uses."""

from __future__ import annotations

from collections.abc import Sequence

from ._keymap import ACTIONS, Keymap
from ._keys import key_label

__all__ = ["hotkeys_markdown"]

_SECTIONS = (
    ("Editing", ("tui.input.", "tui.editor.")),
    ("Application", ("app.interrupt", "app.clear", "app.exit", "app.suspend", "app.editor.", "app.model.")),
    ("Display and queue", ("app.thinking.", "app.tools.", "app.message.")),
    ("Sessions (no default key: bind one to run the command)", ("app.session.",)),
    ("Lists and dialogs", ("tui.select.",)),
    ("Model scope (/scoped-models)", ("app.models.",)),
    ("Session tree (/tree)", ("app.tree.",)),
)

_OTHER_ROWS = (
    ("/", "Slash commands"),
    ("!cmd", "Run a shell command; its output goes to the model"),
    ("!!cmd", "Run a shell command without sending its output"),
    ("@path", "Reference a file (fuzzy search)"),
)


def _keys_cell(keymap: Keymap, action_id: str) -> str:
    keys = keymap.keys_for(action_id)
    if keys:
        # A "|" key would end the table cell.
        return " / ".join(f"`{key_label(key)}`".replace("|", "\\|") for key in keys)
    missing = keymap.unsendable_defaults.get(action_id)
    if missing:
        shown = ", ".join(key_label(key) for key in missing)
        return f"none ({shown} needs the kitty keyboard protocol; bind another key)"
    return "none"


def hotkeys_markdown(keymap: Keymap, plugin_shortcuts: Sequence[tuple[str, str]] = ()) -> str:
    """A Markdown table per group of actions (and of the plugins' ``(key, description)``
    shortcuts), then the notes that explain pi-host's differences."""
    parts: list[str] = []
    for title, prefixes in _SECTIONS:
        rows = [action for action in ACTIONS if action.id.startswith(prefixes)]
        lines = [f"**{title}**", "", "| Key | Action | Id |", "|-----|--------|----|"]
        lines += [f"| {_keys_cell(keymap, a.id)} | {a.description} | `{a.id}` |" for a in rows]
        parts.append("\n".join(lines))
    if plugin_shortcuts:
        plugins = ["**Plugins**", "", "| Key | Action |", "|-----|--------|"]
        plugins += [f"| `{key}` | {description} |" for key, description in plugin_shortcuts]
        parts.append("\n".join(plugins))
    other = ["**Other**", "", "| Key | Action |", "|-----|--------|"]
    other += [f"| `{key}` | {action} |" for key, action in _OTHER_ROWS]
    parts.append("\n".join(other))
    source = f"`{keymap.path}`" if keymap.path is not None else "keybindings.json in the agent directory"
    parts.append(
        f"Change keys in {source} (pi's format; `/reload` applies it). Terminals send Shift+Enter "
        "as Enter unless they report modified keys, so Ctrl+J also inserts a new line, and "
        "Ctrl+J and Shift+Enter are one key to pi-host; Ctrl+P / Ctrl+N also move in lists."
    )
    return "\n\n".join(parts)
