"""Restart on next use: a server that failed to start, or crashed, is tried again when used.

A use is a prompt, a call of one of the server's tools, or a tool search; a server whose
start failed waits out its backoff (``mcp.restartBackoffMs``) first, so a broken one is not
spawned for every call. The server's program is a real script that the tests create and
remove, as a user fixing a broken command would.
"""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path
from typing import Any

import pi_mcp
import pytest

from pi_host import hookimpl
from pi_host.testing import HostFactory, RecordingUI, reply, tool_call


class Capture:
    manager: Any = None

    @hookimpl(trylast=True)
    def pi_session_start(self, ctx: Any) -> None:
        self.manager = pi_mcp.manager_of(ctx)


class Program:
    """An executable at ``path`` that runs the demo server (named ``later``) once installed."""

    def __init__(self, path: Path, demo: Any) -> None:
        self.path = path
        self.demo = demo

    def install(self) -> None:
        command = shlex.join([sys.executable, str(self.demo.server), "--name", "later"])
        self.path.write_text(f"#!/bin/sh\nexec {command}\n")
        self.path.chmod(0o755)

    def remove(self) -> None:
        self.path.unlink()


def build(
    make_host: HostFactory, program: Program, *, others: dict[str, Any] | None = None, **mcp: Any
) -> tuple[Any, Capture, RecordingUI]:
    capture, ui = Capture(), RecordingUI()
    servers = {"later": {"command": str(program.path)}, **(others or {})}
    settings = {"mcp": {"servers": servers, **mcp}}
    host = make_host(pi_mcp, capture, settings=settings, ui=ui, session_options={"mode": "tui"})
    return host, capture, ui


async def test_a_server_that_failed_to_start_starts_on_a_later_prompt(
    make_host: HostFactory, demo: Any, tmp_path: Path
) -> None:
    program = Program(tmp_path / "later-server", demo)
    host, capture, ui = build(make_host, program, restartBackoffMs=0)
    (await host.run("hello", replies=["hi"])).assert_ok()
    connection = capture.manager.connections["later"]
    assert connection.state == "failed" and connection.starts == 1
    (notice,) = [text for text in ui.messages if "later" in text]
    assert 'MCP server "later" could not start' in notice
    assert "pi-mcp starts it again on its next use, /mcp restart later does now" in notice
    assert "mcp__later__echo" not in host.provider.requests[-1].tool_names

    program.install()  # the user fixes the command
    outcome = await host.run("again", replies=[tool_call("mcp__later__echo", text="up"), "done"])
    outcome.assert_ok()
    assert outcome.tool_results[0].content[0].text == "later says: up"
    assert connection.starts == 2 and "mcp__later__echo" in host.provider.requests[-1].tool_names
    await host.close()


async def test_a_broken_server_waits_out_its_backoff_and_mcp_restart_skips_it(
    make_host: HostFactory, demo: Any, tmp_path: Path
) -> None:
    program = Program(tmp_path / "later-server", demo)
    program.install()
    host, capture, ui = build(make_host, program, restartBackoffMs=600_000)
    crashed = await host.run("crash", replies=[tool_call("mcp__later__crash"), "ok"])
    assert "restarted on next use" in crashed.tool_results[0].content[0].text
    connection = capture.manager.connections["later"]
    assert connection.starts == 1

    program.remove()  # the crash is followed by a start that fails: the prompt's
    outcome = await host.run("echo", replies=[tool_call("mcp__later__echo", text="x"), "ok"])
    assert connection.starts == 2  # the prompt tried once; the call did not spawn it again
    (result,) = outcome.tool_results
    text = result.content[0].text
    assert result.is_error and text.startswith('MCP server "later" is not running: its last start failed')
    assert "/mcp restart later" in text and "mcp.restartBackoffMs" in text and "could not start" in text
    assert any('MCP server "later" could not start' in message for message in ui.messages)

    program.install()
    again = await host.run("echo", replies=[tool_call("mcp__later__echo", text="y"), "ok"])
    assert again.tool_results[0].is_error and connection.starts == 2  # the backoff still holds

    await host.run("/mcp restart later")
    assert connection.state == "ready" and connection.starts == 3
    assert "later (stdio): ready" in ui.messages[-1]
    done = await host.run("echo", replies=[tool_call("mcp__later__echo", text="z"), "ok"])
    assert done.tool_results[0].content[0].text == "later says: z"
    await host.close()


async def test_the_tool_search_starts_a_server_that_failed_to_start(
    make_host: HostFactory, demo: Any, tmp_path: Path
) -> None:
    program = Program(tmp_path / "later-server", demo)
    # Another server's tools make the search tool the model's way to every MCP tool.
    others = {"demo": demo.stdio("demo")}
    host, capture, _ = build(make_host, program, others=others, restartBackoffMs=0, toolSearchThreshold=0)
    (await host.run("hello", replies=["hi"])).assert_ok()
    connection = capture.manager.connections["later"]
    assert connection.starts == 1

    def fixed_then_search(request: Any) -> Any:
        program.install()  # the program appears while the run goes on
        return tool_call("mcp_tool_search", query="later echo")

    outcome = await host.run(
        "find echo",
        replies=[
            tool_call("mcp_tool_search", query="later"),
            fixed_then_search,
            reply(tool_calls=[tool_call("mcp__later__echo", text="found")]),
            "done",
        ],
    )
    outcome.assert_ok()
    missed, found, called = outcome.tool_results
    # The prompt tried (2), the first search tried again (3), the second started it (4).
    assert connection.starts == 4
    assert missed.is_error and 'Not running, so not searched: MCP server "later" could not start' in (
        missed.content[0].text
    )
    assert "mcp__later__echo" in found.details["loaded"]
    assert called.content[0].text == "later says: found"
    await host.close()


async def test_the_backoff_doubles_with_each_failed_start_up_to_five_minutes(tmp_path: Path) -> None:
    from pi_mcp._connection import McpServerError, ServerConnection

    config = pi_mcp.ServerConfig(name="gone", transport="stdio", command=str(tmp_path / "missing"))
    connection = ServerConnection(config, cwd=str(tmp_path), startup_timeout=10, restart_backoff=10)
    waits = []
    for _ in range(7):
        with pytest.raises(McpServerError, match=r'^MCP server "gone" could not start'):
            await connection.ensure_started(force=True)  # as /mcp restart, whatever the backoff
        waits.append(round(connection.retry_at - time.monotonic(), -1))
    assert waits == [10, 20, 40, 80, 160, 300, 300]
    assert not connection.may_start()
    with pytest.raises(McpServerError, match="is not running: its last start failed"):
        await connection.ensure_started()  # a use within the backoff spawns nothing
    assert connection.starts == 7
