"""pi's key syntax (``ctrl+shift+p``, ``alt+enter``, ``pageUp`` …) and what a terminal sends for it.

pi reads keys through the kitty keyboard protocol when the terminal offers it, so some of its
keys (``ctrl+shift+p``, ``shift+enter``, ``ctrl+1``) exist only there. pi-host reads keys through
prompt_toolkit, which sees what a classic terminal sends: :func:`to_prompt_toolkit` turns a pi
key into prompt_toolkit's key sequence, or says why no terminal key press can be told apart as
that key.
"""

from __future__ import annotations

import string
from dataclasses import dataclass

__all__ = [
    "KeyStroke",
    "KeySyntaxError",
    "UnsendableKeyError",
    "key_label",
    "parse_key",
    "to_prompt_toolkit",
]

_MODIFIERS = ("ctrl", "shift", "alt", "super")

SYMBOLS = frozenset("`-=[]\\;',./!@#$%^&*()_+|~{}:<>?")
"""The symbol keys pi's key syntax allows."""

# Named keys, by the lower-cased spelling pi accepts, to the name pi-host shows.
_NAMED = {
    "escape": "Escape",
    "esc": "Escape",
    "enter": "Enter",
    "return": "Enter",
    "tab": "Tab",
    "space": "Space",
    "backspace": "Backspace",
    "delete": "Delete",
    "insert": "Insert",
    "clear": "Clear",
    "home": "Home",
    "end": "End",
    "pageup": "PageUp",
    "pagedown": "PageDown",
    "up": "Up",
    "down": "Down",
    "left": "Left",
    "right": "Right",
    **{f"f{n}": f"F{n}" for n in range(1, 13)},
}

# Keys that keep their own prompt_toolkit name, and take shift / ctrl / ctrl+shift there.
_NAVIGATION = frozenset(
    {"up", "down", "left", "right", "home", "end", "insert", "delete", "pageup", "pagedown"}
)

# What a classic terminal sends for Ctrl with a symbol (pi maps ``-`` like ``_``: one physical key).
_CTRL_SYMBOLS = {"]": "c-]", "\\": "c-\\", "^": "c-^", "_": "c-_", "-": "c-_", "@": "c-@"}

_KITTY_ONLY = "only terminals using the kitty keyboard protocol send it, and pi-host does not read that"


class KeySyntaxError(ValueError):
    """Text that is not a key in pi's syntax; the message says what is wrong."""


class UnsendableKeyError(ValueError):
    """A valid pi key that pi-host cannot tell apart in a terminal; the message says why."""


@dataclass(frozen=True)
class KeyStroke:
    """One key with its modifiers; ``key`` is lower-case (``a``, ``pageup``, ``f5``, ``-``)."""

    key: str
    ctrl: bool = False
    shift: bool = False
    alt: bool = False
    super: bool = False

    @property
    def label(self) -> str:
        """The key as pi's hotkey list writes it: ``Ctrl+Shift+P``, ``Alt+Enter``."""
        mods = [name.capitalize() for name in _MODIFIERS if getattr(self, name)]
        return "+".join([*mods, _NAMED.get(self.key, self.key.upper())])


def parse_key(text: str) -> KeyStroke:
    """Read ``text`` as pi does: modifiers and a key joined by ``+``, any case.

    :raises KeySyntaxError: an unknown modifier, a modifier twice, or no such key.
    """
    lowered = text.strip().lower()
    if not lowered:
        raise KeySyntaxError("the key is empty")
    # "+" is itself a key, so "ctrl++" is Ctrl with "+".
    if lowered == "+":
        words, key = [], "+"
    elif lowered.endswith("++"):
        words, key = lowered[:-2].split("+"), "+"
    else:
        *words, key = lowered.split("+")
    modifiers: set[str] = set()
    for word in words:
        if word not in _MODIFIERS:
            raise KeySyntaxError(f'"{word}" is not a modifier (use ctrl, shift, alt)')
        if word in modifiers:
            raise KeySyntaxError(f'"{word}" is given twice')
        modifiers.add(word)
    if not key:
        raise KeySyntaxError("no key after the last +")
    valid = key in _NAMED or (
        len(key) == 1 and (key in string.ascii_lowercase or key in string.digits or key in SYMBOLS)
    )
    if not valid:
        raise KeySyntaxError(f'"{key}" is not a key name')
    if key == "esc":
        key = "escape"
    elif key == "return":
        key = "enter"
    return KeyStroke(
        key,
        ctrl="ctrl" in modifiers,
        shift="shift" in modifiers,
        alt="alt" in modifiers,
        super="super" in modifiers,
    )


def to_prompt_toolkit(stroke: KeyStroke) -> tuple[str, ...]:
    """The prompt_toolkit key sequence a classic terminal produces for ``stroke``.

    Alt is Escape followed by the key, as terminals send it. Some keys share one sequence, as
    terminals send them alike: ``backspace`` and ``ctrl+h``, ``tab`` and ``ctrl+i``, ``enter``
    and ``ctrl+m``, ``shift+enter`` and ``ctrl+j`` (pi-host reads the Shift+Enter that xterm's
    modifyOtherKeys and the kitty protocol report as Ctrl+J).

    :raises UnsendableKeyError: no key press gives ``stroke`` apart from other keys.
    """
    if stroke.super:
        raise UnsendableKeyError(f"super: {_KITTY_ONLY}")
    if stroke.alt:
        plain = KeyStroke(stroke.key, ctrl=stroke.ctrl, shift=stroke.shift)
        return ("escape", *to_prompt_toolkit(plain))
    key, ctrl, shift = stroke.key, stroke.ctrl, stroke.shift
    if key == "clear":
        raise UnsendableKeyError("terminals do not send the Clear key to programs")
    if key in _NAVIGATION:
        prefix = ("c-" if ctrl else "") + ("s-" if shift else "")
        return (prefix + key,)
    if key.startswith("f") and len(key) > 1:
        if shift:
            raise UnsendableKeyError(f"shift with a function key: {_KITTY_ONLY}")
        return (("c-" if ctrl else "") + key,)
    if key == "tab":
        if ctrl:
            raise UnsendableKeyError(f"ctrl+tab: {_KITTY_ONLY}")
        return ("s-tab",) if shift else ("tab",)
    if key == "enter":
        if ctrl:
            raise UnsendableKeyError(f"ctrl+enter: {_KITTY_ONLY}")
        return ("c-j",) if shift else ("enter",)
    if key in ("escape", "backspace"):
        if ctrl or shift:
            raise UnsendableKeyError(f"a modifier with {key}: {_KITTY_ONLY}")
        return (key,)
    if key == "space":
        if shift:
            raise UnsendableKeyError(f"shift+space: {_KITTY_ONLY}")
        return ("c-@",) if ctrl else (" ",)
    return _printable(key, ctrl=ctrl, shift=shift)


def _printable(key: str, *, ctrl: bool, shift: bool) -> tuple[str, ...]:
    if ctrl and shift:
        raise UnsendableKeyError(f"terminals send ctrl+shift+{key} as ctrl+{key}; {_KITTY_ONLY}")
    if ctrl:
        if key in string.ascii_lowercase:
            return (f"c-{key}",)
        if key in _CTRL_SYMBOLS:
            return (_CTRL_SYMBOLS[key],)
        raise UnsendableKeyError(f"terminals send ctrl+{key} as another key or not at all; {_KITTY_ONLY}")
    if shift:
        if key in string.ascii_lowercase:
            return (key.upper(),)
        raise UnsendableKeyError(
            f'terminals send shift+{key} as the shifted character; bind that symbol instead (for example "!")'
        )
    return (key,)


def key_label(text: str) -> str:
    """How ``text`` is shown in ``/hotkeys``: pi's capitalised form, or ``text`` if it is no key."""
    try:
        return parse_key(text).label
    except KeySyntaxError:
        return text
