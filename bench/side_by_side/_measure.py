"""Run one agent process and measure it: wall time, CPU time and peak memory of that process alone.

``resource.getrusage(RUSAGE_CHILDREN)`` cannot give a per-run peak: its ``ru_maxrss`` is the
largest of *all* children reaped so far, so a small run after a big one reports the big one.
``os.wait4(pid)`` returns the resource usage of exactly the process it reaps (with the
descendants it reaped itself, such as the shells of bash tool calls), which is what a per-run
figure needs. A child's peak also starts from the resident set of the process that forked it,
so the agent is started, and reaped with ``wait4``, by a small process of its own
(``_spawn.py``) rather than by the runner, whose memory would otherwise set a floor under
every agent's figure.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

__all__ = ["AgentFailed", "MeasuredProcess", "Measurement", "run_measured"]

_SPAWNER = Path(__file__).with_name("_spawn.py")


class AgentFailed(RuntimeError):
    """An agent process exited with an error or did not produce what the workload expects."""


@dataclass(frozen=True)
class Measurement:
    """What one process cost. ``max_rss_mib`` is the kernel's peak resident set size."""

    wall_s: float
    cpu_s: float
    max_rss_mib: float
    exit_code: int
    stdout: bytes
    stderr: bytes


class MeasuredProcess:
    """A child process whose stdin/stdout the caller drives, reaped with ``os.wait4``.

    ``stdout`` is a pipe read by the caller (or, with ``capture=True``, collected by a thread);
    stderr is always collected by a thread so that a chatty agent cannot block on a full pipe.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path,
        stdin: bool = False,
        capture: bool = True,
        timeout: float = 600.0,
    ) -> None:
        self._started = time.perf_counter()
        self._report, report_end = os.pipe()
        try:
            # -I -S: the spawner imports next to nothing, so the floor it passes on is small.
            # Its own session: a kill reaches the spawner and the agent together.
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", str(_SPAWNER), str(report_end), *argv],
                env=dict(env),
                cwd=cwd,
                stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,
                pass_fds=(report_end,),
                start_new_session=True,
            )
        finally:
            os.close(report_end)
        self._stderr: list[bytes] = []
        self._stdout: list[bytes] = []
        self._threads = [_drain(self.proc.stderr, self._stderr)]
        if capture:
            self._threads.append(_drain(self.proc.stdout, self._stdout))
        # A hung agent must fail its run, not stall the benchmark: kill it after ``timeout``.
        self.timed_out = False
        self._timer = threading.Timer(timeout, self._time_out)
        self._timer.daemon = True
        self._timer.start()

    @property
    def stdin(self) -> IO[bytes]:
        assert self.proc.stdin is not None
        return self.proc.stdin

    @property
    def stdout(self) -> IO[bytes]:
        assert self.proc.stdout is not None
        return self.proc.stdout

    def finish(self) -> Measurement:
        """Close stdin, wait for the process to exit and return its cost."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
        try:
            _pid, status, usage = os.wait4(self.proc.pid, 0)
        finally:
            self._timer.cancel()
        wall = time.perf_counter() - self._started
        cpu = usage.ru_utime + usage.ru_stime
        max_rss_kib = usage.ru_maxrss
        exit_code = os.waitstatus_to_exitcode(status)
        with os.fdopen(self._report, "rb") as report:
            line = report.read().split()
        if len(line) == 4:  # the agent's own figures (none when it was killed with the spawner)
            wall, cpu, max_rss_kib, exit_code = float(line[0]), float(line[1]), int(line[2]), int(line[3])
        self.proc.returncode = exit_code
        for thread in self._threads:
            thread.join(10)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        return Measurement(
            wall_s=wall,
            cpu_s=cpu,
            # Linux reports kilobytes (macOS bytes; this runner targets Linux).
            max_rss_mib=max_rss_kib / 1024,
            exit_code=exit_code,
            stdout=b"".join(self._stdout),
            stderr=b"".join(self._stderr),
        )

    def _time_out(self) -> None:
        self.timed_out = True
        self.kill()

    def kill(self) -> None:
        """Stop the process at once (a workload that gave up on it)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the spawner and the agent
        except ProcessLookupError:
            pass


def _drain(stream: IO[bytes] | None, into: list[bytes]) -> threading.Thread:
    def read() -> None:
        assert stream is not None
        while chunk := stream.read(1 << 16):
            into.append(chunk)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def run_measured(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    timeout: float = 600.0,
    on_stdout: Callable[[MeasuredProcess], None] | None = None,
) -> Measurement:
    """Run ``argv`` to completion and measure it.

    :param on_stdout: reads the process's stdout itself (for workloads that time events as they
        arrive); without it stdout is collected into :attr:`Measurement.stdout`.
    """
    process = MeasuredProcess(argv, env=env, cwd=cwd, capture=on_stdout is None, timeout=timeout)
    if on_stdout is not None:
        on_stdout(process)
    return process.finish()
