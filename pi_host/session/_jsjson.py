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
    if value.is_integer() and -_MAX_SAFE < value < _MAX_SAFE:
        return str(int(value))
    text = repr(value)
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
