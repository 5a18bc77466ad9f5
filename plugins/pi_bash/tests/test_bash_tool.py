"""The bash tool with real processes: pi's texts, timeouts, aborts, daemons, big output.

Every test that starts processes proves none is left (the ``marker`` fixture) and that the
call returned within its timeout plus one second.
"""

from __future__ import annotations

import os
import re
import tracemalloc
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pi_bash
import pytest

from pi_host import AbortSignal, ToolResult

RunTool = Callable[..., Awaitable[Any]]
Processes = Callable[[], list[int]]
GroupMembers = Callable[[int], list[int]]

# Seconds within which a stopped command must have returned: far below the 100 s its sleep
# would run, far above what a loaded machine adds. The tests check that a call is stopped,
# not how fast.
PROMPTLY = 10


# -- the definition ---------------------------------------------------------------------------


def test_definition_matches_pi() -> None:
    tool = pi_bash.create_bash_tool(default_timeout=None)
    assert tool.name == "bash"
    assert tool.label == "bash"
    assert tool.description == (
        "Execute a bash command in the current working directory. Returns stdout and stderr. "
        "Output is truncated to last 2000 lines or 50KB (whichever is hit first). If truncated, "
        "full output is saved to a temp file. Optionally provide a timeout in seconds."
    )
    assert tool.prompt_snippet == "Execute bash commands (ls, grep, find, etc.)"
    assert tool.prompt_guidelines == ()
    assert tool.spec().parameters == {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "Bash command to execute"},
            "timeout": {"type": "number", "description": "Timeout in seconds (optional, no default timeout)"},
        },
        "required": ["command"],
    }


def test_the_timeout_description_states_the_default() -> None:
    schema = pi_bash.create_bash_tool().spec().parameters
    assert (
        schema["properties"]["timeout"]["description"] == "Timeout in seconds (optional, default 120 seconds)"
    )
    schema = pi_bash.create_bash_tool(default_timeout=2.5).spec().parameters
    assert (
        schema["properties"]["timeout"]["description"] == "Timeout in seconds (optional, default 2.5 seconds)"
    )


def test_arguments_are_validated_with_pis_message() -> None:
    tool = pi_bash.create_bash_tool()
    with pytest.raises(Exception, match='Validation failed for tool "bash"'):
        tool.validate_arguments({"timeout": 3})


# -- results and errors -------------------------------------------------------------------------


async def test_output_of_a_simple_command(run_tool: RunTool) -> None:
    run = await run_tool("echo 'test output'")
    assert run.result is not None
    assert run.text == "test output\n"
    assert run.result.details is None


async def test_stdout_and_stderr_are_merged_in_order(run_tool: RunTool) -> None:
    run = await run_tool("echo one; echo two >&2; echo three")
    assert run.text == "one\ntwo\nthree\n"


async def test_empty_output_reads_no_output(run_tool: RunTool) -> None:
    run = await run_tool("true")
    assert run.text == "(no output)"


async def test_runs_in_the_working_directory_with_the_agent_markers(
    run_tool: RunTool, tmp_path: object
) -> None:
    run = await run_tool('pwd; echo "$PI_HOST $PI_CODING_AGENT"')
    assert run.text == f"{os.path.realpath(str(tmp_path))}\n1 true\n"


async def test_a_non_zero_exit_is_an_error_with_the_output(run_tool: RunTool) -> None:
    run = await run_tool("echo partial; exit 2")
    assert run.error is not None
    assert run.text == "partial\n\n\nCommand exited with code 2"


async def test_a_failure_without_output(run_tool: RunTool) -> None:
    run = await run_tool("exit 1")
    assert run.text == "(no output)\n\nCommand exited with code 1"


async def test_death_by_signal_reports_the_shell_status(run_tool: RunTool) -> None:
    run = await run_tool("kill -KILL $$")
    assert run.text == "(no output)\n\nCommand exited with code 137"


async def test_missing_working_directory(run_tool: RunTool, tmp_path: object) -> None:
    missing = os.path.join(str(tmp_path), "nope")
    run = await run_tool("echo hi", cwd=missing)
    assert run.text == f"Working directory does not exist: {missing}\nCannot execute bash commands."


async def test_non_utf8_output_is_replaced_not_fatal(run_tool: RunTool) -> None:
    run = await run_tool(r"printf 'ok \377\376 bad\n'; head -c 3000 /dev/urandom; echo; echo done")
    assert run.result is not None
    assert run.text.startswith("ok \ufffd\ufffd bad\n")
    assert run.text.endswith("done\n")


async def test_command_prefix_runs_first(run_tool: RunTool) -> None:
    prefix = "shopt -s expand_aliases\nalias greet='echo hello from alias'"
    run = await run_tool("greet", tool_options={"command_prefix": prefix})
    assert run.text == "hello from alias\n"


async def test_custom_shell_path(run_tool: RunTool) -> None:
    run = await run_tool("echo $0", tool_options={"shell_path": "/bin/sh"})
    assert run.text == "/bin/sh\n"
    run = await run_tool("echo hi", tool_options={"shell_path": "/no/such/shell"})
    assert run.text == "Custom shell path not found: /no/such/shell"


async def test_a_command_that_cannot_start_is_a_clear_error(run_tool: RunTool, tmp_path: object) -> None:
    run = await run_tool("echo a\0b")
    assert run.text.startswith("Could not start /bin/bash in ")
    assert "null byte" in run.text
    not_a_dir = os.path.join(str(tmp_path), "file")
    open(not_a_dir, "w").close()
    run = await run_tool("true", cwd=not_a_dir)
    assert run.text.startswith(f"Could not start /bin/bash in {not_a_dir}: ")


# -- timeouts --------------------------------------------------------------------------------


async def test_timeout_kills_a_command_that_ignores_sigterm(
    run_tool: RunTool, marked_processes: Processes
) -> None:
    run = await run_tool("echo before; trap '' TERM; sleep 100 & sleep 100", timeout=1)
    assert run.text == "before\n\n\nCommand timed out after 1 seconds"
    assert 1 <= run.elapsed < PROMPTLY
    assert marked_processes() == []


async def test_the_default_timeout_applies_and_a_call_overrides_it(run_tool: RunTool) -> None:
    run = await run_tool("sleep 100", tool_options={"default_timeout": 0.3})
    assert run.text == "Command timed out after 0.3 seconds"
    assert run.elapsed < PROMPTLY
    run = await run_tool("sleep 0.5; echo finished", timeout=5, tool_options={"default_timeout": 0.2})
    assert run.text == "finished\n"
    # Zero or less is no override: the default still guards the call.
    run = await run_tool("sleep 100", timeout=0, tool_options={"default_timeout": 0.3})
    assert run.text == "Command timed out after 0.3 seconds"


async def test_timeout_stops_a_bounded_fork_storm(run_tool: RunTool, marked_processes: Processes) -> None:
    # A fork bomb's shape, bounded: a tree 4 levels deep whose 16 leaves fork short-lived
    # children without pause, so processes are created while the group is being killed;
    # all of them ignore SIGTERM, so only the SIGKILL rounds can end them.
    storm = (
        "trap '' TERM; grow() { if [ $1 -gt 0 ]; then grow $(($1-1)) & grow $(($1-1)); "
        "else while :; do (:); done; fi; }; grow 4"
    )
    run = await run_tool(storm, timeout=1)
    assert run.text == "Command timed out after 1 seconds"
    assert run.elapsed < PROMPTLY
    assert marked_processes() == []


# -- abort ---------------------------------------------------------------------------------


def _first_output(text: str) -> tuple[anyio.Event, object]:
    """An event set once an update carries ``text``, and the update callback setting it."""
    seen = anyio.Event()

    async def on_update(partial: ToolResult) -> None:
        if any(block.type == "text" and text in block.text for block in partial.content):
            seen.set()

    return seen, on_update


async def test_abort_mid_run_stops_the_group(run_tool: RunTool, marked_processes: Processes) -> None:
    signal = AbortSignal()
    started, on_update = _first_output("started")
    outcome: list[Any] = []

    async def call() -> None:
        outcome.append(
            await run_tool("trap '' TERM; echo started; sleep 100", signal=signal, on_update=on_update)
        )

    async with anyio.create_task_group() as task_group:
        task_group.start_soon(call)
        await started.wait()
        signal.abort()
    (run,) = outcome
    assert run.text == "started\n\n\nCommand aborted"
    assert run.elapsed < PROMPTLY
    assert marked_processes() == []


async def test_an_aborted_signal_runs_nothing(run_tool: RunTool, tmp_path: object) -> None:
    signal = AbortSignal()
    signal.abort()
    flag = os.path.join(str(tmp_path), "ran")
    run = await run_tool(f"touch {flag}", signal=signal)
    assert run.text == "Command aborted"
    assert not os.path.exists(flag)


async def test_cancelling_the_caller_stops_the_group(run_tool: RunTool, marked_processes: Processes) -> None:
    started, on_update = _first_output("started")
    async with anyio.create_task_group() as task_group:

        async def call() -> None:
            await run_tool("trap '' TERM; echo started; sleep 100 & sleep 100", on_update=on_update)

        task_group.start_soon(call)
        await started.wait()
        task_group.cancel_scope.cancel()
    assert marked_processes() == []


async def test_abort_under_the_agent_loops_cancel_scope(
    run_tool: RunTool, marked_processes: Processes
) -> None:
    # The agent loop runs execute() inside signal.scope(): abort arrives as cancellation.
    signal = AbortSignal()
    started, on_update = _first_output("started")

    returned: list[object] = []

    async def call() -> None:
        with signal.scope():
            returned.append(
                await run_tool(
                    "trap '' TERM; echo started; sleep 100 & sleep 100", signal=signal, on_update=on_update
                )
            )

    # A bound for a hang, not a speed check: bash's start and the TERM-to-KILL grace take
    # seconds on a loaded machine, and the command itself would run 100 s.
    with anyio.fail_after(30):
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(call)
            await started.wait()
            signal.abort()
    # The cancellation stopped the command and its group; what it printed is kept, with pi's
    # "Command aborted", as the call's error (the model and the screen get it, as in pi).
    (run,) = returned
    assert run.result is None  # type: ignore[attr-defined]
    assert str(run.error) == "started\n\n\nCommand aborted"  # type: ignore[attr-defined]
    assert marked_processes() == []


# -- background processes ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "daemon",
    ["sleep 100 &", "nohup sleep 100 >&1 2>&1 &", "(trap '' TERM HUP; exec sleep 100) &"],
)
async def test_a_daemon_holding_the_pipe_does_not_hold_the_call(
    run_tool: RunTool, marked_processes: Processes, group_members: GroupMembers, daemon: str
) -> None:
    run = await run_tool(f"echo before; {daemon} echo after; echo $$", timeout=10)
    assert run.result is not None
    before, after, pgid = run.text.splitlines()
    assert (before, after) == ("before", "after")
    assert run.elapsed < PROMPTLY
    # Kept by default (pi keeps them), remembered, and stopped at shutdown.
    assert group_members(int(pgid))
    assert int(pgid) in pi_bash.background_process_groups()
    assert await pi_bash.kill_background_processes() == 1
    assert marked_processes() == []
    assert pi_bash.background_process_groups() == frozenset()


async def test_background_kill_policy_stops_them_on_return(
    run_tool: RunTool, marked_processes: Processes, group_members: GroupMembers
) -> None:
    run = await run_tool(
        "echo before; (trap '' TERM; sleep 100) & echo $$", timeout=10, tool_options={"background": "kill"}
    )
    before, pgid = run.text.splitlines()
    assert before == "before"
    assert run.elapsed < PROMPTLY
    assert group_members(int(pgid)) == []
    assert marked_processes() == []


async def test_a_process_that_leaves_the_group_is_not_touched(
    run_tool: RunTool, marked_processes: Processes
) -> None:
    # setsid is the way to detach deliberately; it still must not hold the call open. The
    # fifo makes the shell wait until the detached process has left the group.
    command = "mkfifo left; setsid sh -c 'echo > left; exec sleep 100' & read _ < left; echo started"
    run = await run_tool(command, timeout=10, tool_options={"background": "kill"})
    assert run.text == "started\n"
    assert run.elapsed < PROMPTLY
    escaped = marked_processes()
    assert len(escaped) == 1
    for pid in escaped:
        os.kill(pid, 9)


# -- output size and streaming -------------------------------------------------------------------


async def test_ten_megabytes_of_output(run_tool: RunTool) -> None:
    tracemalloc.start()
    try:
        run = await run_tool("seq 1 1500000")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert run.result is not None
    text = run.text
    match = re.search(r"\n\n\[Showing lines 1498002-1500001 of 1500001\. Full output: (\S+)\]$", text)
    assert match is not None, text[-300:]
    path = match.group(1)
    try:
        kept = text[: match.start()]
        assert kept.splitlines() == [str(n) for n in range(1498002, 1500001)]
        details = run.result.details
        assert details["fullOutputPath"] == path
        assert details["truncation"]["truncated"] is True
        assert details["truncation"]["truncatedBy"] == "lines"
        assert details["truncation"]["totalLines"] == 1500001
        assert details["truncation"]["outputLines"] == 2000
        expected_size = sum(len(str(n)) + 1 for n in range(1, 1500001))
        assert expected_size > 10_000_000
        assert os.path.getsize(path) == expected_size
        with open(path, "rb") as full:
            assert full.read(8) == b"1\n2\n3\n4\n"
    finally:
        os.unlink(path)
    # Memory follows the limits, not the output: 10 MB streamed through < 2 MB of Python heap.
    assert peak < 2 * 1024 * 1024


async def test_byte_limited_output_names_the_limit(run_tool: RunTool) -> None:
    run = await run_tool("for i in $(seq 1 300); do printf '%0299d\\n' $i; done")
    match = re.search(r"\[Showing lines (\d+)-301 of 301 \(50\.0KB limit\)\. Full output: (\S+)\]$", run.text)
    assert match is not None, run.text[-200:]
    # 170 lines of 300 bytes fit in 50 KB, plus the empty line after the last newline.
    assert int(match.group(1)) == 301 - 171 + 1
    os.unlink(match.group(2))


async def test_one_oversized_line_shows_its_end(run_tool: RunTool) -> None:
    run = await run_tool("head -c 200000 /dev/zero | tr '\\0' a")
    match = re.search(
        r"\n\n\[Showing last 50\.0KB of line 1 \(line is 195\.3KB\)\. Full output: (\S+)\]$", run.text
    )
    assert match is not None, run.text[-200:]
    assert run.text[: match.start()] == "a" * 50 * 1024
    os.unlink(match.group(1))


async def test_updates_are_coalesced_and_carry_the_whole_output_so_far(run_tool: RunTool) -> None:
    run = await run_tool("for i in $(seq 1 40); do echo line $i; sleep 0.01; done")
    assert run.result is not None
    final = run.text
    # The first update announces the call with no content, as pi's does.
    assert run.updates[0].content == []
    texts = [
        "".join(block.text for block in update.content if block.type == "text") for update in run.updates[1:]
    ]
    assert texts, "no partial output was streamed"
    assert texts[-1] == final
    assert all(final.startswith(text) for text in texts)
    # 40 writes over at least 0.4 s, at most one update per 0.1 s (+ the first and the last).
    assert len(texts) <= run.elapsed / pi_bash.UPDATE_INTERVAL + 2
    assert len(texts) < 40


async def test_output_held_back_by_the_interval_is_sent_when_it_ends(run_tool: RunTool) -> None:
    # "b" comes within an interval of the update that carried "a"; it must go out when the
    # interval ends, not wait for more output ("c" a second later) or for the command's end.
    run = await run_tool("echo a; sleep 0.02; echo b; sleep 1; echo c")
    texts = [
        "".join(block.text for block in update.content if block.type == "text") for update in run.updates
    ]
    assert "a\nb\n" in texts
    assert texts[-1] == "a\nb\nc\n"


async def test_streamed_updates_name_the_spill_file_once_truncated(run_tool: RunTool) -> None:
    run = await run_tool("seq 1 5000")
    assert run.result is not None
    last = run.updates[-1]
    path = last.details["fullOutputPath"]
    assert last.details["truncation"]["truncated"] is True
    assert run.result.details["fullOutputPath"] == path
    os.unlink(path)
