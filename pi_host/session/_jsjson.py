"""JSON text exactly as JavaScript's ``JSON.stringify`` writes it.

pi writes every session line with ``JSON.stringify``. Python's encoders differ from it in ways
that change bytes: number formatting (``1e-05`` or ``1.5e-5`` where JavaScript writes
``0.00001`` and ``0.000015``, ``1.0`` where it writes ``1``), the order of integer-like object
keys (JavaScript lists them first, in ascending order) and lone surrogates (escaped by
JavaScript, unencodable in UTF-8 for Python). Session files must survive a round trip through
pi-host byte for byte, so lines are written with this encoder.
"""

from __future__ import annotations

import json.encoder
import math
import re
from typing import Any

__all__ = ["js_dumps", "js_number"]

_encode_str = json.encoder.encode_basestring  # the C implementation: escapes like JavaScript
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_MAX_SAFE = 2**53
# JavaScript orders "array index" keys (canonical integers below 2**32 - 1) before the others.
_ARRAY_INDEX = re.compile(r"(?:0|[1-9][0-9]{0,9})\Z")
_MAX_INDEX = 2**32 - 2


def js_number(value: float) -> str:
    """Format a float the way JavaScript's ``Number.prototype.toString`` does.

    Both languages pick the shortest digit string that reads back to the same double; they
    differ only in where the decimal point and the exponent go.
    """
    if not math.isfinite(value):
        return "null"  # JSON.stringify writes NaN and the infinities as null
    if value == 0:
        return "0"
    integral = value.is_integer()
    if integral and -_MAX_SAFE < value < _MAX_SAFE:
        return str(int(value))
    text = repr(value)
    if not integral and "e" not in text:
        return text  # between 1e-4 and 1e16 both languages write a fraction's digits alike
    sign = ""
    if text[0] == "-":
        sign, text = "-", text[1:]
    mantissa, _, exp_text = text.partition("e")
    exponent = int(exp_text) if exp_text else 0
    int_part, _, frac_part = mantissa.partition(".")
    all_digits = int_part + frac_part
    stripped = all_digits.lstrip("0")
    # ``point`` = n in ECMA-262 Number::toString: the value is 0.DIGITS x 10**point.
    point = len(int_part) - (len(all_digits) - len(stripped)) + exponent
    digits = stripped.rstrip("0")
    k = len(digits)
    if k <= point <= 21:
        return sign + digits + "0" * (point - k)
    if 0 < point <= 21:
        return sign + digits[:point] + "." + digits[point:]
    if -6 < point <= 0:
        return sign + "0." + "0" * -point + digits
    e = point - 1
    head = digits[0] + ("." + digits[1:] if k > 1 else "")
    return f"{sign}{head}e{'+' if e >= 0 else '-'}{abs(e)}"


def _escape_surrogate(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def _string(value: str) -> str:
    text = _encode_str(value)
    if _LONE_SURROGATE.search(text) is not None:
        text = _LONE_SURROGATE.sub(_escape_surrogate, text)
    return text


def _is_array_index(key: str) -> bool:
    return _ARRAY_INDEX.match(key) is not None and int(key) <= _MAX_INDEX


def _js_key_order(obj: dict[Any, Any]) -> list[tuple[str, Any]]:
    items = [(k if isinstance(k, str) else _key_text(k), v) for k, v in obj.items()]
    if not any(k[:1].isdigit() and _is_array_index(k) for k, _ in items):
        return items
    indexed = sorted(((k, v) for k, v in items if _is_array_index(k)), key=lambda kv: int(kv[0]))
    return indexed + [(k, v) for k, v in items if not _is_array_index(k)]


def _key_text(key: Any) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, float):
        return js_number(key)
    if isinstance(key, int) or key is None:
        return "null" if key is None else str(key)
    raise TypeError(f"Object keys must be strings or numbers, not {type(key).__name__}")


def js_dumps(obj: Any) -> str:
    """Serialise plain JSON data (dict, list, tuple, str, int, float, bool, None) compactly.

    The output equals ``JSON.stringify(obj)`` for the same value, so a line pi wrote and
    Python parsed with :func:`json.loads` is reproduced exactly.

    :raises TypeError: for values JSON cannot represent (pass pydantic models through
        ``model_dump(mode="json")`` first).
    """
    # The C encoder writes strings, ints, booleans, null and the structure exactly as
    # JavaScript does; floats are handed to it as placeholders for their JavaScript text.
    # Whatever it would get wrong otherwise (keys JavaScript reorders or that are not
    # strings, unusual types) goes to the token-by-token writer.
    floats: list[str] = []
    try:
        ready = _ready(obj, floats)
    except _Unusual:
        return _slow_dumps(obj)
    text = _c_encode(ready)
    if floats:
        if text.count(_PLACEHOLDER_START) != len(floats):
            return _slow_dumps(obj)  # a string looked like a placeholder: not worth untangling
        text = _PLACEHOLDER.sub(lambda match: floats[int(match[1])], text)
    if not text.isascii() and _LONE_SURROGATE.search(text) is not None:
        text = _LONE_SURROGATE.sub(_escape_surrogate, text)
    return text


class _Unusual(Exception):
    """A value :func:`js_dumps` leaves to :func:`_slow_dumps`."""


_c_encode = json.encoder.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode
_PLAIN = frozenset((str, int, bool, type(None)))
# A float's stand-in is a NUL and the float's index. The encoder always escapes a NUL, so a
# placeholder comes out as "\u0000<index>", quotes included; js_dumps counts those openings and
# takes the slow path when the data's own strings produced one too.
_PLACEHOLDER_START = '"\\u0000'
_PLACEHOLDER = re.compile(r'"\\u0000([0-9]+)"')
_DIGITS = frozenset("0123456789")  # an array index's first character


def _ready(value: Any, floats: list[str]) -> Any:
    """``value`` with every float replaced by a placeholder (its text appended to ``floats``).

    Containers are copied only where something in them changed.

    :raises _Unusual: for a key JavaScript would write elsewhere or differently, or a value
        of another type than the encoder's plain ones.
    """
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is float:
        floats.append(js_number(value))
        return f"\x00{len(floats) - 1}"
    if kind is dict:
        replaced: dict[str, Any] | None = None
        for key, item in value.items():
            if type(key) is not str or (key[:1] in _DIGITS and _is_array_index(key)):
                raise _Unusual
            if type(item) not in _PLAIN:
                new = _ready(item, floats)
                if new is not item:
                    if replaced is None:
                        replaced = {}
                    replaced[key] = new
        if replaced is None:
            return value
        copy = dict(value)
        copy.update(replaced)  # the keys keep their places
        return copy
    if kind is list or kind is tuple:
        items: list[Any] | None = None
        for index, item in enumerate(value):
            if type(item) not in _PLAIN:
                new = _ready(item, floats)
                if new is not item:
                    if items is None:
                        items = list(value)
                    items[index] = new
        return value if items is None else items
    raise _Unusual  # subclasses and types JSON has no text for


def _slow_dumps(obj: Any) -> str:
    """:func:`js_dumps` for any value, one token at a time in Python."""
    parts: list[str] = []
    append = parts.append

    def emit(value: Any) -> None:
        if isinstance(value, str):
            append(_string(value))
        elif value is None:
            append("null")
        elif value is True:
            append("true")
        elif value is False:
            append("false")
        elif isinstance(value, int):
            append(str(value))
        elif isinstance(value, float):
            append(js_number(value))
        elif isinstance(value, dict):
            if not value:
                append("{}")
                return
            first = True
            for key, item in _js_key_order(value):
                append("{" if first else ",")
                first = False
                append(_string(key))
                append(":")
                emit(item)
            append("}")
        elif isinstance(value, list | tuple):
            if not value:
                append("[]")
                return
            first = True
            for item in value:
                append("[" if first else ",")
                first = False
                emit(item)
            append("]")
        else:
            raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")

    emit(obj)
    return "".join(parts)
