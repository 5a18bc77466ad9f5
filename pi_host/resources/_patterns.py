"""Glob and gitignore matching for resource discovery.

pi skips files its ``.gitignore`` / ``.ignore`` / ``.fdignore`` rules exclude while it walks skill
and prompt directories, and filters resources with glob patterns from ``settings.json``
(``"!drafts/**"``, ``"+path"``, ``"-path"``). Both need the same small glob dialect: ``*`` and
``?`` stay within one path segment, ``**`` spans segments, ``[...]`` is a character class.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import NamedTuple

__all__ = [
    "IGNORE_FILE_NAMES",
    "IgnoreRules",
    "apply_patterns",
    "glob_match",
    "is_enabled_by_overrides",
    "relative_posix",
    "to_posix",
]

IGNORE_FILE_NAMES = (".gitignore", ".ignore", ".fdignore")


def to_posix(path: str) -> str:
    """*path* with the platform separator replaced by ``/``."""
    return path.replace(os.sep, "/") if os.sep != "/" else path


def _glob_body(pattern: str) -> str:
    """Translate a glob to a regular expression body (no anchors)."""
    out: list[str] = []
    i = 0
    length = len(pattern)
    while i < length:
        char = pattern[i]
        if char == "*":
            if pattern[i : i + 2] == "**":
                at_segment_start = i == 0 or pattern[i - 1] == "/"
                j = i + 2
                if at_segment_start and pattern[j : j + 1] == "/":
                    out.append("(?:.*/)?")
                    i = j + 1
                    continue
                if at_segment_start and j == length:
                    out.append(".*")
                    i = j
                    continue
                out.append("[^/]*")
                i = j
                continue
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "^") else i + 1)
            if end == -1:
                out.append(re.escape(char))
            else:
                inner = pattern[i + 1 : end]
                if inner.startswith("!"):
                    inner = "^" + inner[1:]
                out.append("[" + inner.replace("\\", "\\\\") + "]")
                i = end
        elif char == "\\" and i + 1 < length:
            out.append(re.escape(pattern[i + 1]))
            i += 1
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


@lru_cache(maxsize=512)
def _compiled_glob(pattern: str) -> re.Pattern[str]:
    return re.compile(_glob_body(pattern), re.DOTALL)


def glob_match(path: str, pattern: str) -> bool:
    """Whether the whole of *path* (``/``-separated) matches the glob *pattern*."""
    return _compiled_glob(pattern).fullmatch(path) is not None


class _IgnoreRule(NamedTuple):
    regex: re.Pattern[str]
    negated: bool
    directory_only: bool


def _parse_ignore_line(line: str, prefix: str) -> _IgnoreRule | None:
    """One gitignore line, re-rooted under *prefix* as pi does for nested ignore files."""
    stripped = line.strip()
    if not stripped or (stripped.startswith("#") and not stripped.startswith("\\#")):
        return None
    pattern = line.rstrip()
    # A trailing space survives only when escaped.
    if pattern.endswith("\\") and line[len(pattern) : len(pattern) + 1] == " ":
        pattern += " "
    negated = False
    if pattern.startswith("!"):
        negated = True
        pattern = pattern[1:]
    elif pattern.startswith(("\\!", "\\#")):
        pattern = pattern[1:]
    pattern = pattern.removeprefix("/")
    pattern = prefix + pattern
    directory_only = pattern.endswith("/")
    pattern = pattern.rstrip("/")
    if not pattern:
        return None
    anchored = "/" in pattern
    body = _glob_body(pattern)
    regex = re.compile(("" if anchored else "(?:.*/)?") + body, re.DOTALL)
    return _IgnoreRule(regex, negated, directory_only)


@dataclass
class IgnoreRules:
    """Accumulated gitignore rules for one directory walk (pi's ``ignore`` matcher)."""

    _rules: list[_IgnoreRule] = field(default_factory=list)

    def add_directory(self, directory: Path, root: Path) -> None:
        """Add the rules of *directory*'s ignore files, re-rooted relative to *root*."""
        relative = os.path.relpath(directory, root)
        prefix = "" if relative == "." else to_posix(relative) + "/"
        for name in IGNORE_FILE_NAMES:
            path = directory / name
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            for line in re.split(r"\r?\n", text):
                rule = _parse_ignore_line(line, prefix)
                if rule is not None:
                    self._rules.append(rule)

    def ignores(self, relative_path: str, *, is_dir: bool = False) -> bool:
        """Whether the ``/``-separated *relative_path* is ignored (the last matching rule wins)."""
        path = relative_path.rstrip("/")
        ignored = False
        for rule in self._rules:
            if rule.directory_only and not is_dir:
                continue
            if rule.regex.fullmatch(path):
                ignored = not rule.negated
        return ignored


def _match_candidates(file_path: Path, base_dir: Path) -> tuple[list[str], list[str]]:
    """The names a settings pattern is tried against: relative path, base name, absolute path.

    For a ``SKILL.md`` the skill's directory is tried too, so ``"!my-skill"`` excludes it.
    """
    relative = to_posix(os.path.relpath(file_path, base_dir))
    absolute = to_posix(str(file_path))
    candidates = [relative, file_path.name, absolute]
    exact = [relative, absolute]
    if file_path.name == "SKILL.md":
        parent = file_path.parent
        parent_relative = to_posix(os.path.relpath(parent, base_dir))
        candidates += [parent_relative, parent.name, to_posix(str(parent))]
        exact += [parent_relative, to_posix(str(parent))]
    return candidates, exact


def _matches_any(file_path: Path, patterns: Sequence[str], base_dir: Path) -> bool:
    candidates, _ = _match_candidates(file_path, base_dir)
    return any(glob_match(candidate, to_posix(p)) for p in patterns for candidate in candidates)


def _matches_any_exact(file_path: Path, patterns: Sequence[str], base_dir: Path) -> bool:
    if not patterns:
        return False
    _, exact = _match_candidates(file_path, base_dir)
    normalized = [to_posix(p[2:] if p.startswith(("./", ".\\")) else p) for p in patterns]
    return any(p in exact for p in normalized)


def _split_overrides(patterns: Iterable[str]) -> tuple[list[str], list[str], list[str], list[str]]:
    includes: list[str] = []
    excludes: list[str] = []
    force_includes: list[str] = []
    force_excludes: list[str] = []
    for pattern in patterns:
        if pattern.startswith("+"):
            force_includes.append(pattern[1:])
        elif pattern.startswith("-"):
            force_excludes.append(pattern[1:])
        elif pattern.startswith("!"):
            excludes.append(pattern[1:])
        else:
            includes.append(pattern)
    return includes, excludes, force_includes, force_excludes


def apply_patterns(paths: Sequence[Path], patterns: Sequence[str], base_dir: Path) -> set[Path]:
    """The subset of *paths* that settings *patterns* enable.

    Globs include (all paths when there are none), ``!glob`` excludes, ``+path`` force-includes
    an exact path back, ``-path`` force-excludes an exact path; applied in that order.
    """
    includes, excludes, force_includes, force_excludes = _split_overrides(patterns)
    result = [p for p in paths if _matches_any(p, includes, base_dir)] if includes else list(paths)
    if excludes:
        result = [p for p in result if not _matches_any(p, excludes, base_dir)]
    if force_includes:
        for p in paths:
            if p not in result and _matches_any_exact(p, force_includes, base_dir):
                result.append(p)
    if force_excludes:
        result = [p for p in result if not _matches_any_exact(p, force_excludes, base_dir)]
    return set(result)


def is_enabled_by_overrides(path: Path, entries: Sequence[str], base_dir: Path) -> bool:
    """Whether an auto-discovered *path* survives the ``!``/``+``/``-`` entries of a settings list."""
    _, excludes, force_includes, force_excludes = _split_overrides(
        e for e in entries if e.startswith(("!", "+", "-"))
    )
    enabled = True
    if excludes and _matches_any(path, excludes, base_dir):
        enabled = False
    if force_includes and _matches_any_exact(path, force_includes, base_dir):
        enabled = True
    if force_excludes and _matches_any_exact(path, force_excludes, base_dir):
        enabled = False
    return enabled


def relative_posix(path: Path, root: Path) -> str:
    """*path* relative to *root*, ``/``-separated."""
    return str(PurePosixPath(*Path(os.path.relpath(path, root)).parts))
