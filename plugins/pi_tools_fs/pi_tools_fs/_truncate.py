"""Output truncation shared by the tools: whichever of the line and byte limits is hit first.

Never returns a partial line, except :func:`truncate_tail` when the last line alone is over the
byte limit (it keeps the end of that line).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ._text import encode_utf8, js_length, js_prefix, utf8_length

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LINES",
    "GREP_MAX_LINE_LENGTH",
    "NO_LINE_LIMIT",
    "TruncationResult",
    "head_of_lines",
    "truncate_head",
    "truncate_line",
    "truncate_tail",
]

DEFAULT_MAX_LINES = 2000
DEFAULT_MAX_BYTES = 50 * 1024
GREP_MAX_LINE_LENGTH = 500
NO_LINE_LIMIT = 2**53 - 1
"""JavaScript's ``Number.MAX_SAFE_INTEGER``, pi's line limit where only bytes should count."""

TruncatedBy = Literal["lines", "bytes"]


@dataclass(frozen=True, slots=True)
class TruncationResult:
    """What was kept and why; :meth:`to_details` gives pi's ``details.truncation`` object."""

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

    def to_details(self) -> dict[str, Any]:
        """pi's camelCase ``TruncationResult`` (``truncatedBy`` is ``null`` when not truncated)."""
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


def truncate_head(
    content: str, *, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES
) -> TruncationResult:
    """Keep the first complete lines that fit (file reads, search results).

    If the first line alone is over ``max_bytes`` nothing is kept and
    ``first_line_exceeds_limit`` is set.
    """
    total_bytes = utf8_length(content)
    lines = content.split("\n")
    if len(lines) <= max_lines and total_bytes <= max_bytes:
        return _untruncated(content, len(lines), total_bytes, max_lines, max_bytes)
    return head_of_lines(lines, len(lines), total_bytes, max_lines=max_lines, max_bytes=max_bytes)


def head_of_lines(
    lines: list[str],
    total_lines: int,
    total_bytes: int,
    *,
    max_lines: int = DEFAULT_MAX_LINES,
    max_bytes: int = DEFAULT_MAX_BYTES,
    first_line_bytes: int | None = None,
) -> TruncationResult:
    """The truncated branch of :func:`truncate_head`, given the leading ``lines`` of the content.

    ``lines`` need only hold the lines that can fit (the streaming reader stops early);
    ``first_line_bytes`` is the size of the first line when its text was not kept.
    """
    first_bytes = first_line_bytes if first_line_bytes is not None else utf8_length(lines[0])
    if first_bytes > max_bytes:
        return TruncationResult(
            content="",
            truncated=True,
            truncated_by="bytes",
            total_lines=total_lines,
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
        line_bytes = utf8_length(line) + (1 if index > 0 else 0)
        if kept_bytes + line_bytes > max_bytes:
            truncated_by = "bytes"
            break
        kept.append(line)
        kept_bytes += line_bytes
    if len(kept) >= max_lines and kept_bytes <= max_bytes:
        truncated_by = "lines"
    output = "\n".join(kept)
    return TruncationResult(
        content=output,
        truncated=True,
        truncated_by=truncated_by,
        total_lines=total_lines,
        total_bytes=total_bytes,
        output_lines=len(kept),
        output_bytes=utf8_length(output),
        last_line_partial=False,
        first_line_exceeds_limit=False,
        max_lines=max_lines,
        max_bytes=max_bytes,
    )


def _tail_bytes(text: str, max_bytes: int) -> str:
    data = encode_utf8(text)
    if len(data) <= max_bytes:
        return text
    start = len(data) - max_bytes
    # Step forward to the start of a UTF-8 character.
    while start < len(data) and (data[start] & 0xC0) == 0x80:
        start += 1
    return data[start:].decode("utf-8", "replace")


def truncate_tail(
    content: str, *, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES
) -> TruncationResult:
    """Keep the last complete lines that fit (command output: the end holds the errors).

    When the last line alone is over ``max_bytes``, its end is kept and
    ``last_line_partial`` is set.
    """
    total_bytes = utf8_length(content)
    lines = content.split("\n")
    if len(lines) <= max_lines and total_bytes <= max_bytes:
        return _untruncated(content, len(lines), total_bytes, max_lines, max_bytes)
    kept: list[str] = []
    kept_bytes = 0
    truncated_by: TruncatedBy = "lines"
    last_line_partial = False
    for line in reversed(lines):
        if len(kept) >= max_lines:
            break
        line_bytes = utf8_length(line) + (1 if kept else 0)
        if kept_bytes + line_bytes > max_bytes:
            truncated_by = "bytes"
            if not kept:
                partial = _tail_bytes(line, max_bytes)
                kept.append(partial)
                kept_bytes = utf8_length(partial)
                last_line_partial = True
            break
        kept.append(line)
        kept_bytes += line_bytes
    if len(kept) >= max_lines and kept_bytes <= max_bytes:
        truncated_by = "lines"
    kept.reverse()
    output = "\n".join(kept)
    return TruncationResult(
        content=output,
        truncated=True,
        truncated_by=truncated_by,
        total_lines=len(lines),
        total_bytes=total_bytes,
        output_lines=len(kept),
        output_bytes=utf8_length(output),
        last_line_partial=last_line_partial,
        first_line_exceeds_limit=False,
        max_lines=max_lines,
        max_bytes=max_bytes,
    )


def truncate_line(line: str, max_chars: int = GREP_MAX_LINE_LENGTH) -> tuple[str, bool]:
    """Cut one line to ``max_chars`` (UTF-16 units, as pi counts) and mark it ``... [truncated]``.

    :returns: the text and whether it was cut.
    """
    if js_length(line) <= max_chars:
        return line, False
    return f"{js_prefix(line, max_chars)}... [truncated]", True
