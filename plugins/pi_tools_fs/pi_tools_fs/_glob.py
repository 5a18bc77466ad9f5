"""Glob patterns with the syntax ripgrep and fd use (Rust's ``globset``), compiled to ``re``.

``?`` one character, ``*`` any run, ``**`` whole path components (``**/x``, ``x/**``,
``a/**/b``; elsewhere it is ``*``), ``[a-z]`` / ``[!a-z]`` classes, ``{a,b}`` alternatives,
``\\`` escapes the next character. With ``literal_separator`` a wildcard never matches ``/``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["GlobError", "compile_glob", "glob_to_regex", "name_superset"]


class GlobError(ValueError):
    """A malformed glob; the text follows ``globset``'s (``error parsing glob '[': ...``)."""


@dataclass
class _Tokens:
    items: list[object] = field(default_factory=list)


class _Any:
    pass


class _ZeroOrMore:
    pass


class _RecursivePrefix:
    pass


class _RecursiveSuffix:
    pass


class _RecursiveZeroOrMore:
    pass


@dataclass(frozen=True)
class _Class:
    negated: bool
    ranges: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class _Alternates:
    alternatives: tuple[tuple[object, ...], ...]


_ANY = _Any()
_ZERO_OR_MORE = _ZeroOrMore()
_RECURSIVE_PREFIX = _RecursivePrefix()
_RECURSIVE_SUFFIX = _RecursiveSuffix()
_RECURSIVE_ZERO_OR_MORE = _RecursiveZeroOrMore()


class _Parser:
    def __init__(self, glob: str, backslash_escape: bool) -> None:
        self.glob = glob
        self.pos = 0
        self.prev: str | None = None
        self.cur: str | None = None
        # One token list per open alternative; ``opened`` records the stack depth at each '{'
        # so a '}' closes exactly its own group (nested groups are allowed).
        self.stack: list[_Tokens] = [_Tokens()]
        self.opened: list[int] = []
        self.backslash_escape = backslash_escape

    def error(self, message: str) -> GlobError:
        return GlobError(f"error parsing glob '{self.glob}': {message}")

    def bump(self) -> str | None:
        self.prev = self.cur
        if self.pos >= len(self.glob):
            self.cur = None
            return None
        self.cur = self.glob[self.pos]
        self.pos += 1
        return self.cur

    def peek(self) -> str | None:
        return self.glob[self.pos] if self.pos < len(self.glob) else None

    def push(self, token: object) -> None:
        self.stack[-1].items.append(token)

    def parse(self) -> list[object]:
        while (ch := self.bump()) is not None:
            if ch == "?":
                self.push(_ANY)
            elif ch == "*":
                self.parse_star()
            elif ch == "[":
                self.parse_class()
            elif ch == "{":
                self.opened.append(len(self.stack))
                self.stack.append(_Tokens())
            elif ch == "}":
                self.close_alternates()
            elif ch == "," and self.opened:
                self.stack.append(_Tokens())
            elif ch == "\\":
                self.parse_backslash()
            else:
                self.push(ch)
        if self.opened:
            raise self.error("unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)")
        return self.stack[0].items

    def close_alternates(self) -> None:
        if not self.opened:
            raise self.error("unopened alternate group; missing '{' (maybe escape '}' with '[}]'?)")
        depth = self.opened.pop()
        alternatives: list[tuple[object, ...]] = []
        while len(self.stack) > depth:
            alternatives.append(tuple(self.stack.pop().items))
        self.push(_Alternates(tuple(reversed(alternatives))))

    def parse_backslash(self) -> None:
        if not self.backslash_escape:
            self.push("\\")
            return
        ch = self.bump()
        if ch is None:
            raise self.error("dangling '\\'")
        self.push(ch)

    def parse_star(self) -> None:
        prev = self.prev
        if self.peek() != "*":
            self.push(_ZERO_OR_MORE)
            return
        self.bump()
        if not self.stack[-1].items:
            if self.peek() not in (None, "/"):
                self.push(_ZERO_OR_MORE)
                self.push(_ZERO_OR_MORE)
            else:
                self.push(_RECURSIVE_PREFIX)
                self.bump()
            return
        if prev != "/" and (not self.opened or prev not in (",", "{")):
            self.push(_ZERO_OR_MORE)
            self.push(_ZERO_OR_MORE)
            return
        nxt = self.peek()
        if nxt is None:
            self.bump()
            is_suffix = True
        elif nxt in (",", "}") and self.opened:
            is_suffix = True
        elif nxt == "/":
            self.bump()
            is_suffix = False
        else:
            self.push(_ZERO_OR_MORE)
            self.push(_ZERO_OR_MORE)
            return
        last = self.stack[-1].items.pop()
        if last is _RECURSIVE_PREFIX or last is _RECURSIVE_SUFFIX:
            self.push(last)
        else:
            self.push(_RECURSIVE_SUFFIX if is_suffix else _RECURSIVE_ZERO_OR_MORE)

    def parse_class(self) -> None:
        negated = False
        if self.peek() in ("!", "^"):
            self.bump()
            negated = True
        ranges: list[tuple[str, str]] = []
        first = True
        in_range = False
        while True:
            ch = self.bump()
            if ch is None:
                raise self.error("unclosed character class; missing ']'")
            if ch == "]":
                if not first:
                    break
                ranges.append(("]", "]"))
            elif ch == "-":
                if first:
                    ranges.append(("-", "-"))
                elif in_range:
                    self.extend_range(ranges, "-")
                    in_range = False
                else:
                    in_range = True
            else:
                if in_range:
                    self.extend_range(ranges, ch)
                else:
                    ranges.append((ch, ch))
                in_range = False
            first = False
        if in_range:
            ranges.append(("-", "-"))
        self.push(_Class(negated, tuple(ranges)))

    def extend_range(self, ranges: list[tuple[str, str]], end: str) -> None:
        start = ranges[-1][0]
        if start > end:
            raise self.error(f"invalid range; '{start}' > '{end}'")
        ranges[-1] = (start, end)


def _parse(glob: str, backslash_escape: bool) -> list[object]:
    return _Parser(glob, backslash_escape).parse()


def _class_char(ch: str) -> str:
    return "\\" + ch if ch in "\\]^-[" else ch


def _to_regex(tokens: list[object] | tuple[object, ...], literal_separator: bool, out: list[str]) -> None:
    for index, token in enumerate(tokens):
        if isinstance(token, str):
            out.append(re.escape(token))
        elif token is _ANY:
            out.append("[^/]" if literal_separator else ".")
        elif token is _ZERO_OR_MORE:
            out.append("[^/]*" if literal_separator else ".*")
        elif token is _RECURSIVE_PREFIX:
            out.append("(?:/?|.*/)")
        elif token is _RECURSIVE_SUFFIX:
            out.append(".*" if index == 0 else "/.*")
        elif token is _RECURSIVE_ZERO_OR_MORE:
            out.append("(?:/|/.*/)")
        elif isinstance(token, _Class):
            body = "".join(
                _class_char(a) if a == b else f"{_class_char(a)}-{_class_char(b)}" for a, b in token.ranges
            )
            out.append(f"[{'^' if token.negated else ''}{body}]")
        elif isinstance(token, _Alternates):
            parts: list[str] = []
            for alternative in token.alternatives:
                piece: list[str] = []
                _to_regex(alternative, literal_separator, piece)
                if piece:
                    parts.append("".join(piece))
            if parts:
                out.append("(?:" + "|".join(parts) + ")")
        else:  # pragma: no cover - every token kind is handled above
            raise AssertionError(token)


def glob_to_regex(glob: str, *, literal_separator: bool = True, backslash_escape: bool = True) -> str:
    """The regular expression (``re`` syntax, anchored) that ``glob`` denotes.

    :raises GlobError: for an unclosed class or alternate group, a bad range or a dangling
        backslash.
    """
    tokens = _parse(glob, backslash_escape)
    if len(tokens) == 1 and tokens[0] is _RECURSIVE_PREFIX:
        return r"\A.*\Z"
    out: list[str] = []
    _to_regex(tokens, literal_separator, out)
    return r"\A" + "".join(out) + r"\Z"


def compile_glob(
    glob: str, *, literal_separator: bool = True, case_insensitive: bool = False
) -> re.Pattern[str]:
    """:func:`glob_to_regex`, compiled (``re.DOTALL``; ``re.IGNORECASE`` on request)."""
    flags = re.DOTALL | (re.IGNORECASE if case_insensitive else 0)
    return re.compile(glob_to_regex(glob, literal_separator=literal_separator), flags)


# Characters a name filter keeps as they are: the same byte in every glob dialect (globset,
# gitignore lines), never special, never the start of a comment or a negation.
_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-+=@%~")
# ASCII letters that ``re.IGNORECASE`` also equates with a non-ASCII character (U+0130,
# U+0131, U+017F, U+212A): a byte class cannot name those, so a wildcard stands in.
_WIDE_CASE = frozenset("iIsSkK")


def name_superset(glob: str, *, case_insensitive: bool) -> str | None:
    """A plain glob that matches at least every name ``glob`` matches, for a fast filter
    (ripgrep's ignore rules) whose results :func:`compile_glob` then decides exactly.

    Only plain characters survive; every other token becomes ``*`` (a wildcard, class or
    alternation matches some run of characters), and with ``case_insensitive`` a letter
    becomes the class of its two cases. ``None`` when nothing but ``*`` would be left, or
    when ``glob`` holds a ``/`` (a name never does).

    :raises GlobError: when ``glob`` is malformed.
    """
    pieces: list[str] = []
    for token in _parse(glob, backslash_escape=True):
        if isinstance(token, str) and token == "/":
            return None
        if isinstance(token, str) and token in _PLAIN and not (case_insensitive and token in _WIDE_CASE):
            if case_insensitive and token.isalpha():
                pieces.append(f"[{token.lower()}{token.upper()}]")
            else:
                pieces.append(token)
        elif not pieces or pieces[-1] != "*":
            pieces.append("*")
    if all(piece == "*" for piece in pieces):
        return None
    return "".join(pieces)
