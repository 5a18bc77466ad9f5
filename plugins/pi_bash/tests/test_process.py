"""The process runner under the tool and user bash: environment, errors, group bookkeeping."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pi_bash
import pytest
from pi_bash import _process, build_env, resolve_shell, run_shell_command

Processes = Callable[[], list[int]]


def test_the_default_shell_is_bin_bash() -> None:
    assert resolve_shell() == ("/bin/bash", ["-c"])
    assert resolve_shell("/bin/sh") == ("/bin/sh", ["-c"])
    with pytest.raises(pi_bash.BashError, match=r"^Custom shell path not found: /nowhere/sh$"):
        resolve_shell("/nowhere/sh")


def test_the_environment_carries_the_agent_markers() -> None:
    env = build_env({"EXTRA": "1"})
    assert env["PI_HOST"] == "1"
    assert env["PI_CODING_AGENT"] == "true"
    assert env["EXTRA"] == "1"
    assert env["PATH"] == os.environ["PATH"]


async def test_each_run_gets_its_own_id(tmp_path: Any) -> None:
    seen: list[bytes] = []
    for _ in range(2):
        outcome = await run_shell_command(
            f'echo "${_process.RUN_ID_VAR}"', str(tmp_path), on_data=seen.append
        )
        assert outcome == pi_bash.CommandOutcome(exit_code=0)
    first, second = b"".join(seen).split()
    assert len(first) == 16 and first != second


async def test_a_failing_output_callback_surfaces_as_itself_and_stops_the_group(
    tmp_path: Any, marker_env: dict[str, str], marked_processes: Processes
) -> None:
    def on_data(data: bytes) -> None:
        raise RuntimeError("listener broke")

    with pytest.raises(RuntimeError, match="listener broke"):
        await run_shell_command(
            "trap '' TERM; echo hi; sleep 100 & sleep 100",
            str(tmp_path),
            on_data=on_data,
            env=build_env(marker_env),
        )
    assert marked_processes() == []


async def test_a_recycled_group_id_is_never_taken_for_ours(
    tmp_path: Any, marker_env: dict[str, str], marked_processes: Processes
) -> None:
    output: list[bytes] = []
    command = f'sleep 100 & echo "$$ ${_process.RUN_ID_VAR}"'
    await run_shell_command(command, str(tmp_path), on_data=output.append, env=build_env(marker_env))
    pgid_text, run_id = b"".join(output).decode().split()
    pgid = int(pgid_text)
    assert pgid in pi_bash.background_process_groups()
    # A group with our id but not our run (what a recycled id would look like) is a stranger.
    assert _process._group_alive(pgid, run_id)
    assert not _process._group_alive(pgid, "0" * 16)
    assert await pi_bash.kill_background_processes() == 1
    assert marked_processes() == []
    assert not _process._group_alive(pgid)
