"""Drive a program in a pseudo-terminal and read its screen (pexpect + :class:`Screen`)."""

from __future__ import annotations

import os
import re
import sys
import termios
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pexpect

from .screen import Screen

LAUNCHER = Path(__file__).with_name("launch.py")

# What the keys send.
ENTER = "\r"
ALT_ENTER = "\x1b\r"
ESCAPE = "\x1b"
ALT_UP = "\x1b[1;3A"
UP = "\x1b[A"
DOWN = "\x1b[B"
# How long a wait may take before it fails: a bound for a hang, generous for CI's loaded 2 cores
# (the wait returns as soon as its condition holds).
DEFAULT_TIMEOUT = 30.0
CTRL_C = "\x03"
CTRL_D = "\x04"
CTRL_U = "\x15"
TAB = "\t"

# A synchronized update (the program's ``SynchronizedOutput``): a terminal that honours it shows
# nothing of what lies between the two until the second arrives.
BEGIN_SYNCHRONIZED_UPDATE = "\x1b[?2026h"
END_SYNCHRONIZED_UPDATE = "\x1b[?2026l"


class ScreenTimeout(AssertionError):
    pass


class Terminal:
    """A program running in a pty of ``rows`` x ``columns``."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: str | os.PathLike[str],
        rows: int = 30,
        columns: int = 100,
        env: dict[str, str] | None = None,
    ) -> None:
        environment = {
            **os.environ,
            "TERM": "xterm-256color",
            # Nothing answers cursor position requests in a pty without a terminal emulator.
            "PROMPT_TOOLKIT_NO_CPR": "1",
            "COLUMNS": str(columns),
            "LINES": str(rows),
            **(env or {}),
        }
        environment.pop("NO_COLOR", None)
        self.screen = Screen(rows, columns)
        self.raw = ""
        self.modes_at_exit: list[Any] | None = None  # termios.tcgetattr's list, read by wait_exit
        self.child = pexpect.spawn(
            argv[0],
            list(argv[1:]),
            cwd=str(cwd),
            env=environment,
            dimensions=(rows, columns),
            encoding="utf-8",
            codec_errors="replace",
        )

    @classmethod
    def launch_fake(cls, scenario_path: Path, *, cwd: Path, **kwargs: object) -> Terminal:
        """Run the interactive mode on the scripted fake session (see ``launch.py``)."""
        return cls([sys.executable, str(LAUNCHER), str(scenario_path)], cwd=cwd, **kwargs)  # type: ignore[arg-type]

    # -- reading --------------------------------------------------------------------------------

    def _pump(self, timeout: float) -> bool:
        """Read what is there (waiting up to ``timeout``); False at end of file."""
        try:
            data = self.child.read_nonblocking(65536, timeout=timeout)
        except pexpect.TIMEOUT:
            return True
        except pexpect.EOF:
            return False
        self.raw += data
        self.screen.feed(data)
        return True

    def wait_for(
        self,
        condition: str | re.Pattern[str] | Callable[[], bool],
        *,
        timeout: float = DEFAULT_TIMEOUT,
        where: Callable[[], str] | None = None,
    ) -> None:
        """Read output until ``condition`` holds: a string or pattern found in ``where()``
        (the whole scrollback and screen by default), or a predicate."""
        source = where or self.screen.text
        if isinstance(condition, str):
            needle = condition

            def check() -> bool:
                return needle in source()
        elif isinstance(condition, re.Pattern):
            pattern = condition

            def check() -> bool:
                return pattern.search(source()) is not None
        else:
            check = condition
        deadline = time.monotonic() + timeout
        alive = True
        while True:
            if check():
                return
            if not alive or time.monotonic() > deadline:
                raise ScreenTimeout(
                    f"timed out waiting for {condition!r}; screen:\n{self.dump()}\nhistory:\n"
                    + "\n".join(self.screen.history[-40:])
                )
            alive = self._pump(0.05)

    def wait_gone(self, text: str, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Read output until ``text`` is no longer on the visible screen."""
        self.wait_for(lambda: text not in self.screen.screen_text(), timeout=timeout)

    def in_update(self) -> bool:
        """What was read so far ends inside a synchronized update (the rest is still coming)."""
        return self.raw.rfind(BEGIN_SYNCHRONIZED_UPDATE) > self.raw.rfind(END_SYNCHRONIZED_UPDATE)

    def wait_for_update_end(self, *, timeout: float = 10.0) -> None:
        """Read output until the synchronized update in progress, if any, has ended.

        A condition can hold in the middle of one: the pty hands a large write over in pieces
        (a line at a time under load), so a screen where the live area was just erased and text
        written above it can be read before the redraw that the same update carries.
        """
        self.wait_for(lambda: not self.in_update(), timeout=timeout)

    def updates(self) -> list[str]:
        """The synchronized updates read so far, each without its two framing sequences.

        Call :meth:`wait_for_update_end` first: the last one must have ended.
        """
        pieces = self.raw.split(BEGIN_SYNCHRONIZED_UPDATE)[1:]
        assert not self.in_update(), "the last synchronized update has not been read to its end"
        return [piece.partition(END_SYNCHRONIZED_UPDATE)[0] for piece in pieces]

    def outside_updates(self) -> str:
        """What was read so far outside any synchronized update."""
        pieces = self.raw.split(BEGIN_SYNCHRONIZED_UPDATE)
        return pieces[0] + "".join(piece.partition(END_SYNCHRONIZED_UPDATE)[2] for piece in pieces[1:])

    def dump(self) -> str:
        return "\n".join(f"|{line}" for line in self.screen.display())

    def editor_text(self) -> str:
        """The text between the editor's two rules (the last two all-``─`` lines on screen)."""
        lines = self.screen.display()
        rules = [
            i for i, line in enumerate(lines) if len(line) >= self.screen.columns - 2 and set(line) == {"─"}
        ]
        if len(rules) < 2:
            return ""
        top, bottom = rules[-2], rules[-1]
        return "\n".join(line.strip() for line in lines[top + 1 : bottom]).strip()

    def rule_count(self) -> int:
        """Full-width ``─`` lines on screen: two (the editor's) unless something was left behind."""
        width = self.screen.columns
        return sum(1 for line in self.screen.display() if len(line) >= width - 2 and set(line) == {"─"})

    # -- writing --------------------------------------------------------------------------------

    def resize(self, rows: int, columns: int) -> None:
        """Change the window size; the program gets SIGWINCH."""
        self._pump(0)  # what was drawn at the old size lands at the old size
        self.screen.resize(rows, columns)
        self.child.setwinsize(rows, columns)

    def send(self, text: str) -> None:
        self.child.send(text)

    def double_ctrl_c(self) -> None:
        """Ctrl+C twice, which quits. In one write, so that the program reads both presses at
        once and the second lands inside pi's half-second double-press window however loaded
        the machine is; two writes may be read, and handled, a scheduling delay apart."""
        self.child.send(CTRL_C + CTRL_C)

    def type(self, text: str) -> None:
        """Type ``text`` and wait until it shows in the editor (so keys are not read early)."""
        self.child.send(text)
        last_line = text.split("\n")[-1].strip()
        self.wait_for(lambda: last_line in self.editor_text())

    def submit(self, text: str) -> None:
        self.type(text)
        self.send(ENTER)

    # -- ending ---------------------------------------------------------------------------------

    def wait_exit(self, timeout: float = DEFAULT_TIMEOUT) -> int:
        deadline = time.monotonic() + timeout
        while self._pump(0.05):
            if time.monotonic() > deadline:
                raise ScreenTimeout(f"program did not exit; screen:\n{self.dump()}")
        try:  # the pty's modes as the program left them (the master reads the slave's)
            self.modes_at_exit = termios.tcgetattr(self.child.child_fd)
        except termios.error:
            self.modes_at_exit = None
        self.child.close()
        return int(
            self.child.exitstatus if self.child.exitstatus is not None else -(self.child.signalstatus or 0)
        )

    def hang_up(self) -> int:
        """Close the terminal, as closing its window does, and return the exit status.

        The kernel hangs the program's terminal up: SIGHUP goes to the program (the session
        leader here), its reads see end-of-file and its writes fail with EIO. Nothing more is
        read; the wait is bounded by the test's timeout.
        """
        process = self.child.ptyproc
        process.fileobj.close()  # the master side: the last one open, so the pty hangs up
        process.wait()
        return int(process.exitstatus if process.exitstatus is not None else -(process.signalstatus or 0))

    def close(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)


class Terminals:
    """The terminals a test starts, each waited for until its app is up, all closed together.

    For a pytest fixture: ``terminals = Terminals()``, hand out a ``start`` that calls
    :meth:`start`, then ``terminals.close()`` after the ``yield``.
    """

    def __init__(self) -> None:
        self._started: list[Terminal] = []

    def start(self, argv: Sequence[str], *, cwd: Path, env: dict[str, str]) -> Terminal:
        terminal = Terminal(list(argv), cwd=cwd, env=env)
        self._started.append(terminal)
        terminal.wait_for("(auto)", timeout=60)  # the footer's context gauge: the app is up
        return terminal

    def close(self) -> None:
        for terminal in self._started:
            terminal.close()
