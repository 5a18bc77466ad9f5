"""JSON that arrives in pieces: best-effort values of incomplete text, and repair of sloppy text.

Tool-call arguments stream as JSON fragments; every ``toolcall_delta`` event carries the
arguments parsed so far (pi's ``parseStreamingJson``). Re-parsing the whole text with a
Python-level parser on every fragment would be quadratic in Python bytecode, so
:class:`StreamingJson` scans only each *new* fragment to track the nesting, string and
value state, and remembers the last *safe cut*: a prefix that becomes valid JSON once the open
containers are closed. A best-effort value is then one C-speed ``json.loads`` of a short
candidate (the text, a closing quote when a string value is open, and the closers).

What an incomplete text yields:

- an open string value keeps its partial text (``{"path": "/tm`` gives ``{"path": "/tm"}``);
- a complete number or literal at the end is kept, a partial one (``tr``, ``1.``) is dropped;
- a key without its value is dropped (``{"a": 1, "b`` gives ``{"a": 1}``).

Models also emit JSON that is *complete* but sloppy: raw control characters inside strings
(accepted here through ``strict=False``) and invalid escapes such as ``\\d``, which
:func:`repair_json` doubles into a literal backslash, as pi does.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic_core import from_json

__all__ = [
    "StreamingJson",
    "parse_json_with_repair",
    "parse_streaming_json",
    "parse_tool_arguments",
    "repair_json",
]

_VALID_ESCAPES = frozenset('"\\/bfnrtu')
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_CONTROL_ESCAPES = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_WHITESPACE = frozenset(" \t\r\n")
_SCALAR_START = frozenset("-0123456789tfnIN")
_SCALAR_END = frozenset(",]} \t\r\n")
_HEX = frozenset("0123456789abcdefABCDEF")

_loads = json.JSONDecoder(strict=False).decode


def repair_json(text: str, *, in_string: bool = False) -> str:
    """Escape raw control characters inside strings and double backslashes of invalid escapes.

    :param in_string: ``text`` starts inside a string literal (a piece of a longer text).
    """
    out: list[str] = []
    index = 0
    length = len(text)
    while index < length:
        char = text[index]
        if not in_string:
            out.append(char)
            if char == '"':
                in_string = True
            index += 1
            continue
        if char == '"':
            out.append(char)
            in_string = False
        elif char == "\\":
            following = text[index + 1] if index + 1 < length else ""
            if following == "u" and _HEX4.fullmatch(text, index + 2, index + 6):
                out.append(text[index : index + 6])
                index += 6
                continue
            if following and following in _VALID_ESCAPES and following != "u":
                out.append(text[index : index + 2])
                index += 2
                continue
            out.append("\\\\")
        elif ord(char) < 0x20:
            out.append(_CONTROL_ESCAPES.get(char, f"\\u{ord(char):04x}"))
        else:
            out.append(char)
        index += 1
    return "".join(out)


def parse_json_with_repair(text: str) -> Any:
    """Parse JSON, or else its repaired text. Control characters in strings are accepted.

    :raises ValueError: when neither the text nor its repair is JSON.
    """
    try:
        # pydantic-core's parser takes a quarter of the time (every streamed event goes through
        # here) and agrees with the json module on every text it accepts; what it refuses
        # (raw control characters, lone surrogates, bad JSON) takes the json module's path, so
        # results and error messages stay the json module's.
        return from_json(text)
    except ValueError:
        pass
    try:
        return _loads(text)
    except ValueError:
        repaired = repair_json(text)
        if repaired == text:
            raise
        return _loads(repaired)


def parse_streaming_json(text: str) -> Any:
    """Best-effort value of a JSON text that may be incomplete; ``{}`` when nothing is usable."""
    if not text or text.isspace():
        return {}
    try:
        return parse_json_with_repair(text)
    except ValueError:
        pass
    parser = StreamingJson()
    parser.feed(text)
    value = parser.value()
    return {} if value is None else value


def parse_tool_arguments(text: str) -> dict[str, Any]:
    """Tool-call arguments from their JSON text: a dict, ``{}`` for anything that is not an object."""
    value = parse_streaming_json(text)
    return value if isinstance(value, dict) else {}


class _Frame:
    __slots__ = ("count", "is_object", "key", "key_chars", "state")

    def __init__(self, is_object: bool) -> None:
        self.is_object = is_object
        # object: "key" -> "colon" -> "value" -> "after"; array: "value" -> "after"
        self.state = "key" if is_object else "value"
        self.key: str = ""  # object: the key of the value being read
        self.key_chars: list[str] = []
        self.count = 0  # array: values started so far


class StreamingJson:
    """Accumulate a JSON text fragment by fragment; :meth:`value` gives the best-effort parse.

    :meth:`feed` costs time proportional to the fragment. :meth:`value` costs one C-level parse
    of the text, except in the hot case of a long string value still streaming (a file's
    content in a ``write`` call): there the enclosing structure is parsed once and the string
    is decoded incrementally, so the cost per fragment stays proportional to the fragment.
    """

    __slots__ = (
        "_base",
        "_base_for",
        "_broken",
        "_cache",
        "_decoded",
        "_decoded_upto",
        "_done",
        "_escape",
        "_in_scalar",
        "_in_string",
        "_key_string",
        "_parts",
        "_pos",
        "_safe_closers",
        "_safe_pos",
        "_stack",
        "_string_start",
        "_text",
    )

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._text = ""
        self._pos = 0
        self._stack: list[_Frame] = []
        self._in_string = False
        self._key_string = False
        self._escape = False
        self._in_scalar = False
        self._done = False
        self._broken = False
        self._safe_pos = 0
        self._safe_closers = ""
        self._string_start = -1
        self._base: Any = None
        self._base_for = -1
        self._decoded = ""
        self._decoded_upto = 0
        self._cache: tuple[int, Any] | None = None

    @property
    def text(self) -> str:
        """Everything fed so far."""
        if self._parts:
            self._text += "".join(self._parts)
            self._parts.clear()
        return self._text

    def feed(self, fragment: str) -> None:
        """Append ``fragment`` and advance the scanner over it."""
        if not fragment:
            return
        self._parts.append(fragment)
        if not self._broken:
            pos = self._pos
            for char in fragment:
                self._step(char, pos)
                if self._broken:
                    break
                pos += 1
        self._pos += len(fragment)

    def value(self) -> Any:
        """The best-effort value of the text so far, or ``None`` when nothing is usable yet."""
        text = self.text
        if self._cache is not None and self._cache[0] == len(text):
            return self._cache[1]
        result = self._open_string_value(text) if self._in_string and not self._key_string else _UNSET
        if result is _UNSET:
            result = self._compute(text)
        self._cache = (len(text), result)
        return result

    # -- scanning --------------------------------------------------------------------------

    def _closers(self) -> str:
        return "".join("}" if frame.is_object else "]" for frame in reversed(self._stack))

    def _complete_value(self, end: int) -> None:
        if self._stack:
            self._stack[-1].state = "after"
            self._safe_pos, self._safe_closers = end, self._closers()
        else:
            self._done = True
            self._safe_pos, self._safe_closers = end, ""

    def _start_value(self, char: str, pos: int) -> None:
        if self._stack and not self._stack[-1].is_object:
            self._stack[-1].count += 1
        if char == '"':
            self._in_string = True
            self._key_string = False
            self._string_start = pos
        elif char == "{" or char == "[":
            self._stack.append(_Frame(char == "{"))
            self._safe_pos, self._safe_closers = pos + 1, self._closers()
        elif char in _SCALAR_START:
            self._in_scalar = True
        else:
            self._broken = True

    def _step(self, char: str, pos: int) -> None:
        if self._in_string:
            if self._escape:
                self._escape = False
            elif char == "\\":
                self._escape = True
            elif char == '"':
                self._in_string = False
                if self._key_string:
                    frame = self._stack[-1]
                    frame.state = "colon"
                    frame.key = _decode_string_body("".join(frame.key_chars))
                    frame.key_chars = []
                else:
                    self._complete_value(pos + 1)
                return
            if self._key_string:
                self._stack[-1].key_chars.append(char)
            return
        if self._in_scalar:
            if char not in _SCALAR_END:
                return
            self._in_scalar = False
            self._complete_value(pos)
        if char in _WHITESPACE:
            return
        if not self._stack:
            if self._done:
                self._broken = True
            else:
                self._start_value(char, pos)
            return
        frame = self._stack[-1]
        state = frame.state
        if state == "value":
            if char == "]" and not frame.is_object:
                self._close(pos)
            else:
                self._start_value(char, pos)
        elif state == "after":
            if char == ",":
                frame.state = "key" if frame.is_object else "value"
            elif char == ("}" if frame.is_object else "]"):
                self._close(pos)
            else:
                self._broken = True
        elif state == "key":
            if char == '"':
                self._in_string = True
                self._key_string = True
            elif char == "}":
                self._close(pos)
            else:
                self._broken = True
        elif char == ":":  # state == "colon"
            frame.state = "value"
        else:
            self._broken = True

    def _close(self, pos: int) -> None:
        self._stack.pop()
        self._complete_value(pos + 1)

    # -- best-effort value -----------------------------------------------------------------

    def _open_string_value(self, text: str) -> Any:
        """The value while a string value is open at the end: incremental, or ``_UNSET``."""
        start = self._string_start
        if self._base_for != start:
            try:
                self._base = parse_json_with_repair(text[:start] + '""' + self._closers())
            except ValueError:
                return _UNSET
            self._base_for = start
            self._decoded = ""
            self._decoded_upto = start + 1
        end = _complete_prefix_end(text, escape_pending=self._escape)
        if end > self._decoded_upto:
            self._decoded += _decode_string_body(text[self._decoded_upto : end])
            self._decoded_upto = end
        path: list[str | int] = [frame.key if frame.is_object else frame.count - 1 for frame in self._stack]
        try:
            return _replace_at(self._base, path, self._decoded)
        except (KeyError, IndexError, TypeError):
            return _UNSET

    def _compute(self, text: str) -> Any:
        candidates: list[str] = []
        if self._broken or self._done:
            candidates.append(text)
        elif self._in_string and not self._key_string:
            end = _complete_prefix_end(text, escape_pending=self._escape)
            candidates.append(text[:end] + '"' + self._closers())
        elif self._in_scalar or (self._stack and self._stack[-1].state == "after"):
            candidates.append(text + self._closers())
        if self._safe_pos > 0:
            candidates.append(text[: self._safe_pos] + self._safe_closers)
        for candidate in candidates:
            try:
                return parse_json_with_repair(candidate)
            except ValueError:
                continue
        return None


_UNSET: Any = object()


def _decode_string_body(body: str) -> str:
    """The value of a string literal's inside (escapes and all, no quotes)."""
    try:
        result = _loads(f'"{body}"')
    except ValueError:
        result = _loads(f'"{repair_json(body, in_string=True)}"')
    assert isinstance(result, str)
    return result


def _complete_prefix_end(text: str, *, escape_pending: bool) -> int:
    """Where the decodable part of an open string ends: before a dangling backslash, a
    ``\\u`` escape still arriving, or a high surrogate whose low half has not arrived."""
    end = len(text) - 1 if escape_pending else len(text)
    while True:
        trimmed = _before_partial_unicode_escape(text, end)
        if trimmed == end:
            return end
        end = trimmed


def _before_partial_unicode_escape(text: str, end: int) -> int:
    for digits in range(5):
        u_at = end - digits - 1
        if u_at < 1 or text[u_at] != "u":
            continue
        if not all(char in _HEX for char in text[u_at + 1 : end]):
            continue
        backslashes = 0
        while u_at - 1 - backslashes >= 0 and text[u_at - 1 - backslashes] == "\\":
            backslashes += 1
        if backslashes % 2 == 0:
            continue  # an escaped backslash followed by a literal "u"
        if digits < 4 or 0xD800 <= int(text[u_at + 1 : end], 16) <= 0xDBFF:
            return u_at - 1
        return end
    return end


def _replace_at(container: Any, path: list[str | int], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    copy = container.copy()
    copy[head] = _replace_at(container[head], rest, value)
    return copy
