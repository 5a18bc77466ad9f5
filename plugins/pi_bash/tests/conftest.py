"""Fixtures for pi-bash tests: real processes, each one traced by a unique environment marker.

Every command a test runs carries ``PI_BASH_TEST_MARKER=<unique>`` in its environment, and
so does every process it starts. After each test, no live (non-zombie) process may carry the
marker: a leftover fails the test (and is killed, so one failure does not leak into others).
"""

from __future__ import annotations

import os
import signal
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import pi_bash
import pytest

from pi_host import AbortSignal, ToolCallContext, ToolResult

MARKER_VAR = "PI_BASH_TEST_MARKER"

if not sys.platform.startswith("linux"):  # pragma: no cover
    pytest.skip("process checks read /proc (Linux)", allow_module_level=True)


def live_processes_with(marker: str) -> list[int]:
    """Live (non-zombie) processes whose environment holds the marker."""
    needle = f"{MARKER_VAR}={marker}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat_file:
                state = stat_file.read().rsplit(b")", 1)[1].split()[0]
            with open(f"/proc/{name}/environ", "rb") as environ_file:
                environ = environ_file.read().split(b"\0")
        except OSError:
            continue
        if state not in (b"Z", b"X") and needle in environ:
            found.append(int(name))
    return found


def live_group_members(pgid: int) -> list[int]:
    """Live (non-zombie) members of a process group."""
    members = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat_file:
                fields = stat_file.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            members.append(int(name))
    return members


def _kill_all(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


@pytest.fixture
def marker() -> Iterator[str]:
    """A unique marker; the test fails if a process carrying it outlives the test."""
    value = uuid.uuid4().hex
    yield value
    # SIGKILLed processes vanish asynchronously; allow the kernel a moment, never a guess.
    deadline = time.monotonic() + 2.0
    leftovers = live_processes_with(value)
    while leftovers and time.monotonic() < deadline:
        time.sleep(0.01)
        leftovers = live_processes_with(value)
    if leftovers:
        _kill_all(leftovers)
        pytest.fail(f"processes left behind: {leftovers}")


@pytest.fixture
def marker_env(marker: str) -> dict[str, str]:
    return {MARKER_VAR: marker}


@pytest.fixture
def marked_processes(marker: str) -> Callable[[], list[int]]:
    """``marked_processes()``: the live processes carrying this test's marker."""
    return lambda: live_processes_with(marker)


@pytest.fixture
def group_members() -> Callable[[int], list[int]]:
    """``group_members(pgid)``: the live members of a process group."""
    return live_group_members


@dataclass
class ToolRun:
    """One bash tool call: its result or error, the updates it streamed, and its duration."""

    result: ToolResult | None = None
    error: BaseException | None = None
    updates: list[ToolResult] = field(default_factory=list)
    elapsed: float = 0.0

    @property
    def text(self) -> str:
        if self.result is not None:
            return "".join(block.text for block in self.result.content if block.type == "text")
        assert self.error is not None
        return str(self.error)


RunTool = Callable[..., Awaitable[ToolRun]]


@pytest.fixture
def run_tool(marker_env: dict[str, str], tmp_path: Any) -> RunTool:
    """Run the bash tool once: ``await run_tool("cmd", timeout=1, signal=..., on_update=...)``.

    Tool options (``default_timeout``, ``background`` ...) go in ``tool_options``.
    """

    async def run(
        command: str,
        *,
        timeout: float | None = None,
        cwd: str | None = None,
        signal: AbortSignal | None = None,
        on_update: Callable[[ToolResult], Awaitable[None]] | None = None,
        tool_options: dict[str, Any] | None = None,
    ) -> ToolRun:
        options = {"env": marker_env, **(tool_options or {})}
        tool = pi_bash.create_bash_tool(**options)
        outcome = ToolRun()

        async def record(partial: ToolResult) -> None:
            outcome.updates.append(partial)
            if on_update is not None:
                await on_update(partial)

        ctx = ToolCallContext(
            tool_call_id="call-1",
            signal=signal or AbortSignal(),
            cwd=cwd or str(tmp_path),
            _on_update=record,
        )
        arguments: dict[str, Any] = {"command": command}
        if timeout is not None:
            arguments["timeout"] = timeout
        params = tool.validate_arguments(arguments)
        started = anyio.current_time()
        try:
            outcome.result = await tool.execute(params, ctx)
        except pi_bash.BashError as exc:
            outcome.error = exc
        outcome.elapsed = anyio.current_time() - started
        return outcome

    return run


@pytest.fixture(autouse=True)
async def _no_background_groups_left() -> Any:
    """Tests that keep background processes must stop them themselves."""
    yield
    await pi_bash.kill_background_processes(grace=0.1)
