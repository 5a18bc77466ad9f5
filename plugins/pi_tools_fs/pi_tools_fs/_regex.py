"""grep's pattern for the pure-Python search, compiled with RE2 (linear time, cannot hang).

RE2 matches in time linear in the text whatever the pattern, so a model-written
``(a+)+b`` cannot freeze the agent the way Python's backtracking ``re`` does. Its syntax is
ripgrep's default syntax less a few points, which this module bridges or reports:

- ``\\d``, ``\\w``, ``\\s`` (and ``\\D``, ``\\W``, ``\\S`` outside a class) are Unicode-aware in
  ripgrep and ASCII-only in RE2: they are rewritten to Unicode classes. ``\\b`` stays ASCII.
- ``\\A`` and ``\\z`` anchor at each line's start and end in ripgrep (it matches line by line);
  the text searched here is many lines at once, so they become ``^`` and ``$``.
- Look-around and backreferences are refused with the same words as ripgrep (whose default
  engine lacks them too); other syntax RE2 rejects gets RE2's own message.

Matches never cross a line break (RE2's ``never_nl``), as in ripgrep's line-oriented search.
"""

from __future__ import annotations

from typing import Protocol, cast

__all__ = ["GrepPatternError", "LineMatch", "LineRegex", "compile_line_regex"]

_WORD = r"\p{L}\p{M}\p{Nd}\p{Pc}"
_SPACE = r"\s\p{Z}\x{85}"
# Escapes whose RE2 meaning is ASCII-only: (replacement inside a class, outside a class).
_UNICODE_CLASSES: dict[str, tuple[str | None, str]] = {
    "d": (r"\p{Nd}", r"\p{Nd}"),
    "D": (r"\P{Nd}", r"\P{Nd}"),
    "w": (_WORD, f"[{_WORD}]"),
    "W": (None, f"[^{_WORD}]"),
    "s": (_SPACE, f"[{_SPACE}]"),
    "S": (None, f"[^{_SPACE}]"),
    "A": (None, "^"),
    "z": (None, "$"),
}


class GrepPatternError(ValueError):
    """The pattern is not a regular expression this search can run."""


class LineMatch(Protocol):
    """Where a match begins (a byte offset)."""

    def start(self) -> int: ...


class LineRegex(Protocol):
    """A compiled pattern: :meth:`search` finds the next match in UTF-8 bytes from ``pos`` on
    (the text before ``pos`` still counts for ``^`` and ``\\b``)."""

    def search(self, text: bytes, pos: int = 0) -> LineMatch | None: ...


def _unicode_classes(pattern: str) -> str:
    """``pattern`` with RE2's ASCII-only Perl classes replaced by Unicode ones."""
    out: list[str] = []
    index = 0
    in_class = False
    class_start = 0  # where the current class's items begin (after ``[`` and ``^``)
    length = len(pattern)
    while index < length:
        char = pattern[index]
        if char == "\\" and index + 1 < length:
            escape = pattern[index + 1]
            replacement = _UNICODE_CLASSES.get(escape)
            if replacement is None:
                out.append(pattern[index : index + 2])
            else:
                inside, outside = replacement
                out.append((inside or pattern[index : index + 2]) if in_class else outside)
            index += 2
            continue
        if in_class:
            # A ``]`` first in the class is a literal; ``[:alpha:]`` nests inside a class.
            if char == "]" and index > class_start:
                in_class = False
            elif char == "[" and pattern.startswith("[:", index):
                end = pattern.find(":]", index + 2)
                if end != -1:
                    out.append(pattern[index : end + 2])
                    index = end + 2
                    continue
        elif char == "[":
            in_class = True
            class_start = index + 1
            if pattern.startswith("^", class_start):
                out.append("[^")
                index += 2
                class_start += 1
                continue
        out.append(char)
        index += 1
    return "".join(out)


def _message(error: Exception) -> str:
    raw = error.args[0] if error.args else str(error)
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    if text.startswith(_LOOK_AROUND):
        return "look-around, including look-ahead and look-behind, is not supported"
    if text.startswith("invalid perl operator: (?P=") or (
        text.startswith("invalid escape sequence: \\") and text[-1:].isdigit()
    ):
        return "backreferences are not supported"
    return text


_LOOK_AROUND = tuple(f"invalid perl operator: {op}" for op in ("(?=", "(?!", "(?<=", "(?<!"))


def compile_line_regex(pattern: str, *, literal: bool, ignore_case: bool) -> LineRegex:
    """Compile ``pattern`` for line-oriented search of UTF-8 bytes.

    :raises GrepPatternError: with ripgrep's ``regex parse error`` layout, naming the pattern.
    """
    # Imported here: only the pure-Python search needs RE2, and most runs have ripgrep.
    import re2  # type: ignore[import-untyped]

    options = re2.Options()
    options.log_errors = False  # RE2 would print each parse error on stderr
    options.never_nl = True
    options.case_sensitive = not ignore_case
    options.literal = literal
    source = pattern if literal else "(?m)" + _unicode_classes(pattern)
    try:
        return cast(LineRegex, re2.compile(source.encode("utf-8", "surrogatepass"), options))
    except re2.error as exc:
        error = exc
    # RE2's message quotes the text it parsed: parse the pattern as written to quote that.
    try:
        re2.compile(pattern.encode("utf-8", "surrogatepass"), options)
    except re2.error as exc:
        error = exc
    raise GrepPatternError(f"regex parse error:\n    {pattern}\nerror: {_message(error)}")
