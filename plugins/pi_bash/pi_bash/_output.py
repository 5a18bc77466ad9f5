"""Streaming command output in bounded memory: a decoded rolling tail plus a spill file."""

from __future__ import annotations

import codecs
import os
import secrets
import tempfile
from dataclasses import dataclass, replace
from typing import BinaryIO, Protocol

from pi_host import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, TruncationResult, truncate_tail

__all__ = ["OutputAccumulator", "OutputSnapshot", "TextFilter"]


class TextFilter(Protocol):
    """A stateful text transformation applied to decoded output chunk by chunk."""

    def feed(self, text: str) -> str:
        """Transform the next chunk; may hold back an incomplete tail for the next call."""
        ...

    def flush(self) -> str:
        """Return whatever is still held back."""
        ...


@dataclass(frozen=True)
class OutputSnapshot:
    """The displayable end of the output so far.

    :ivar content: the tail-truncated text.
    :ivar truncation: pi's truncation record; ``truncated`` covers the whole output, not
        only the retained tail.
    :ivar full_output_path: the spill file holding the complete output, once there is one.
    """

    content: str
    truncation: TruncationResult
    full_output_path: str | None


class OutputAccumulator:
    """Collects a command's output with memory bounded by the limits, not by the output size.

    Bytes are decoded incrementally as UTF-8 (invalid bytes become U+FFFD, a leading BOM is
    dropped, as a browser ``TextDecoder`` does). Only a decoded tail of about four times
    ``max_bytes`` is kept in memory; once the output outgrows a limit, everything (past and
    future) goes to a temporary file ``<prefix>-<16 hex>.log`` that is created only then.
    The file receives the raw bytes, or the filtered text when a ``text_filter`` is given.
    """

    def __init__(
        self,
        *,
        max_lines: int = DEFAULT_MAX_LINES,
        max_bytes: int = DEFAULT_MAX_BYTES,
        temp_file_prefix: str = "pi-bash",
        text_filter: TextFilter | None = None,
    ) -> None:
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self._max_rolling_bytes = max(max_bytes * 2, 1)
        self._temp_file_prefix = temp_file_prefix
        self._filter = text_filter
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")(errors="replace")
        self._pending_chunks: list[bytes] = []
        self._tail = ""
        self._tail_bytes = 0
        self._tail_starts_at_line = True
        self._total_raw_bytes = 0
        self._total_bytes = 0
        self._total_lines = 1
        self._last_line_bytes = 0
        self._finished = False
        self._temp_path: str | None = None
        self._temp_file: BinaryIO | None = None

    @property
    def total_bytes(self) -> int:
        """Bytes of decoded (and filtered) output so far, as UTF-8."""
        return self._total_bytes

    @property
    def total_lines(self) -> int:
        """Lines so far, counted as pi counts them (newlines + 1)."""
        return self._total_lines

    @property
    def last_line_bytes(self) -> int:
        """UTF-8 size of the current last line."""
        return self._last_line_bytes

    @property
    def full_output_path(self) -> str | None:
        """The spill file, once it exists."""
        return self._temp_path

    def append(self, data: bytes) -> str:
        """Add raw output; return the text it decoded to (after the filter)."""
        if self._finished:
            raise RuntimeError("OutputAccumulator.append() called after finish()")
        self._total_raw_bytes += len(data)
        text = self._decoder.decode(data)
        if self._filter is not None:
            text = self._filter.feed(text)
        self._add_text(text)
        stored = data if self._filter is None else text.encode("utf-8")
        self._store(stored)
        return text

    def finish(self) -> str:
        """Flush the decoder (and filter); return the text that came out of them. Idempotent."""
        if self._finished:
            return ""
        self._finished = True
        text = self._decoder.decode(b"", final=True)
        if self._filter is not None:
            text = self._filter.feed(text) + self._filter.flush()
        self._add_text(text)
        if self._filter is not None and text:
            self._store(text.encode("utf-8"))
        if self._needs_temp_file():
            self._open_temp_file()
        return text

    def snapshot(self, *, persist_if_truncated: bool = False) -> OutputSnapshot:
        """The tail-truncated output so far.

        :param persist_if_truncated: create the spill file now if the output is over a
            limit, so the snapshot can name it.
        """
        tail = truncate_tail(self._snapshot_text(), max_lines=self.max_lines, max_bytes=self.max_bytes)
        truncated = self._total_lines > self.max_lines or self._total_bytes > self.max_bytes
        if truncated:
            truncated_by = tail.truncated_by or ("bytes" if self._total_bytes > self.max_bytes else "lines")
        else:
            truncated_by = None
        truncation = replace(
            tail,
            truncated=truncated,
            truncated_by=truncated_by,
            total_lines=self._total_lines,
            total_bytes=self._total_bytes,
        )
        if persist_if_truncated and truncated:
            self._open_temp_file()
        return OutputSnapshot(
            content=truncation.content, truncation=truncation, full_output_path=self._temp_path
        )

    def close(self) -> None:
        """Close the spill file (it stays on disk). Idempotent."""
        if self._temp_file is not None:
            temp_file, self._temp_file = self._temp_file, None
            temp_file.close()

    # -- internals ----------------------------------------------------------------------

    def _add_text(self, text: str) -> None:
        if not text:
            return
        size = len(text.encode("utf-8"))
        self._total_bytes += size
        self._tail += text
        self._tail_bytes += size
        # Trimming re-encodes the tail, so do it rarely: only once it is twice the bound.
        if self._tail_bytes > self._max_rolling_bytes * 2:
            self._trim_tail()
        newlines = text.count("\n")
        if newlines:
            self._total_lines += newlines
            self._last_line_bytes = len(text[text.rindex("\n") + 1 :].encode("utf-8"))
        else:
            self._last_line_bytes += size

    def _trim_tail(self) -> None:
        data = self._tail.encode("utf-8")
        start = len(data) - self._max_rolling_bytes
        if start <= 0:
            self._tail_bytes = len(data)
            return
        while start < len(data) and data[start] & 0xC0 == 0x80:
            start += 1
        self._tail_starts_at_line = data[start - 1] == 0x0A
        self._tail = data[start:].decode("utf-8")
        self._tail_bytes = len(data) - start

    def _snapshot_text(self) -> str:
        if self._tail_starts_at_line:
            return self._tail
        # The tail begins mid-line: drop that fragment so line numbers stay whole.
        newline = self._tail.find("\n")
        return self._tail if newline == -1 else self._tail[newline + 1 :]

    def _needs_temp_file(self) -> bool:
        return (
            self._total_raw_bytes > self.max_bytes
            or self._total_bytes > self.max_bytes
            or self._total_lines > self.max_lines
        )

    def _store(self, chunk: bytes) -> None:
        if self._temp_file is None and self._needs_temp_file():
            self._open_temp_file()
        if self._temp_file is not None:
            self._temp_file.write(chunk)
        elif chunk:
            self._pending_chunks.append(chunk)

    def _open_temp_file(self) -> None:
        if self._temp_path is not None:
            return
        name = f"{self._temp_file_prefix}-{secrets.token_hex(8)}.log"
        path = os.path.join(tempfile.gettempdir(), name)
        # Output may hold secrets: readable by the owner only, and never an existing file.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        self._temp_file = os.fdopen(fd, "wb")
        self._temp_path = path
        for chunk in self._pending_chunks:
            self._temp_file.write(chunk)
        self._pending_chunks.clear()
