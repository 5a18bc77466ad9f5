"""The command runner: input, output, exit status, timeouts that kill the whole group."""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio
import pytest
from pi_shell_hooks import run_command, shell_argv

pytestmark = pytest.mark.skipif(not os.path.exists("/proc"), reason="process checks read /proc")


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in (b"Z", b"X")


def wait_dead(pid: int, deadline: float = 2.0) -> bool:
    end = time.monotonic() + deadline
    while alive(pid):
        if time.monotonic() > end:
            return False
        time.sleep(0.01)
    return True


async def test_input_output_and_status(tmp_path: Path) -> None:
    result = await run_command(shell_argv("cat; echo oops >&2; exit 3"), b'{"a": 1}', cwd=str(tmp_path))
    assert (result.exit_code, result.stdout, result.stderr) == (3, '{"a": 1}', "oops\n")
    assert not result.timed_out


async def test_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    command = f"trap '' TERM; sleep 300 & echo $! > {pids}; sleep 300"
    started = time.monotonic()
    result = await run_command(shell_argv(command), b"", cwd=str(tmp_path), timeout=0.3, grace=0.2)
    assert result.timed_out and result.exit_code is None
    assert time.monotonic() - started < 5
    assert wait_dead(int(pids.read_text()))


async def test_a_background_child_holding_the_pipes_does_not_hold_the_hook(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    started = time.monotonic()
    result = await run_command(shell_argv(f"sleep 30 & echo $! > {pids}; echo done"), b"", cwd=str(tmp_path))
    assert result.exit_code == 0 and result.stdout == "done\n"
    assert time.monotonic() - started < 5
    os.kill(int(pids.read_text()), 9)


async def test_a_hook_that_ignores_a_large_input(tmp_path: Path) -> None:
    result = await run_command(shell_argv("exit 0"), b"x" * 4_000_000, cwd=str(tmp_path), timeout=5)
    assert result.exit_code == 0


async def test_cancellation_stops_the_group(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    with anyio.move_on_after(0.3):
        await run_command(shell_argv(f"sleep 300 & echo $! > {pids}; wait"), b"", cwd=str(tmp_path))
    assert wait_dead(int(pids.read_text()))


async def test_a_missing_program_is_reported(tmp_path: Path) -> None:
    result = await run_command(["/no/such/hook"], b"", cwd=str(tmp_path))
    assert result.exit_code is None and result.error is not None and "/no/such/hook" in result.error


async def test_output_is_capped(tmp_path: Path) -> None:
    result = await run_command(shell_argv("head -c 3000000 /dev/zero"), b"", cwd=str(tmp_path))
    assert result.exit_code == 0 and len(result.stdout) == 1024 * 1024
