"""What plugins print while the interactive mode runs goes above the live area, in one frame.

prompt_toolkit's ``patch_stdout`` prints through ``run_in_terminal``, which flushes its erase of
the live area, the text and the redraw as three separate writes: a terminal shows the editor and
the footer blank in between. Here stdout and stderr are replaced by a proxy that hands whole lines
to the application, whose flusher writes them above the live area in the same synchronized update
as the erase and the redraw (see :class:`~._output.SynchronizedOutput`).

A line not ended yet waits for its end (or the end of the application), even through ``flush()``:
written at once, it would leave the cursor mid-line, and the live area drawn after it would start
there.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

__all__ = ["PrintedText", "redirect_prints"]


class PrintedText:
    """Text printed by any thread, kept until the application's flusher takes it.

    :param wake: called, in the event loop's thread, when there is text to take.
    """

    def __init__(self, wake: Callable[[], None]) -> None:
        self._wake = wake
        self._lock = threading.Lock()
        self._lines: list[str] = []  # whole lines, ready to be written
        self._partial = ""  # a line not ended yet: held back until its end
        self._loop: asyncio.AbstractEventLoop | None = None

    def attach(self, loop: asyncio.AbstractEventLoop | None) -> None:
        """Wake the flusher through ``loop`` (None: no longer, the application has ended)."""
        self._loop = loop

    def add(self, data: str) -> None:
        with self._lock:
            ready, newline, self._partial = (self._partial + data).rpartition("\n")
            ready += newline
            if ready:
                self._lines.append(ready)
        if ready and self._loop is not None:
            try:
                self._loop.call_soon_threadsafe(self._wake)
            except RuntimeError:  # the loop is closed: the text is taken at the end
                pass

    def take(self, *, everything: bool = False) -> str:
        """The whole lines printed since the last call (with ``everything``, a partial one too)."""
        with self._lock:
            if everything:
                self._lines.append(self._partial)
                self._partial = ""
            text, self._lines = "".join(self._lines), []
        return text

    def __bool__(self) -> bool:
        return bool(self._lines)


class _Stream:
    """A text stream (``sys.stdout`` or ``sys.stderr``) that writes into :class:`PrintedText`."""

    def __init__(self, printed: PrintedText, original: TextIO) -> None:
        self._printed = printed
        self._original = original

    def write(self, data: str) -> int:
        self._printed.add(data)
        return len(data)

    def writelines(self, lines: list[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        pass  # whole lines are on their way already; a partial one waits for its end

    # What code inspecting a stream asks of it.
    @property
    def encoding(self) -> str:
        return getattr(self._original, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str | None:
        return getattr(self._original, "errors", None)

    def isatty(self) -> bool:
        return self._original.isatty()

    def fileno(self) -> int:
        return self._original.fileno()

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    @property
    def closed(self) -> bool:
        return False


@contextmanager
def redirect_prints(printed: PrintedText) -> Iterator[None]:
    """Point ``sys.stdout`` and ``sys.stderr`` at ``printed`` while the block runs (in the loop)."""
    stdout, stderr = sys.stdout, sys.stderr
    printed.attach(asyncio.get_running_loop())
    sys.stdout = _Stream(printed, stdout)
    sys.stderr = _Stream(printed, stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = stdout, stderr
        printed.attach(None)
