"""SIGTERM and SIGHUP end every mode as pi does: shut down, then exit 143 / 129.

Print, JSON, RPC and the interactive mode each react in their own way (abort the run, stop
serving, leave the terminal UI); what they share is which signals, the exit status each
means, and how they are received: in the event loop, through anyio, so the reaction runs as
ordinary async code and not inside a C-level handler.
"""

from __future__ import annotations

import signal
from collections.abc import Callable

import anyio
from anyio.abc import TaskStatus

__all__ = ["EXIT_SIGNALS", "exit_status", "watch_exit_signals"]

EXIT_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
"""The signals that end a mode as a quit does (a supervisor's stop, a closed terminal)."""


def exit_status(signum: int) -> int:
    """The status a process ends with after ``signum``, as a shell reports it: 128 + number
    (143 for SIGTERM, 129 for SIGHUP)."""
    return 128 + signum


async def watch_exit_signals(
    on_signal: Callable[[int], object],
    *,
    once: bool = True,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Call ``on_signal(status)`` (:func:`exit_status`) when SIGTERM or SIGHUP arrives.

    Start it with ``await task_group.start(...)``: it returns once the signals are caught, so
    one that comes as soon as the mode is up (its first screen drawn, its first line read) is
    not the default action's, which ends the process on the spot.

    With ``once`` the watch ends after the first signal, and the default action is back for
    the next one (a second SIGTERM ends the process at once). Without it the watch goes on
    until cancelled and later signals are received and ignored, so the shutdown the first one
    started is not cut short: closing a terminal window sends SIGHUP twice (the kernel's, then
    the shell's, passed on to its jobs).
    """
    with anyio.open_signal_receiver(*EXIT_SIGNALS) as signals:
        task_status.started()
        first = True
        async for received in signals:
            if first:
                on_signal(exit_status(received))
                first = False
            if once:
                return
