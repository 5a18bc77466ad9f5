"""Terminal output in whole frames: each flush is one synchronized update (``CSI ?2026``).

A terminal that supports synchronized output (kitty, WezTerm, iTerm2, foot, Windows Terminal,
recent xterm and tmux, VTE 0.68+) shows nothing of an update until it ends, so the editor and the
footer are never seen half drawn; one that does not ignores the two private-mode sequences.
While :meth:`SynchronizedOutput.held` is open, flushes are deferred: erasing the live area,
writing into the scrollback and drawing the live area again reach the terminal as one write.

A terminal that hung up (its window closed: writes fail with EIO) is let go: standard output
and error, where they are that terminal, are pointed at ``/dev/null``, so the shutdown that
follows (the last frame, plugins' shutdown hooks, warnings, the flush at exit) writes nowhere
instead of failing with a traceback nobody can read.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager

from prompt_toolkit.output.vt100 import Vt100_Output

__all__ = ["BEGIN_SYNCHRONIZED_UPDATE", "END_SYNCHRONIZED_UPDATE", "SynchronizedOutput", "let_go_of_terminal"]

BEGIN_SYNCHRONIZED_UPDATE = "\x1b[?2026h"
END_SYNCHRONIZED_UPDATE = "\x1b[?2026l"

# What writing to a terminal that is gone fails with: EIO once it hung up, EPIPE / ENXIO for
# some pseudo-terminals whose other end closed.
_GONE = (errno.EIO, errno.EPIPE, errno.ENXIO)


def let_go_of_terminal(fd: int) -> None:
    """Point standard output and error at ``/dev/null`` where they are the terminal ``fd`` is.

    Compared by device (``st_rdev``): a hung-up terminal no longer answers ``isatty``. A stream
    redirected elsewhere (``2>log``) keeps its file.
    """
    try:
        terminal = os.fstat(fd).st_rdev
    except OSError:
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for stream in (1, 2):
            try:
                same = stream == fd or os.fstat(stream).st_rdev == terminal
            except OSError:
                continue
            if same:
                os.dup2(devnull, stream)
    finally:
        os.close(devnull)


class SynchronizedOutput(Vt100_Output):
    """prompt_toolkit's VT100 output, framing what each flush sends in a synchronized update."""

    _frame_open = False
    _holds = 0

    def _open_frame(self) -> None:
        if not self._frame_open:
            self._frame_open = True
            super().write_raw(BEGIN_SYNCHRONIZED_UPDATE)

    def write_raw(self, data: str) -> None:
        self._open_frame()
        super().write_raw(data)

    def write(self, data: str) -> None:
        self._open_frame()
        super().write(data)

    def flush(self) -> None:
        if self._holds:
            return
        if self._frame_open:
            super().write_raw(END_SYNCHRONIZED_UPDATE)
            self._frame_open = False
        try:
            super().flush()
        except OSError as exc:
            if exc.errno not in _GONE:
                raise
            # The terminal hung up; from now on everything goes to /dev/null (and what the
            # stream still buffers from the failed write with it).
            let_go_of_terminal(self.fileno())

    @contextmanager
    def held(self) -> Iterator[None]:
        """Make everything flushed inside the block one frame, written when it ends."""
        self._holds += 1
        try:
            yield
        finally:
            self._holds -= 1
            self.flush()
