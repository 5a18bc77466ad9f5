"""The ``read`` tool: a window of a text file, or an image as an attachment.

Text files are streamed, never loaded whole: the tool keeps at most the lines it can show
(2,000 lines / 50 KB) and only counts the rest, so reading a file of any size takes memory in
proportion to the output, while the notices ("Showing lines A-B of N") still carry the exact
totals pi reports.
"""

from __future__ import annotations

import base64
import codecs
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO

import anyio

from pi_host import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_LINES,
    AbortedError,
    ImageContent,
    TextContent,
    ToolCallContext,
    ToolResult,
    TruncationResult,
    format_size,
)

from ._definitions import ReadParams
from ._errors import ToolError, raise_if_aborted
from ._images import SNIFF_BYTES, detect_image_mime_type, image_size
from ._paths import resolve_read_path
from ._special import open_regular
from ._text import int_argument, js_number, node_error_message, utf8_length

__all__ = ["read"]

_CHUNK = 1 << 20
_PIECE = 1 << 16
# Images sent inline must stay under this much base64 (Anthropic's limit is 5 MB).
MAX_INLINE_IMAGE_BYTES = int(4.5 * 1024 * 1024)
MAX_IMAGE_DIMENSION = 2000


@dataclass(frozen=True, slots=True)
class _Window:
    total_lines: int  # lines in the file, split on "\n" as pi splits
    kept: list[str]  # the leading selected lines that fit the limits (bad UTF-8 as U+FFFD)
    selected_bytes: int  # UTF-8 size of the selected text (lines joined by "\n")
    first_line_bytes: int  # size of the first selected line


class _Utf8Size:
    """UTF-8 size of text decoded from bytes with replacement (as Node decodes files)."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def feed(self, data: bytes, final: bool = False) -> int:
        return utf8_length(self._decoder.decode(data, final))


def _read_line(handle: BinaryIO, keep_up_to: int) -> tuple[int, str | None, bool]:
    """Read one line: (UTF-8 size, text or None when over ``keep_up_to`` bytes, had a newline)."""
    piece = handle.readline(_PIECE)
    ended = piece.endswith(b"\n")
    if ended or len(piece) < _PIECE:
        # The whole line came in one read (all but very long lines): decode it at once.
        body = piece[:-1] if ended else piece
        text = body.decode("utf-8", "replace")
        return utf8_length(text), text if len(body) <= keep_up_to else None, ended
    return _read_long_line(handle, piece, keep_up_to)


def _read_long_line(handle: BinaryIO, piece: bytes, keep_up_to: int) -> tuple[int, str | None, bool]:
    """:func:`_read_line` for a line longer than one read, whose first ``piece`` is read."""
    size = _Utf8Size()
    pieces: list[bytes] | None = []
    raw_total = 0
    measured = 0
    while True:
        ended = piece.endswith(b"\n")
        body = piece[:-1] if ended else piece
        raw_total += len(body)
        if pieces is not None:
            if raw_total <= keep_up_to:
                pieces.append(body)
            else:
                # Decoding never shrinks bytes, so this line cannot fit any more.
                measured = sum(size.feed(p) for p in pieces)
                pieces = None
        if pieces is None:
            measured += size.feed(body)
        if ended or not piece or len(piece) < _PIECE:
            break
        piece = handle.readline(_PIECE)
    if pieces is not None:
        text = b"".join(pieces).decode("utf-8", "replace")
        return utf8_length(text), text, ended
    return measured + size.feed(b"", True), None, ended


def _read_window(handle: BinaryIO, start: int, limit: int | None, aborted: Callable[[], bool]) -> _Window:
    newlines = 0
    # 1. Skip to line ``start`` counting newlines in bulk.
    if start > 0:
        while True:
            if aborted():
                raise AbortedError("Operation aborted")
            chunk = handle.read(_CHUNK)
            if not chunk:
                return _Window(newlines + 1, [], 0, 0)
            count = chunk.count(b"\n")
            if newlines + count < start:
                newlines += count
                continue
            position = -1
            for _ in range(start - newlines):
                position = chunk.find(b"\n", position + 1)
            newlines = start
            handle.seek(position + 1 - len(chunk), os.SEEK_CUR)
            break

    # 2. Read the selected lines one by one while they can still be shown.
    end = None if limit is None else start + limit
    line = start
    kept: list[str] = []
    kept_bytes = 0
    selected = 0
    selected_bytes = 0
    first_line_bytes = 0
    collecting = True
    eof = False
    while collecting and not eof and (end is None or line < end):
        size, text, had_newline = _read_line(handle, DEFAULT_MAX_BYTES)
        if had_newline:
            newlines += 1
        else:
            eof = True
        if selected == 0:
            first_line_bytes = size
        selected_bytes += size + (1 if selected else 0)
        selected += 1
        line += 1
        added = size + (1 if kept else 0)
        if text is None or kept_bytes + added > DEFAULT_MAX_BYTES:
            collecting = False
        else:
            kept.append(text)
            kept_bytes += added
            collecting = len(kept) < DEFAULT_MAX_LINES

    # 3. Measure the rest of the selection without keeping it.
    rest = b""
    if not eof and (end is None or line < end):
        remaining = None if end is None else end - line
        measure = _Utf8Size()
        while True:
            if aborted():
                raise AbortedError("Operation aborted")
            chunk = handle.read(_CHUNK)
            if not chunk:
                # The last selected line has no newline, yet is preceded by a separator.
                selected_bytes += measure.feed(b"", True) + 1
                eof = True
                break
            count = chunk.count(b"\n")
            if remaining is None or count < remaining:
                selected_bytes += measure.feed(chunk)
                newlines += count
                if remaining is not None:
                    remaining -= count
                continue
            position = -1
            for _ in range(remaining):
                position = chunk.find(b"\n", position + 1)
            selected_bytes += measure.feed(chunk[: position + 1], True)
            newlines += remaining
            rest = chunk[position + 1 :]
            break

    # 4. Count the lines after the selection.
    if not eof:
        newlines += rest.count(b"\n")
        while chunk := handle.read(_CHUNK):
            if aborted():
                raise AbortedError("Operation aborted")
            newlines += chunk.count(b"\n")
    return _Window(newlines + 1, kept, selected_bytes, first_line_bytes)


def _read_text(
    handle: BinaryIO,
    display_path: str,
    offset: float | None,
    limit: float | None,
    aborted: Callable[[], bool],
) -> ToolResult:
    offset_value = int_argument(offset, 0)
    start = max(0, offset_value - 1) if offset_value else 0
    # A negative limit means nothing useful (pi would slice from the end); read no lines.
    limit_value = None if limit is None else max(0, int_argument(limit, 0))
    window = _read_window(handle, start, limit_value, aborted)
    result = _text_result(window, start, offset, limit_value, display_path)
    note = _encoding_note(handle, window.kept)
    if note:
        result = ToolResult.text(_text_of(result) + note, details=result.details)
    return result


def _text_of(result: ToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


def _encoding_note(handle: BinaryIO, kept: list[str]) -> str:
    """A note when the lines shown hold bytes that are not UTF-8 (pi shows U+FFFD silently)."""
    if any("\0" in line for line in kept):
        return (
            "\n\n[This looks like a binary file: NUL bytes are shown as they are and bytes that "
            "are not UTF-8 as \ufffd.]"
        )
    if not any("\ufffd" in line for line in kept):
        return ""
    # U+FFFD may be in the file itself: look at the bytes before saying they are not UTF-8.
    handle.seek(0)
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    try:
        while chunk := handle.read(_CHUNK):
            decoder.decode(chunk)
        decoder.decode(b"", True)
    except UnicodeDecodeError:
        return (
            "\n\n[The file is not valid UTF-8 (another encoding, or binary): bytes that are not "
            "UTF-8 are shown as \ufffd. edit keeps those bytes as they are.]"
        )
    return ""


def _text_result(
    window: _Window, start: int, offset: float | None, limit_value: int | None, display_path: str
) -> ToolResult:
    total = window.total_lines
    if start >= total:
        shown_offset = js_number(offset) if offset is not None else "undefined"
        raise ToolError(f"Offset {shown_offset} is beyond end of file ({total} lines total)")

    end = total if limit_value is None else min(start + limit_value, total)
    selected_lines = end - start if end > start else 0
    content_lines = selected_lines or 1  # "".split("\n") is one empty line
    first = start + 1
    if content_lines <= DEFAULT_MAX_LINES and window.selected_bytes <= DEFAULT_MAX_BYTES:
        content = "\n".join(window.kept)
        if limit_value is not None and start + limit_value < total:
            remaining = total - (start + limit_value)
            next_offset = start + limit_value + 1
            content += f"\n\n[{remaining} more lines in file. Use offset={next_offset} to continue.]"
        return ToolResult.text(content)

    if window.first_line_bytes > DEFAULT_MAX_BYTES:
        truncation = TruncationResult(
            content="",
            truncated=True,
            truncated_by="bytes",
            total_lines=content_lines,
            total_bytes=window.selected_bytes,
            output_lines=0,
            output_bytes=0,
            last_line_partial=False,
            first_line_exceeds_limit=True,
            max_lines=DEFAULT_MAX_LINES,
            max_bytes=DEFAULT_MAX_BYTES,
        )
        text = (
            f"[Line {first} is {format_size(window.first_line_bytes)}, exceeds "
            f"{format_size(DEFAULT_MAX_BYTES)} limit. Use bash: sed -n '{first}p' {display_path} "
            f"| head -c {DEFAULT_MAX_BYTES}]"
        )
        return ToolResult.text(text, details={"truncation": truncation.to_json_dict()})

    shown = "\n".join(window.kept)
    by_lines = len(window.kept) >= DEFAULT_MAX_LINES
    truncation = TruncationResult(
        content=shown,
        truncated=True,
        truncated_by="lines" if by_lines else "bytes",
        total_lines=content_lines,
        total_bytes=window.selected_bytes,
        output_lines=len(window.kept),
        output_bytes=utf8_length(shown),
        last_line_partial=False,
        first_line_exceeds_limit=False,
        max_lines=DEFAULT_MAX_LINES,
        max_bytes=DEFAULT_MAX_BYTES,
    )
    last = first + len(window.kept) - 1
    limit_note = "" if by_lines else f" ({format_size(DEFAULT_MAX_BYTES)} limit)"
    shown += f"\n\n[Showing lines {first}-{last} of {total}{limit_note}. Use offset={last + 1} to continue.]"
    return ToolResult.text(shown, details={"truncation": truncation.to_json_dict()})


def _read_image(handle: BinaryIO, mime_type: str, auto_resize: bool) -> ToolResult:
    size = os.fstat(handle.fileno()).st_size
    too_big = auto_resize and (size + 2) // 3 * 4 >= MAX_INLINE_IMAGE_BYTES
    if not too_big:
        data = handle.read()
        encoded = base64.b64encode(data).decode("ascii")
        dimensions = image_size(data, mime_type)
        fits = dimensions is not None and max(dimensions) <= MAX_IMAGE_DIMENSION
        if not auto_resize or fits:
            return ToolResult(
                content=[
                    TextContent(text=f"Read image file [{mime_type}]"),
                    ImageContent(data=encoded, mime_type=mime_type),
                ]
            )
    # pi shrinks such images with an image library; without one it omits them, as here.
    return ToolResult.text(
        f"Read image file [{mime_type}]\n"
        "[Image omitted: could not be resized below the inline image size limit.]"
    )


def _read(
    path: str,
    display_path: str,
    offset: float | None,
    limit: float | None,
    auto_resize: bool,
    aborted: Callable[[], bool],
) -> ToolResult:
    try:
        os.stat(path)
        if not os.access(path, os.R_OK):
            raise PermissionError(13, "Permission denied", path)
    except OSError as exc:
        raise ToolError(node_error_message(exc, "access", path)) from None
    try:
        with open_regular(path, display_path, "read") as handle:
            head = handle.read(SNIFF_BYTES)
            handle.seek(0)
            mime_type = detect_image_mime_type(head)
            if mime_type is not None:
                return _read_image(handle, mime_type, auto_resize)
            return _read_text(handle, display_path, offset, limit, aborted)
    except OSError as exc:
        raise ToolError(node_error_message(exc, "read", None if exc.filename is None else path)) from None


async def read(params: ReadParams, ctx: ToolCallContext, *, auto_resize_images: bool) -> ToolResult:
    """Run ``read`` (see :func:`~pi_tools_fs.create_read_tool`)."""
    signal = ctx.signal
    raise_if_aborted(signal)
    path = resolve_read_path(params.path, ctx.cwd)
    result = await anyio.to_thread.run_sync(
        _read, path, params.path, params.offset, params.limit, auto_resize_images, lambda: signal.aborted
    )
    raise_if_aborted(signal)
    return result
