"""From the path a model wrote to the files a tool will really touch.

A rule about ``/etc/**`` must hold however the model spells the path: relative with ``..``,
through a symlink, with ``~``, with pi's ``@`` mention prefix, or with characters that only look
like the ones in the rule. :func:`resolve_target` expands a path exactly as pi's file tools do
(``@`` stripped, unicode spaces made plain, ``~`` expanded, relative to the working directory),
then gives every spelling a rule must be checked against: the lexical absolute path, the real
path (symlinks and ``..`` resolved), and, when the text holds look-alike or invisible
characters, their *skeleton* (NFKC-normalised, look-alikes mapped to the ASCII letters they
imitate, invisible characters dropped).
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

__all__ = ["ResolvedPath", "expand_user_path", "resolve_target", "skeleton", "suspicious_characters"]

_UNICODE_SPACES = re.compile("[\u00a0\u2000-\u200a\u202f\u205f\u3000]")

# Letters from other scripts drawn like ASCII ones (after Unicode TR39's confusables table,
# restricted to what a path or command is likely to hold). NFKC already folds full-width
# forms, ligatures and mathematical alphabets; these survive it.
_HOMOGLYPHS: dict[str, str] = {
    # Cyrillic
    "\u0430": "a",
    "\u0432": "b",
    "\u0435": "e",
    "\u0451": "e",
    "\u04bb": "h",
    "\u0456": "i",
    "\u0457": "i",
    "\u0458": "j",
    "\u043a": "k",
    "\u043c": "m",
    "\u043d": "h",
    "\u043e": "o",
    "\u0440": "p",
    "\u0441": "c",
    "\u0455": "s",
    "\u0442": "t",
    "\u0443": "y",
    "\u0445": "x",
    "\u0501": "d",
    "\u051b": "q",
    "\u051d": "w",
    "\u0261": "g",
    "\u04cf": "l",
    "\u0410": "A",
    "\u0412": "B",
    "\u0415": "E",
    "\u0405": "S",
    "\u0406": "I",
    "\u0408": "J",
    "\u041a": "K",
    "\u041c": "M",
    "\u041d": "H",
    "\u041e": "O",
    "\u0420": "P",
    "\u0421": "C",
    "\u0422": "T",
    "\u0425": "X",
    "\u04ae": "Y",
    "\u051a": "Q",
    "\u051c": "W",
    # Greek
    "\u03b1": "a",
    "\u03bf": "o",
    "\u03c1": "p",
    "\u03bd": "v",
    "\u03c4": "t",
    "\u03c5": "u",
    "\u03b9": "i",
    "\u03ba": "k",
    "\u03c7": "x",
    "\u0391": "A",
    "\u0392": "B",
    "\u0395": "E",
    "\u0396": "Z",
    "\u0397": "H",
    "\u0399": "I",
    "\u039a": "K",
    "\u039c": "M",
    "\u039d": "N",
    "\u039f": "O",
    "\u03a1": "P",
    "\u03a4": "T",
    "\u03a5": "Y",
    "\u03a7": "X",
    # Armenian and others
    "\u0585": "o",
    "\u057d": "u",
    "\u0581": "g",
    "\u0561": "w",
    "\u054f": "S",
    # Punctuation that reads as a path separator or a dot
    "\u2215": "/",
    "\u2044": "/",
    "\u29f8": "/",
    "\u2571": "/",
    "\ufe52": ".",
    "\u2024": ".",
    "\u2027": ".",
    "\u00b7": ".",
    "\u01c0": "l",
}


def skeleton(text: str) -> str:
    """``text`` as it looks: NFKC-normalised, look-alikes mapped to ASCII, invisible characters dropped."""
    folded = unicodedata.normalize("NFKC", text)
    out = []
    for char in folded:
        if unicodedata.category(char) == "Cf":  # zero-width joiners, bidi controls
            continue
        out.append(_HOMOGLYPHS.get(char, char))
    return unicodedata.normalize("NFKC", "".join(out))


def suspicious_characters(text: str) -> list[str]:
    """The characters of ``text`` that imitate others or are invisible, named (``U+0435 CYRILLIC …``).

    Ordinary non-ASCII letters (``résumé``) are not suspicious; characters NFKC changes
    (full-width solidus, U+FF0F), look-alikes of ASCII letters, invisible format characters and
    control characters are.
    """
    found: dict[str, None] = {}
    for char in text:
        if char.isascii() and char.isprintable():
            continue
        category = unicodedata.category(char)
        if char in _HOMOGLYPHS or category in ("Cf", "Cc") or unicodedata.normalize("NFKC", char) != char:
            found[char] = None
    return [f"U+{ord(char):04X} {unicodedata.name(char, 'UNNAMED')}" for char in found]


def expand_user_path(path: str, home: str | None = None) -> str:
    """Expand a path the way pi's file tools do: ``@`` prefix, unicode spaces, ``~``."""
    if path.startswith("@"):
        path = path[1:]
    path = _UNICODE_SPACES.sub(" ", path)
    home = home if home is not None else os.path.expanduser("~")
    if path == "~":
        return home
    if path.startswith("~/"):
        return home + path[1:]
    return path


@dataclass(frozen=True)
class ResolvedPath:
    """Every spelling of one tool argument that a rule must be checked against.

    :ivar raw: the argument as the model wrote it.
    :ivar lexical: the absolute path, ``..`` collapsed without looking at the disk.
    :ivar real: the absolute path with every symlink and ``..`` resolved (``os.path.realpath``).
    :ivar variants: other paths the tool may open instead (the read tool's macOS spellings).
    :ivar suspicious: named look-alike or invisible characters in ``raw`` (empty when clean).
    """

    raw: str
    lexical: str
    real: str
    variants: tuple[str, ...] = ()
    suspicious: tuple[str, ...] = ()

    @cached_property
    def candidates(self) -> tuple[str, ...]:
        """The paths to check, and their skeletons when the text is suspicious."""
        paths = [self.real, self.lexical, *self.variants]
        if self.suspicious:
            paths += [skeleton(path) for path in list(paths)]
        return tuple(dict.fromkeys(paths))

    @cached_property
    def ancestries(self) -> tuple[tuple[str, ...], ...]:
        """For each candidate: the candidate and every directory above it (rules about a
        directory cover what is inside)."""
        from ._rules import ancestors

        return tuple(tuple(ancestors(candidate)) for candidate in self.candidates)

    @cached_property
    def all_ancestry(self) -> tuple[str, ...]:
        """Every candidate and directory above one, once."""
        return tuple(dict.fromkeys(path for ancestry in self.ancestries for path in ancestry))

    @property
    def shown(self) -> str:
        """The path for messages: the real path."""
        return self.real


def _read_variants(resolved: str) -> Iterable[str]:
    """The spellings pi's read tool tries when ``resolved`` does not exist (macOS names)."""
    am_pm = re.sub(r" (AM|PM)\.", lambda m: f"\u202f{m.group(1)}.", resolved, flags=re.IGNORECASE)
    nfd = unicodedata.normalize("NFD", resolved)
    yield am_pm
    yield nfd
    yield resolved.replace("'", "\u2019")
    yield nfd.replace("'", "\u2019")


def resolve_target(
    path: str, cwd: str, *, home: str | None = None, read_variants: bool = False
) -> ResolvedPath:
    """Resolve one path argument against ``cwd`` the way the file tools will, in every spelling.

    :param read_variants: also resolve the alternative spellings the read tool falls back to.
    """
    expanded = expand_user_path(path, home)
    absolute = expanded if os.path.isabs(expanded) else os.path.join(cwd, expanded)
    lexical = os.path.normpath(absolute)
    real = os.path.realpath(absolute)
    variants: list[str] = []
    if read_variants:
        for variant in _read_variants(absolute):
            if variant != absolute and os.path.lexists(variant):
                variants.append(os.path.realpath(variant))
    return ResolvedPath(
        raw=path,
        lexical=lexical,
        real=real,
        variants=tuple(variants),
        suspicious=tuple(suspicious_characters(path)),
    )
