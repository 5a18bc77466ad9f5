"""Running one hook command so that it can never wedge the session.

- The command starts in a new session and process group, so one signal reaches it and
  everything it started (unless a child deliberately left the group).
- The event goes to its standard input while its output is read, all concurrently: a hook
  that never reads its input, or floods its output, cannot block on a full pipe.
- Completion is the command's exit, not the end of its output: a background process that
  inherited the pipes cannot hold the hook open (output is drained briefly, then dropped).
- On timeout, or when the session aborts the wait, the whole group gets SIGTERM, then SIGKILL
  after a short grace period; the wait for the exit is shielded so no zombie is left.
- Output beyond :data:`MAX_OUTPUT` bytes per stream is read and discarded.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from subprocess import PIPE

import anyio
from anyio.abc import ByteReceiveStream, Process

__all__ = ["DEFAULT_TIMEOUT", "KILL_GRACE", "MAX_OUTPUT", "CommandResult", "run_command", "shell_argv"]

DEFAULT_TIMEOUT = 60.0
"""Seconds a hook may run (Claude Code's default)."""

KILL_GRACE = 1.0
"""Seconds between SIGTERM and SIGKILL when a hook's group is stopped."""

MAX_OUTPUT = 1024 * 1024
"""Bytes kept of each output stream."""

_DRAIN_AFTER_EXIT = 0.1


@dataclass(frozen=True)
class CommandResult:
    """How a hook command ended.

    :ivar exit_code: its exit status (``-N`` when signal N ended it); ``None`` when it was
        stopped (timeout, abort) or could not start.
    :ivar stdout: standard output, decoded (invalid UTF-8 replaced).
    :ivar stderr: standard error, decoded.
    :ivar timed_out: stopped after its timeout.
    :ivar error: why it could not start (``None`` when it did).
    :ivar duration: seconds from start to exit.
    """

    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    error: str | None = None
    duration: float = 0.0


def shell_argv(command: str) -> list[str]:
    """``command`` run by bash (``sh`` when there is no bash), as Claude Code runs hooks."""
    shell = "/bin/bash" if os.path.exists("/bin/bash") else (shutil.which("bash") or "/bin/sh")
    return [shell, "-c", command]


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _stop_group(process: Process, grace: float) -> None:
    """SIGTERM the group, wait up to ``grace`` for the command to exit, then SIGKILL the group."""
    pgid = process.pid
    _signal_group(pgid, signal.SIGTERM)
    with anyio.move_on_after(grace):
        await process.wait()
    _signal_group(pgid, signal.SIGKILL)  # also stragglers that outlived the leader
    await process.wait()


async def _read(stream: ByteReceiveStream | None, sink: bytearray, done: anyio.Event) -> None:
    try:
        if stream is None:
            return
        with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            async for chunk in stream:
                room = MAX_OUTPUT - len(sink)
                if room > 0:
                    sink.extend(chunk[:room])
    finally:
        done.set()


async def _write(process: Process, data: bytes) -> None:
    stdin = process.stdin
    if stdin is None:
        return
    # A hook may exit without reading its input: a broken pipe is its choice, not an error.
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, BrokenPipeError, OSError):
        await stdin.send(data)
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, BrokenPipeError, OSError):
        await stdin.aclose()


async def run_command(
    argv: Sequence[str],
    stdin: bytes,
    *,
    cwd: str,
    env: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    grace: float = KILL_GRACE,
) -> CommandResult:
    """Run ``argv`` with ``stdin`` as its input; never raises for the command's own failures.

    Cancellation (the session's abort) stops the command's group before it propagates.
    """
    started = time.monotonic()
    try:
        process = await anyio.open_process(
            list(argv),
            stdin=PIPE,
            stdout=PIPE,
            stderr=PIPE,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            start_new_session=True,
        )
    except OSError as exc:
        return CommandResult(exit_code=None, error=f"cannot start {argv[0]!r}: {exc.strerror or exc}")
    stdout, stderr = bytearray(), bytearray()
    out_done, err_done = anyio.Event(), anyio.Event()
    timed_out = False
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(_write, process, stdin)
            group.start_soon(_read, process.stdout, stdout, out_done)
            group.start_soon(_read, process.stderr, stderr, err_done)
            with anyio.move_on_after(timeout) as deadline:
                await process.wait()
            timed_out = deadline.cancelled_caught
            if timed_out:
                with anyio.CancelScope(shield=True):
                    await _stop_group(process, grace)
            # The command has exited; whatever still holds its pipes does not hold us.
            with anyio.move_on_after(_DRAIN_AFTER_EXIT):
                await out_done.wait()
                await err_done.wait()
            group.cancel_scope.cancel()
    finally:
        if process.returncode is None:
            with anyio.CancelScope(shield=True):
                await _stop_group(process, grace)
        with anyio.CancelScope(shield=True):
            # closes the pipe transports too, so a straggler holding them cannot keep them open
            await process.aclose()
    return CommandResult(
        exit_code=None if timed_out else process.returncode,
        stdout=stdout.decode("utf-8", "replace"),
        stderr=stderr.decode("utf-8", "replace"),
        timed_out=timed_out,
        duration=time.monotonic() - started,
    )
