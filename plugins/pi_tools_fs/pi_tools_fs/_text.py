"""Text measures as pi computes them (JavaScript strings are UTF-16; sizes are UTF-8 bytes).

The tools report lengths and sizes to the model; these helpers make the numbers the same as
pi's, so a model tuned on pi reads the same notices.
"""

from __future__ import annotations

import codecs
import errno
import math
import os

__all__ = [
    "JS_WHITESPACE",
    "encode_utf8",
    "int_argument",
    "js_length",
    "js_number",
    "node_error_code",
    "node_error_message",
    "utf8_length",
]

# ECMAScript WhiteSpace and LineTerminator code points: what String.prototype.trimEnd strips.
# Python's str.isspace differs (it counts U+001C..U+001F and U+0085, not U+FEFF).
JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def _replace_with_fffd(error: UnicodeError) -> tuple[bytes, int]:
    if not isinstance(error, UnicodeEncodeError):  # pragma: no cover - only registered for encoding
        raise error
    # The UTF-8 encoder only takes ASCII text from a handler, so hand it the encoded U+FFFD.
    return "\ufffd".encode() * (error.end - error.start), error.end


_ERRORS = "pi_tools_fs.replace_surrogates"
codecs.register_error(_ERRORS, _replace_with_fffd)


def encode_utf8(text: str) -> bytes:
    """UTF-8 as Node writes it: a lone surrogate (possible in JSON input) becomes U+FFFD."""
    return text.encode("utf-8", _ERRORS)


def utf8_length(text: str) -> int:
    """``Buffer.byteLength(text, "utf-8")``."""
    if text.isascii():
        return len(text)
    return len(encode_utf8(text))


def js_length(text: str) -> int:
    """``text.length`` in JavaScript: UTF-16 code units (astral characters count twice)."""
    if text.isascii():
        return len(text)
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def int_argument(value: float | None, default: int) -> int:
    """A numeric tool argument as a whole number: fractions truncated, ``None``/NaN -> default.

    pi's schemas say ``number``; models send whole numbers, and a fractional line number or
    limit has no useful meaning.
    """
    if value is None or math.isnan(value):
        return default
    if math.isinf(value):
        return 2**53 if value > 0 else -(2**53)
    return math.trunc(value)


def js_number(value: float) -> str:
    """A number as JavaScript prints it in a template string (``3``, not ``3.0``)."""
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return repr(value)


# libuv's messages, which Node puts into its error texts ("ENOENT: no such file or directory").
_LIBUV_MESSAGES = {
    "EACCES": "permission denied",
    "EBUSY": "resource busy or locked",
    "EEXIST": "file already exists",
    "EFBIG": "file too large",
    "EINVAL": "invalid argument",
    "EIO": "i/o error",
    "EISDIR": "illegal operation on a directory",
    "ELOOP": "too many symbolic links encountered",
    "EMFILE": "too many open files",
    "ENAMETOOLONG": "name too long",
    "ENOENT": "no such file or directory",
    "ENOSPC": "no space left on device",
    "ENOTDIR": "not a directory",
    "EPERM": "operation not permitted",
    "EROFS": "read-only file system",
    "ETXTBSY": "text file is busy",
}


def node_error_code(error: OSError) -> str | None:
    """The ``code`` Node gives the same failure (``ENOENT``, ``EACCES`` …), if any."""
    if error.errno is None:
        return None
    return errno.errorcode.get(error.errno)


def node_error_message(error: OSError, syscall: str, path: str | None = None) -> str:
    """An OSError worded as Node words it: ``ENOENT: no such file or directory, open '/x'``."""
    code = node_error_code(error)
    if code is None:
        return str(error)
    description = _LIBUV_MESSAGES.get(code) or os.strerror(error.errno or 0).lower()
    target = path if path is not None else error.filename
    suffix = f" '{target}'" if target is not None else ""
    return f"{code}: {description}, {syscall}{suffix}"
