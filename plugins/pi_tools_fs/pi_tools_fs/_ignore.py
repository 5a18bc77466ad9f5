"""gitignore rules, with the semantics ripgrep and fd apply (the Rust ``ignore`` crate).

One :class:`Gitignore` holds the rules of one file, matched against paths relative to the
directory the file sits in:

- blank lines and ``#`` comments are skipped; trailing whitespace is dropped unless escaped;
- ``!pattern`` re-includes (whitelists) what an earlier rule excluded;
- ``pattern/`` matches directories only;
- a pattern with a ``/`` at the start or in the middle is anchored to the file's directory,
  otherwise it matches at any depth (``**/`` is implied);
- ``**`` spans directories; ``dir/**`` matches what is inside ``dir`` but not ``dir`` itself;
- the last matching rule of a file decides.

How rules of different files combine (nearest directory first, ``.ignore`` over
``.gitignore``, repository boundaries) is :mod:`._walk`'s business.
"""

from __future__ import annotations

import enum
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

from ._glob import GlobError, glob_to_regex

__all__ = ["Gitignore", "Match", "Override"]


class Match(enum.Enum):
    """The verdict of a rule set on one path."""

    NONE = 0
    IGNORE = 1
    WHITELIST = 2

    def invert(self) -> Match:
        """Ignore becomes whitelist and back (override globs read the other way round)."""
        if self is Match.IGNORE:
            return Match.WHITELIST
        if self is Match.WHITELIST:
            return Match.IGNORE
        return self


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: re.Pattern[str]
    whitelist: bool
    dir_only: bool
    original: str


# Rust's str::trim_end strips Unicode White_Space.
_WHITESPACE = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


def _parse_line(line: str, case_insensitive: bool) -> _Rule | None:
    if line.startswith("#"):
        return None
    original = line
    if not line.endswith("\\ "):
        line = line.rstrip(_WHITESPACE)
    if not line:
        return None
    whitelist = False
    anchored = False
    if line.startswith(("\\!", "\\#")):
        line = line[1:]
        anchored = line.startswith("/")
    else:
        if line.startswith("!"):
            whitelist = True
            line = line[1:]
        if line.startswith("/"):
            line = line[1:]
            anchored = True
    dir_only = False
    if line.endswith("/"):
        dir_only = True
        line = line[:-1]
        if line.endswith("\\"):
            line = line[:-1]
    glob = line
    if not anchored and "/" not in line and not (glob.startswith("**/") or glob == "**"):
        glob = "**/" + glob
    if glob.endswith("/**"):
        glob += "/*"
    try:
        regex = glob_to_regex(glob, literal_separator=True)
    except GlobError:
        # A malformed line is skipped; the other rules of the file still apply, as in git.
        return None
    flags = re.DOTALL | (re.IGNORECASE if case_insensitive else 0)
    return _Rule(re.compile(regex, flags), whitelist, dir_only, original)


class Gitignore:
    """The rules of one ignore file, rooted at the directory ``root``.

    :param root: absolute directory the rules are relative to.
    :param lines: the file's lines.
    """

    __slots__ = ("_any", "root", "rules")

    def __init__(self, root: str, lines: Iterable[str], *, case_insensitive: bool = False) -> None:
        self.root = root
        self.rules: list[_Rule] = []
        for index, line in enumerate(lines):
            if index == 0:
                line = line.lstrip("\ufeff")
            rule = _parse_line(line.rstrip("\r"), case_insensitive)
            if rule is not None:
                self.rules.append(rule)
        # One alternation answers "does any rule match?" in a single call, the common "no".
        combined = "|".join(f"(?:{rule.pattern.pattern})" for rule in self.rules)
        flags = re.DOTALL | (re.IGNORECASE if case_insensitive else 0)
        self._any = re.compile(combined, flags) if self.rules else None

    @classmethod
    def from_file(cls, path: str, root: str | None = None) -> Gitignore | None:
        """Load ``path`` (rooted at its directory unless ``root`` is given); ``None`` if absent
        or empty."""
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            return None
        lines = data.decode("utf-8", "replace").split("\n")
        matcher = cls(root if root is not None else os.path.dirname(path), lines)
        return matcher if matcher.rules else None

    def relative(self, path: str) -> str:
        """``path`` relative to :attr:`root` (unchanged when it lies elsewhere)."""
        root = self.root
        if path.startswith(root) and len(path) > len(root) and (root.endswith("/") or path[len(root)] == "/"):
            return path[len(root) :].lstrip("/")
        return path

    def matched(self, path: str, is_dir: bool) -> Match:
        """The verdict on ``path`` (absolute, or relative to :attr:`root`)."""
        return self.matched_relative(self.relative(path), is_dir)

    def matched_relative(self, relative: str, is_dir: bool) -> Match:
        """The verdict on a path already relative to :attr:`root`."""
        if self._any is None or self._any.fullmatch(relative) is None:
            return Match.NONE
        for rule in reversed(self.rules):
            if (is_dir or not rule.dir_only) and rule.pattern.fullmatch(relative):
                return Match.WHITELIST if rule.whitelist else Match.IGNORE
        return Match.NONE


class Override:
    """Command-line globs (ripgrep's ``--glob``, fd's ``--exclude``): gitignore syntax, inverted.

    A plain glob selects (only files matching some plain glob are searched), a ``!glob``
    excludes; overrides beat every ignore file.
    """

    __slots__ = ("_rules", "_whitelists")

    def __init__(self, root: str, globs: Iterable[str]) -> None:
        self._rules = Gitignore(root, globs)
        self._whitelists = sum(1 for rule in self._rules.rules if not rule.whitelist)

    def matched(self, path: str, is_dir: bool) -> Match:
        """The verdict on ``path``; a file no selecting glob matches is ignored."""
        verdict = self._rules.matched(path, is_dir).invert()
        if verdict is Match.NONE and self._whitelists and not is_dir:
            return Match.IGNORE
        return verdict
