"""Terminal output in whole frames: each flush is one synchronized update (``CSI ?2026``).

A terminal that supports synchronized output (kitty, WezTerm, iTerm2, foot, Windows Terminal,
recent xterm and tmux, VTE 0.68+) shows nothing of an update until it ends, so the editor and the
footer are never seen half drawn; one that does not ignores the two private-mode sequences.
While :meth:`SynchronizedOutput.held` is open, flushes are deferred: erasing the live area,
writing into the scrollback and drawing the live area again reach the terminal as one write.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from prompt_toolkit.output.vt100 import Vt100_Output

__all__ = ["BEGIN_SYNCHRONIZED_UPDATE", "END_SYNCHRONIZED_UPDATE", "SynchronizedOutput"]

BEGIN_SYNCHRONIZED_UPDATE = "\x1b[?2026h"
END_SYNCHRONIZED_UPDATE = "\x1b[?2026l"


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
        super().flush()

    @contextmanager
    def held(self) -> Iterator[None]:
        """Make everything flushed inside the block one frame, written when it ends."""
        self._holds += 1
        try:
            yield
        finally:
            self._holds -= 1
            self.flush()
