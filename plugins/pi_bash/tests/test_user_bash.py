"""User bash (``!cmd``): the recorded ``bashExecution`` message, cleaning, abort, truncation."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import anyio
import pi_bash
import pytest
from pi_bash import TerminalTextFilter, run_user_bash, sanitize_output

from pi_host import AbortSignal, BashExecutionMessage

Processes = Callable[[], list[int]]


async def test_a_successful_command_is_recorded(tmp_path: Any, marker_env: dict[str, str]) -> None:
    message = await run_user_bash("echo hello; pwd", str(tmp_path), env=marker_env)
    assert isinstance(message, BashExecutionMessage)
    assert message.command == "echo hello; pwd"
    assert message.output == f"hello\n{os.path.realpath(str(tmp_path))}\n"
    assert message.exit_code == 0
    assert not message.cancelled
    assert not message.truncated
    assert message.full_output_path is None
    assert message.exclude_from_context is False


async def test_a_failure_is_recorded_not_raised(tmp_path: Any, marker_env: dict[str, str]) -> None:
    message = await run_user_bash(
        "echo oops >&2; exit 4", str(tmp_path), env=marker_env, exclude_from_context=True
    )
    assert (message.output, message.exit_code, message.cancelled) == ("oops\n", 4, False)
    assert message.exclude_from_context is True
    assert message.to_json_dict()["excludeFromContext"] is True


async def test_terminal_escapes_and_carriage_returns_are_removed(
    tmp_path: Any, marker_env: dict[str, str]
) -> None:
    command = r"printf '\033[1;31mred\033[0m\r\n\033]0;title\00750%%\r100%%\n\001bell\n'"
    message = await run_user_bash(command, str(tmp_path), env=marker_env)
    assert message.output == "red\n50%100%\nbell\n"


async def test_output_streams_to_the_callback(tmp_path: Any, marker_env: dict[str, str]) -> None:
    chunks: list[str] = []

    async def on_output(text: str) -> None:
        chunks.append(text)

    message = await run_user_bash("echo one; echo two", str(tmp_path), env=marker_env, on_output=on_output)
    assert "".join(chunks) == message.output == "one\ntwo\n"
    synchronous: list[str] = []
    await run_user_bash("echo three", str(tmp_path), env=marker_env, on_output=synchronous.append)
    assert synchronous == ["three\n"]


async def test_abort_cancels_and_stops_the_group(
    tmp_path: Any, marker_env: dict[str, str], marked_processes: Processes
) -> None:
    signal = AbortSignal()
    started = anyio.Event()

    def on_output(text: str) -> None:
        if "started" in text:
            started.set()

    messages: list[BashExecutionMessage] = []

    async def call() -> None:
        command = "trap '' TERM; echo started; sleep 100 & sleep 100"
        messages.append(
            await run_user_bash(command, str(tmp_path), signal=signal, on_output=on_output, env=marker_env)
        )

    # A bound for a hang, not a speed check: bash's start and the TERM-to-KILL grace take
    # seconds on a loaded machine, and the command itself would run 100 s.
    with anyio.fail_after(30):
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(call)
            await started.wait()
            signal.abort()
    (message,) = messages
    assert message.cancelled
    assert message.exit_code is None
    assert message.output == "started\n"
    assert marked_processes() == []


async def test_a_timeout_cancels(
    tmp_path: Any, marker_env: dict[str, str], marked_processes: Processes
) -> None:
    message = await run_user_bash("sleep 100", str(tmp_path), timeout=0.2, env=marker_env)
    assert message.cancelled
    assert message.exit_code is None
    assert marked_processes() == []


async def test_long_output_is_truncated_with_the_full_text_kept(
    tmp_path: Any, marker_env: dict[str, str]
) -> None:
    message = await run_user_bash(r"seq 1 3000 | sed 's/^/\x1b[32m/'", str(tmp_path), env=marker_env)
    assert message.truncated
    assert message.full_output_path is not None
    try:
        assert message.output.splitlines() == [str(n) for n in range(1002, 3001)]
        with open(message.full_output_path, encoding="utf-8") as full:
            assert full.read() == "".join(f"{n}\n" for n in range(1, 3001))
    finally:
        os.unlink(message.full_output_path)


async def test_the_prefix_runs_but_the_command_is_recorded_as_typed(
    tmp_path: Any, marker_env: dict[str, str]
) -> None:
    message = await run_user_bash(
        'echo "$GREETING"', str(tmp_path), command_prefix="GREETING=hi", env=marker_env
    )
    assert message.command == 'echo "$GREETING"'
    assert message.output == "hi\n"


async def test_a_missing_directory_raises(tmp_path: Any) -> None:
    missing = os.path.join(str(tmp_path), "gone")
    with pytest.raises(
        pi_bash.BashError, match=r"^Working directory does not exist: .*gone\nCannot execute bash commands\.$"
    ):
        await run_user_bash("true", missing)


# -- cleaning ------------------------------------------------------------------------------


def test_sanitize_keeps_text_tabs_and_newlines() -> None:
    assert sanitize_output("a\tb\nc\x00\x07\x7fd\ufff9e") == "a\tb\nc\x7fde"
    assert sanitize_output("\x1b[38;5;200mx\x1b[K\x1b(B\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\") == "xlink"


def test_an_escape_split_across_chunks_is_removed_whole() -> None:
    data = "a\x1b[1;31mred\x1b]0;title\x07b\x1b[0m"
    for cut in range(len(data) + 1):
        text_filter = TerminalTextFilter()
        out = text_filter.feed(data[:cut]) + text_filter.feed(data[cut:]) + text_filter.flush()
        assert out == "aredb", cut


def test_a_lone_escape_is_not_held_forever() -> None:
    text_filter = TerminalTextFilter()
    assert text_filter.feed("x\x1b") == "x"
    # A newline cannot continue an escape sequence: the ESC is dropped, the text let through.
    assert text_filter.feed("\nrest") == "\nrest"
