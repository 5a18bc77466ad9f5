"""Output truncation for tool authors, with pi's limits, result fields and size format.

Whichever of the line and byte limits is hit first wins. Sizes are UTF-8 bytes as Node counts
them (a lone surrogate, possible in JSON input or an undecodable file name, counts as U+FFFD);
line lengths are UTF-16 code units, as JavaScript's ``string.length``. Only whole lines are
kept, except by :func:`truncate_tail` when the last line alone is over the byte limit.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Literal

from ._limits import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LINES",
    "TruncatedBy",
    "TruncationResult",
    "format_size",
    "truncate_head",
    "truncate_line",
    "truncate_tail",
]

_MAX_LINE_CHARS = 500
"""pi's ``GREP_MAX_LINE_LENGTH``: the default cut of :func:`truncate_line`."""

TruncatedBy = Literal["lines", "bytes"]


@dataclass(frozen=True, slots=True)
class TruncationResult:
    """What was kept and why, with pi's ``TruncationResult`` fields.

    :ivar content: the kept text (the whole text when nothing was cut).
    :ivar truncated_by: the limit that cut the text, ``None`` when nothing was cut.
    :ivar last_line_partial: only the end of the last line fitted the byte limit
        (:func:`truncate_tail`).
    :ivar first_line_exceeds_limit: the first line alone is over the byte limit, so nothing
        was kept (:func:`truncate_head`).
    """

    content: str
    truncated: bool
    truncated_by: TruncatedBy | None
    total_lines: int
    total_bytes: int
    output_lines: int
    output_bytes: int
    last_line_partial: bool
    first_line_exceeds_limit: bool
    max_lines: int
    max_bytes: int

    def to_json_dict(self) -> dict[str, Any]:
        """The object pi stores under ``details.truncation`` (camelCase keys, ``truncatedBy``
        ``None`` when nothing was cut)."""
        return {
            "content": self.content,
            "truncated": self.truncated,
            "truncatedBy": self.truncated_by,
            "totalLines": self.total_lines,
            "totalBytes": self.total_bytes,
            "outputLines": self.output_lines,
            "outputBytes": self.output_bytes,
            "lastLinePartial": self.last_line_partial,
            "firstLineExceedsLimit": self.first_line_exceeds_limit,
            "maxLines": self.max_lines,
            "maxBytes": self.max_bytes,
        }


def format_size(size: int) -> str:
    """Human-readable size as pi prints it: ``512B``, ``50.0KB``, ``9.5MB``.

    One decimal, rounded half up like JavaScript's ``toFixed`` (``size / 1024`` is exact in
    binary, so the decimal rounding sees the true value; Python's format would round the tie
    1.25 down).
    """
    if size < 1024:
        return f"{size}B"
    if size < 1024 * 1024:
        return f"{_one_decimal(size / 1024)}KB"
    return f"{_one_decimal(size / (1024 * 1024))}MB"


def _one_decimal(value: float) -> str:
    return str(Decimal(value).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))


def truncate_head(
    content: str, *, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES
) -> TruncationResult:
    """Keep the first complete lines that fit (file reads, search results).

    If the first line alone is over ``max_bytes`` nothing is kept and
    ``first_line_exceeds_limit`` is set.
    """
    total_bytes = _utf8_length(content)
    lines = content.split("\n")
    if len(lines) <= max_lines and total_bytes <= max_bytes:
        return _untruncated(content, len(lines), total_bytes, max_lines, max_bytes)
    if _utf8_length(lines[0]) > max_bytes:
        return TruncationResult(
            content="",
            truncated=True,
            truncated_by="bytes",
            total_lines=len(lines),
            total_bytes=total_bytes,
            output_lines=0,
            output_bytes=0,
            last_line_partial=False,
            first_line_exceeds_limit=True,
            max_lines=max_lines,
            max_bytes=max_bytes,
        )
    kept: list[str] = []
    kept_bytes = 0
    truncated_by: TruncatedBy = "lines"
    for index, line in enumerate(lines):
        if index >= max_lines:
            break
        line_bytes = _utf8_length(line) + (1 if index > 0 else 0)
        if kept_bytes + line_bytes > max_bytes:
            truncated_by = "bytes"
            break
        kept.append(line)
        kept_bytes += line_bytes
    if len(kept) >= max_lines and kept_bytes <= max_bytes:
        truncated_by = "lines"
    return TruncationResult(
        content="\n".join(kept),
        truncated=True,
        truncated_by=truncated_by,
        total_lines=len(lines),
        total_bytes=total_bytes,
        output_lines=len(kept),
        output_bytes=kept_bytes,
        last_line_partial=False,
        first_line_exceeds_limit=False,
        max_lines=max_lines,
        max_bytes=max_bytes,
    )


def truncate_tail(
    content: str, *, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES
) -> TruncationResult:
    """Keep the last complete lines that fit (command output: the end holds the errors).

    When the last line alone is over ``max_bytes`` its end is kept, cut on a character
    boundary, and ``last_line_partial`` is set. Lines are counted as pi counts them:
    ``"a\\n"`` is two lines, the second empty.
    """
    total_bytes = _utf8_length(content)
    total_lines = content.count("\n") + 1
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return _untruncated(content, total_lines, total_bytes, max_lines, max_bytes)

    # Walk back line by line from the end, touching only what is kept (the text may be a
    # large rolling tail, and this runs on every streamed update).
    kept_lines = 0
    kept_bytes = 0
    start = end = len(content)
    output: str | None = None
    truncated_by: TruncatedBy = "lines"
    last_line_partial = False
    while kept_lines < max_lines:
        newline = content.rfind("\n", 0, end)
        line = content[newline + 1 : end]
        # Every kept line but the first one costs its newline too.
        line_bytes = _utf8_length(line) + (1 if kept_lines else 0)
        if kept_bytes + line_bytes > max_bytes:
            truncated_by = "bytes"
            if kept_lines == 0:
                output = _tail_of(line, max_bytes)
                kept_lines = 1
                kept_bytes = _utf8_length(output)
                last_line_partial = True
            break
        kept_lines += 1
        kept_bytes += line_bytes
        start = newline + 1
        if newline < 0:
            break
        end = newline
    if kept_lines >= max_lines and kept_bytes <= max_bytes:
        truncated_by = "lines"
    if output is None:
        output = content[start:]
    return TruncationResult(
        content=output,
        truncated=True,
        truncated_by=truncated_by,
        total_lines=total_lines,
        total_bytes=total_bytes,
        output_lines=kept_lines,
        output_bytes=kept_bytes,
        last_line_partial=last_line_partial,
        first_line_exceeds_limit=False,
        max_lines=max_lines,
        max_bytes=max_bytes,
    )


def truncate_line(line: str, max_chars: int = _MAX_LINE_CHARS) -> tuple[str, bool]:
    """Cut one line to ``max_chars`` (UTF-16 units, as pi counts) and mark it ``... [truncated]``.

    A cut through a surrogate pair drops the half character (JavaScript would keep a lone
    surrogate, which cannot be encoded as UTF-8).

    :returns: the text and whether it was cut.
    """
    if _utf16_length(line) <= max_chars:
        return line, False
    return f"{_utf16_prefix(line, max_chars)}... [truncated]", True


def _untruncated(content: str, lines: int, size: int, max_lines: int, max_bytes: int) -> TruncationResult:
    return TruncationResult(
        content=content,
        truncated=False,
        truncated_by=None,
        total_lines=lines,
        total_bytes=size,
        output_lines=lines,
        output_bytes=size,
        last_line_partial=False,
        first_line_exceeds_limit=False,
        max_lines=max_lines,
        max_bytes=max_bytes,
    )


def _replace_with_fffd(error: UnicodeError) -> tuple[bytes, int]:
    if not isinstance(error, UnicodeEncodeError):  # pragma: no cover - only registered for encoding
        raise error
    # The UTF-8 encoder only takes ASCII text from a handler, so hand it the encoded U+FFFD.
    return "\ufffd".encode() * (error.end - error.start), error.end


_ERRORS = "pi_host.replace_surrogates"
codecs.register_error(_ERRORS, _replace_with_fffd)


def _encode_utf8(text: str) -> bytes:
    return text.encode("utf-8", _ERRORS)


def _utf8_length(text: str) -> int:
    # ASCII text (the common case) needs no encoding pass; isascii() is O(1) in CPython.
    return len(text) if text.isascii() else len(_encode_utf8(text))


def _tail_of(text: str, max_bytes: int) -> str:
    """The longest end of ``text`` that fits ``max_bytes`` UTF-8 bytes, on a character boundary."""
    data = _encode_utf8(text)
    if len(data) <= max_bytes:
        return text
    start = len(data) - max_bytes
    while start < len(data) and data[start] & 0xC0 == 0x80:
        start += 1
    return data[start:].decode("utf-8")


def _utf16_length(text: str) -> int:
    if text.isascii():
        return len(text)
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def _utf16_prefix(text: str, units: int) -> str:
    if text.isascii() or units <= 0:
        return text[: max(units, 0)]
    count = 0
    for index, ch in enumerate(text):
        width = 2 if ord(ch) > 0xFFFF else 1
        if count + width > units:
            return text[:index]
        count += width
    return text
