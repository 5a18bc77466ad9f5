"""Run one shell command in its own process group; stop it, and everything it started, for sure.

The rules, each a fix for a way pi's bash tool can wedge a session:

* Every command gets a new session and process group (``start_new_session``), so one
  ``killpg`` reaches the shell and every descendant that did not deliberately leave the group.
* Completion is the shell's exit (watched through a pidfd, not pipe EOF). A background
  process that inherited the output pipe cannot hold the call open (pi#7636): after the shell
  exits, output is drained for :data:`EXIT_DRAIN_SECONDS` at most, then the pipe is closed.
* Timeout and abort stop the whole group: SIGTERM, a short grace period, then SIGKILL,
  repeated until no live member is left (a loop that forks cannot outrun it).
* Processes a command leaves running in the background (``server &``) are kept by default,
  as pi keeps them, so an agent can start a server and talk to it in the next call; their
  groups are remembered and :func:`kill_background_processes` (session shutdown) or
  interpreter exit stops them. With ``background="kill"`` they are stopped when the command
  returns. A process that leaves the group on purpose (``setsid``) is never touched.
"""

from __future__ import annotations

import atexit
import contextlib
import inspect
import os
import secrets
import shutil
import signal as signal_module
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio

from ._limits import DEFAULT_KILL_GRACE, BackgroundPolicy

if TYPE_CHECKING:
    from pi_host import AbortSignal

__all__ = [
    "DEFAULT_KILL_GRACE",
    "EXIT_DRAIN_SECONDS",
    "RUN_ID_VAR",
    "BackgroundPolicy",
    "BashError",
    "CommandOutcome",
    "background_process_groups",
    "build_env",
    "kill_background_processes",
    "resolve_shell",
    "run_shell_command",
]

RUN_ID_VAR = "PI_HOST_BASH_RUN"
"""Set to a fresh id for every command, so its processes can be told from strangers'."""

EXIT_DRAIN_SECONDS = 0.1
"""How long output is still read after the shell exited, when something else holds the pipe."""

_READ_SIZE = 64 * 1024
_POLL_INTERVAL = 0.01
# How long to wait for SIGKILLed processes to be gone before giving up (uninterruptible I/O).
_KILL_CONFIRM_SECONDS = 2.0


class BashError(Exception):
    """A command could not be run, or did not finish normally; the text is pi's."""


@dataclass(frozen=True)
class CommandOutcome:
    """How a command ended.

    :ivar exit_code: the shell's exit status, ``128 + N`` when a signal N ended it (the
        shell's own convention), ``None`` when the command was stopped by timeout or abort.
    """

    exit_code: int | None
    timed_out: bool = False
    aborted: bool = False


def resolve_shell(shell_path: str | None = None) -> tuple[str, list[str]]:
    """The shell and its arguments before the command: a custom path, else ``/bin/bash``,
    else ``bash`` on ``PATH``, else ``sh``.

    :raises BashError: when ``shell_path`` is given and does not exist.
    """
    if shell_path:
        if os.path.exists(shell_path):
            return shell_path, ["-c"]
        raise BashError(f"Custom shell path not found: {shell_path}")
    if os.path.exists("/bin/bash"):
        return "/bin/bash", ["-c"]
    on_path = shutil.which("bash")
    if on_path:
        return on_path, ["-c"]
    return "sh", ["-c"]


def build_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a command runs with: ours, plus markers scripts can test for.

    ``PI_HOST=1`` says pi-host runs it; ``PI_CODING_AGENT=true`` is pi's own marker, set so
    that scripts written for pi behave the same.
    """
    env = dict(os.environ)
    env["PI_HOST"] = "1"
    env["PI_CODING_AGENT"] = "true"
    if extra:
        env.update(extra)
    return env


OnData = Callable[[bytes], Awaitable[None] | None]


async def run_shell_command(
    command: str,
    cwd: str,
    *,
    on_data: OnData,
    signal: AbortSignal | None = None,
    timeout: float | None = None,
    shell_path: str | None = None,
    env: Mapping[str, str] | None = None,
    kill_grace: float = DEFAULT_KILL_GRACE,
    background: BackgroundPolicy = "keep",
    owner: object | None = None,
) -> CommandOutcome:
    """Run ``command`` with the shell in ``cwd``; stdout and stderr merged into ``on_data``.

    Returns when the shell has exited (or was stopped) and its output is drained. Stopped
    by ``timeout`` seconds, by ``signal``, or by cancellation of the calling task (which
    propagates after the group is dead).

    :param env: the complete environment (see :func:`build_env`); default ``build_env()``.
    :param owner: what processes left in the background belong to (a session's token), so
        that :func:`kill_background_processes` for that owner stops them and no others.
    :raises BashError: the working directory does not exist, or the shell cannot start.
    """
    if sys.platform == "win32":  # pragma: no cover
        raise BashError("pi-bash runs commands in POSIX process groups; Windows is not supported.")
    if not os.path.exists(cwd):
        raise BashError(f"Working directory does not exist: {cwd}\nCannot execute bash commands.")
    if signal is not None and signal.aborted:
        return CommandOutcome(exit_code=None, aborted=True)
    shell, args = resolve_shell(shell_path)
    run_id = secrets.token_hex(8)
    full_env = dict(env) if env is not None else build_env()
    full_env[RUN_ID_VAR] = run_id
    try:
        process = subprocess.Popen(
            [shell, *args, command],
            cwd=cwd,
            env=full_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the command or env
        raise BashError(f"Could not start {shell} in {cwd}: {exc}") from exc
    return await _CommandRun(process, run_id, on_data, kill_grace, background, owner).run(signal, timeout)


class _CommandRun:
    """One started command: pumps its output, waits for its exit, stops its group.

    The shell is reaped only at the very end: while it is an unreaped zombie its pid, which
    is the group id, cannot be reused, so no signal sent meanwhile can reach a stranger.
    """

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        run_id: str,
        on_data: OnData,
        kill_grace: float,
        background: BackgroundPolicy,
        owner: object | None = None,
    ) -> None:
        self.process = process
        self.pgid = process.pid  # a session leader's pid is its group id
        self.run_id = run_id
        self.on_data = on_data
        self.kill_grace = kill_grace
        self.background = background
        self.owner = owner
        self.eof = anyio.Event()

    async def run(self, signal: AbortSignal | None, timeout: float | None) -> CommandOutcome:
        stdout = self.process.stdout
        assert stdout is not None
        os.set_blocking(stdout.fileno(), False)
        stopped: CommandOutcome | None = None
        completed = False
        try:
            try:
                async with anyio.create_task_group() as task_group:
                    task_group.start_soon(self._pump, stdout.fileno())
                    exited = False
                    with anyio.move_on_after(timeout):
                        with signal.scope() if signal is not None else contextlib.nullcontext():
                            await _wait_exited(self.process)
                            exited = True
                    if not exited:
                        aborted = signal is not None and signal.aborted
                        stopped = CommandOutcome(exit_code=None, aborted=aborted, timed_out=not aborted)
                        await self._stop_group()
                    else:
                        # Reaped now, so that an empty group answers "gone" at once; from here
                        # on a group is only ours if a member carries this run's id.
                        self.process.poll()
                        if self.background == "kill" and _group_alive(self.pgid, self.run_id):
                            await self._stop_group()
                    if not self.eof.is_set():
                        # Whatever still holds the pipe gets a moment to flush, not a veto.
                        with anyio.move_on_after(EXIT_DRAIN_SECONDS):
                            await self.eof.wait()
                    if not self.eof.is_set():
                        # Only a pump still waiting needs the cancellation (which is not free:
                        # anyio formats the cancelling task's repr into its reason).
                        task_group.cancel_scope.cancel()
            except BaseExceptionGroup as group:
                # Only a failing on_data lands here; give the caller that error itself.
                if len(group.exceptions) == 1:
                    raise group.exceptions[0] from None
                raise
            if self.background == "keep" and _group_alive(self.pgid, self.run_id):
                _track_background_group(self.pgid, self.run_id, self.owner)
            completed = True
        finally:
            with anyio.CancelScope(shield=True):
                if not completed:
                    # Cancelled from outside, or failed: the command goes, all of it.
                    await self._stop_group()
                stdout.close()
                returncode = self.process.poll()
        if stopped is not None:
            return stopped
        assert returncode is not None
        return CommandOutcome(exit_code=_exit_status(returncode))

    async def _pump(self, fd: int) -> None:
        while True:
            await anyio.wait_readable(fd)
            try:
                data = os.read(fd, _READ_SIZE)
            except BlockingIOError:
                continue
            if not data:
                self.eof.set()
                return
            result = self.on_data(data)
            if inspect.isawaitable(result):
                await result

    async def _stop_group(self) -> None:
        with anyio.CancelScope(shield=True):
            await _stop_group(self.pgid, self.kill_grace, self.process, self.run_id)


async def _stop_group(
    pgid: int,
    grace: float,
    leader: subprocess.Popen[bytes] | None = None,
    run_id: str | None = None,
) -> None:
    """SIGTERM the group, wait up to ``grace`` for it to empty, then SIGKILL until it is gone.

    While ``leader`` (the group's first process) is alive or an unreaped zombie, the group id
    cannot be recycled and every member counts. Once it is reaped, only members carrying
    ``run_id`` prove the group is still ours.
    """

    def alive() -> bool:
        pinned = leader is not None and leader.returncode is None
        return _group_alive(pgid, None if pinned else run_id)

    if not alive():
        return
    _signal_group(pgid, signal_module.SIGTERM)
    with anyio.move_on_after(grace):
        if leader is not None:
            await _wait_exited(leader)
        while alive():
            await anyio.sleep(_POLL_INTERVAL)
    with anyio.move_on_after(_KILL_CONFIRM_SECONDS):
        # Re-sending covers children forked between two signals.
        while alive():
            _signal_group(pgid, signal_module.SIGKILL)
            await anyio.sleep(_POLL_INTERVAL)
        if leader is not None:
            await _wait_exited(leader)


async def _wait_exited(process: subprocess.Popen[bytes]) -> None:
    """Wait until the process has exited, without reaping it and without waiting on its pipes."""
    if process.returncode is not None:
        return
    pidfd = _open_pidfd(process.pid)
    if pidfd is None:
        # No pidfd (not Linux): a worker thread blocks in waitid; when cancelled it is
        # abandoned and ends as soon as the process does, which stopping the group ensures.
        await anyio.to_thread.run_sync(_wait_exited_blocking, process.pid, abandon_on_cancel=True)
        return
    try:
        # A pidfd turns readable when the process exits, reaped or not.
        await anyio.wait_readable(pidfd)
    finally:
        os.close(pidfd)


def _wait_exited_blocking(pid: int) -> None:
    try:
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    except ChildProcessError:
        pass


def _open_pidfd(pid: int) -> int | None:
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        return None
    try:
        fd: int = pidfd_open(pid)
    except OSError:
        return None
    return fd


def _exit_status(returncode: int) -> int:
    # Popen reports death by signal N as -N; a shell reports it as 128 + N.
    return 128 - returncode if returncode < 0 else returncode


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass
    except PermissionError:
        # Some member is not ours to signal (setuid); still stop the ones we may.
        with contextlib.suppress(OSError):
            os.kill(pgid, sig)


_PROC = "/proc"
_HAVE_PROC = sys.platform.startswith("linux") and os.path.isdir(_PROC)


def _group_alive(pgid: int, run_id: str | None = None) -> bool:
    """Whether the group has a member that is not a zombie (and, given ``run_id`` on Linux,
    one that carries that run's id, so a recycled group id is never mistaken for ours).

    Zombies count as members for ``kill``, and an init process that never reaps orphans (a
    common container setup) keeps them forever, so on Linux the members are looked up.
    """
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return run_id is None or not _HAVE_PROC
    if not _HAVE_PROC:
        return True
    needle = f"{RUN_ID_VAR}={run_id}".encode() if run_id is not None else None
    return any(needle is None or _has_env_entry(pid, needle) for pid in _live_members(pgid))


def _has_env_entry(pid: int, entry: bytes) -> bool:
    try:
        with open(f"{_PROC}/{pid}/environ", "rb") as environ_file:
            return entry in environ_file.read().split(b"\0")
    except OSError:
        return False


def _live_members(pgid: int) -> Iterator[int]:
    with os.scandir(_PROC) as entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:
                with open(f"{_PROC}/{entry.name}/stat", "rb") as stat_file:
                    stat = stat_file.read()
            except OSError:
                continue
            # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
            fields = stat[stat.rfind(b")") + 2 :].split()
            if len(fields) >= 3 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
                yield int(entry.name)


# -- background groups ----------------------------------------------------------------------

# group id -> the run that created it (checked before signalling: ids get recycled) and its
# owner. The owner is why this is not just a set: many sessions share one process (issue 21),
# and one session quitting must stop its own background processes, not another's.
_background_groups: dict[int, tuple[str, object | None]] = {}
_atexit_registered = False


def _track_background_group(pgid: int, run_id: str, owner: object | None = None) -> None:
    global _atexit_registered
    for old, (old_run, _) in list(_background_groups.items()):
        if not _group_alive(old, old_run):
            del _background_groups[old]
    _background_groups[pgid] = (run_id, owner)
    if not _atexit_registered:
        atexit.register(_kill_background_at_exit)
        _atexit_registered = True


def _take_live_background_groups(owner: object | None = None) -> list[tuple[int, str]]:
    groups: list[tuple[int, str]] = []
    for pgid, (run_id, group_owner) in list(_background_groups.items()):
        if owner is not None and group_owner is not owner:
            continue
        del _background_groups[pgid]
        if _group_alive(pgid, run_id):
            groups.append((pgid, run_id))
    return groups


def background_process_groups(owner: object | None = None) -> frozenset[int]:
    """Process groups of commands that returned while leaving processes running: every one,
    or only those of ``owner`` (the token the commands ran with, see :func:`run_shell_command`)."""
    return frozenset(
        pgid
        for pgid, (run_id, group_owner) in _background_groups.items()
        if (owner is None or group_owner is owner) and _group_alive(pgid, run_id)
    )


async def kill_background_processes(*, grace: float = DEFAULT_KILL_GRACE, owner: object | None = None) -> int:
    """Stop the processes that commands left running in the background; return how many
    groups were stopped. Call it when a session ends with the session's ``owner`` token (the
    one its commands ran with): only those groups stop. Without one, every group stops.
    """
    groups = _take_live_background_groups(owner)
    with anyio.CancelScope(shield=True):
        async with anyio.create_task_group() as task_group:
            for pgid, run_id in groups:
                task_group.start_soon(_stop_group, pgid, grace, None, run_id)
    return len(groups)


def _kill_background_at_exit() -> None:
    groups = _take_live_background_groups()
    for pgid, _ in groups:
        _signal_group(pgid, signal_module.SIGTERM)
    deadline = time.monotonic() + DEFAULT_KILL_GRACE
    while groups and time.monotonic() < deadline:
        groups = [(pgid, run_id) for pgid, run_id in groups if _group_alive(pgid, run_id)]
        time.sleep(_POLL_INTERVAL)
    for pgid, _ in groups:
        _signal_group(pgid, signal_module.SIGKILL)
