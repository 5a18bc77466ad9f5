"""Tail truncation with pi's limits, result fields and size format."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Literal

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LINES",
    "TruncatedBy",
    "TruncationResult",
    "format_size",
    "truncate_tail",
]

DEFAULT_MAX_LINES = 2000
DEFAULT_MAX_BYTES = 50 * 1024

TruncatedBy = Literal["lines", "bytes"]


@dataclass(frozen=True)
class TruncationResult:
    """What :func:`truncate_tail` kept, with pi's ``TruncationResult`` fields.

    :ivar content: the kept text (the whole text when nothing was cut).
    :ivar truncated_by: the limit that cut the text, ``None`` when nothing was cut.
    :ivar last_line_partial: only the end of the last line fitted the byte limit.
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
        """The object pi stores under ``details.truncation`` (camelCase keys)."""
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
    binary, so the decimal rounding sees the true value).
    """
    if size < 1024:
        return f"{size}B"
    if size < 1024 * 1024:
        return f"{_one_decimal(size / 1024)}KB"
    return f"{_one_decimal(size / (1024 * 1024))}MB"


def _one_decimal(value: float) -> str:
    return str(Decimal(value).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))


def truncate_tail(
    content: str, *, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES
) -> TruncationResult:
    """Keep the end of ``content``: at most ``max_lines`` lines and ``max_bytes`` UTF-8 bytes.

    Whichever limit is hit first wins. Whole lines only, except when the last line alone is
    over the byte limit: then its end is kept (``last_line_partial``), cut on a character
    boundary. Lines are counted as pi counts them: ``"a\\n"`` is two lines, the second empty.
    """
    total_bytes = _utf8_len(content)
    total_lines = content.count("\n") + 1
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return TruncationResult(
            content=content,
            truncated=False,
            truncated_by=None,
            total_lines=total_lines,
            total_bytes=total_bytes,
            output_lines=total_lines,
            output_bytes=total_bytes,
            last_line_partial=False,
            first_line_exceeds_limit=False,
            max_lines=max_lines,
            max_bytes=max_bytes,
        )

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
        line_bytes = _utf8_len(line) + (1 if kept_lines else 0)
        if kept_bytes + line_bytes > max_bytes:
            truncated_by = "bytes"
            if kept_lines == 0:
                output = _tail_of(line, max_bytes)
                kept_lines = 1
                kept_bytes = _utf8_len(output)
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


def _utf8_len(text: str) -> int:
    # ASCII text (the common case) needs no encoding pass; isascii() is O(1) in CPython.
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _tail_of(text: str, max_bytes: int) -> str:
    """The longest end of ``text`` that fits ``max_bytes`` UTF-8 bytes, on a character boundary."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    start = len(data) - max_bytes
    while start < len(data) and data[start] & 0xC0 == 0x80:
        start += 1
    return data[start:].decode("utf-8")
