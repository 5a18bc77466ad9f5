"""The lifeline: pi-host ends, as on SIGTERM, when the process that started it is gone.

A supervisor (``pi-host batch``, a Ray worker, any program) creates a pipe, keeps its write
end, passes the read end to ``pi-host`` (``pass_fds``) and names it in ``PI_HOST_LIFELINE_FD``.
The read end sees end-of-file only once every write end is closed: when the supervisor exits,
however it exits (SIGKILL, a crash, the out-of-memory killer), the kernel closes its end and
pi-host shuts down. No polling: a daemon thread sits in a blocking ``read``.

Defined below every layer: ``pi_host.modes`` watches it at start-up and ``pi_host.batch``
hands one to each attempt. POSIX only; elsewhere the variable is ignored with a warning.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, MutableMapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import threading

__all__ = ["LIFELINE_ENV", "watch_lifeline"]

#: The environment variable that names the lifeline's file descriptor.
LIFELINE_ENV = "PI_HOST_LIFELINE_FD"


def watch_lifeline(
    environ: MutableMapping[str, str] | None = None, *, on_end: Callable[[], None] | None = None
) -> threading.Thread | None:
    """Watch the lifeline ``PI_HOST_LIFELINE_FD`` names, if any; return the watching thread.

    The variable is removed from ``environ`` (``os.environ`` by default), so the processes
    pi-host starts (tools, MCP servers, a nested pi-host) neither inherit it nor read a
    descriptor number that means something else in them; the descriptor is made
    non-inheritable for the same reason.
    A value that is not the read end of an open pipe or socket gets one warning line on
    stderr and is ignored: a stale number naming a file would read as end-of-file at once.

    When the lifeline ends, ``on_end`` is called from the watching thread; by default SIGTERM
    goes to the main thread: every mode and ``pi-host batch`` handle it (abort, save the
    session, run the shutdown hooks, exit 143); where nothing handles it yet (start-up) it
    ends the process, as a supervisor's SIGTERM would.
    Data the supervisor writes is read and ignored. With the variable unset this costs a
    dictionary look-up and imports nothing.
    """
    env = os.environ if environ is None else environ
    value = env.pop(LIFELINE_ENV, None)
    if value is None or not value.strip():  # empty means unset, as for PI_HOST_DIR
        return None
    fd = _lifeline_fd(value)
    if isinstance(fd, str):
        _warn(f"{LIFELINE_ENV}={value!r} {fd}")
        return None
    import threading

    thread = threading.Thread(
        target=_watch, args=(fd, on_end or _terminate), name="pi-host-lifeline", daemon=True
    )
    thread.start()
    return thread


def _lifeline_fd(value: str) -> int | str:
    """The descriptor ``value`` names, checked and made non-inheritable, or what is wrong with it."""
    if os.name != "posix":
        return "is ignored: the lifeline needs a POSIX system"
    try:
        fd = int(value.strip())
    except ValueError:
        return "is not a file descriptor number"
    if fd < 0:
        return "is not a file descriptor number"
    if fd <= 2:
        return "is standard input, output or error, not a lifeline pipe"
    import fcntl
    import stat

    try:
        mode = os.fstat(fd).st_mode
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    except OSError as exc:
        return f"names no open file descriptor ({exc.strerror})"
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        return "is not a pipe or socket"
    if flags & os.O_ACCMODE == os.O_WRONLY:
        return "is the write end of its pipe; pass the read end"
    os.set_inheritable(fd, False)
    return fd


def _warn(problem: str) -> None:
    print(f"Warning: {problem}; pi-host will not stop when its supervisor exits", file=sys.stderr)


def _watch(fd: int, on_end: Callable[[], None]) -> None:
    try:
        while os.read(fd, 4096):
            pass  # what a supervisor writes means nothing; only the end counts
    except OSError as exc:
        _warn(f"cannot read the lifeline {LIFELINE_ENV}={fd} ({exc.strerror})")
        return
    finally:
        os.close(fd)
    on_end()


def _terminate() -> None:
    """SIGTERM to the main thread, as if the supervisor had sent it.

    Python runs signal handlers in the main thread; sent there (not raised in this one) the
    signal also interrupts a blocking call the main thread is in, as a real SIGTERM would.
    """
    import signal
    import threading

    main = threading.main_thread().ident
    if main is not None:
        signal.pthread_kill(main, signal.SIGTERM)
