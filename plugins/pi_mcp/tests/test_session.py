"""pi-mcp in a real session on the scripted model, against real MCP servers over stdio and HTTP.

One host (and one set of server processes) serves the whole module: starting an SDK server
costs seconds, so the module shares an event loop and the tests run in file order.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pi_mcp
import pytest
import pytest_asyncio

from pi_host.testing import IsolatedHost, RecordingUI, build_host, reply, tool_call

pytestmark = pytest.mark.asyncio(loop_scope="module")

TIMEOUT_MS = 2500


@pytest.fixture(scope="module")
def environment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("mcp")
    with pytest.MonkeyPatch.context() as patch:
        for name in list(os.environ):
            if name.startswith("PI_HOST") or name == "MCP_TOOL_TIMEOUT":
                patch.delenv(name)
        patch.setenv("HOME", str(root / "home"))
        patch.setenv("PI_HOST_DIR", str(root / "agent"))
        patch.setenv("DEMO_VALUE", "from-the-environment")
        (root / "home").mkdir()
        (root / "agent").mkdir()
        (root / "project").mkdir()
        yield root


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def host(environment: Path, http_server: str, demo: Any) -> AsyncIterator[IsolatedHost]:
    settings: dict[str, Any] = {
        "mcp": {
            "toolTimeoutMs": TIMEOUT_MS,
            "servers": {
                "demo": demo.stdio("demo", env={"VALUE": "${DEMO_VALUE}"}, disabledTools=["t*"]),
                "remote": {"type": "http", "url": http_server, "allowedTools": ["echo", "add"]},
                "ghost": {"command": str(environment / "no-such-program")},
            },
        }
    }
    ui = RecordingUI()
    built = build_host(
        [pi_mcp],
        cwd=environment / "project",
        agent_dir=environment / "agent",
        settings=settings,
        ui=ui,
        session_options={"mode": "tui"},
    )
    try:
        yield built
    finally:
        await built.close()


async def test_every_servers_tools_are_in_the_first_request(host: IsolatedHost) -> None:
    outcome = await host.run("hello", replies=["hi"])
    outcome.assert_ok()
    names = host.provider.requests[-1].tool_names
    for expected in ("mcp__demo__echo", "mcp__demo__picture", "mcp__remote__echo", "mcp__remote__add"):
        assert expected in names
    assert "mcp__remote__picture" not in names  # not in the allow list
    tools = {tool.name: tool for tool in host.provider.requests[-1].context.tools or ()}
    assert tools["mcp__demo__add"].parameters["properties"]["a"]["type"] == "integer"
    # The server that cannot start is named, with the remedy, and the others work.
    messages = [text for text, _ in host.ui.notifications if "ghost" in text]
    assert messages and "could not start" in messages[0] and "/mcp restart" in messages[0]


async def test_text_structured_and_image_results(host: IsolatedHost) -> None:
    outcome = await host.run(
        "use them",
        replies=[
            reply(
                tool_calls=[
                    tool_call("mcp__demo__echo", text="ping"),
                    tool_call("mcp__remote__add", a=2, b=3),
                    tool_call("mcp__demo__picture"),
                    tool_call("mcp__demo__env"),
                ]
            ),
            "done",
        ],
    )
    outcome.assert_ok()
    echo, add, picture, env = outcome.tool_results
    assert echo.content[0].text == "demo says: ping" and not echo.is_error
    assert add.details["structuredContent"] == {"total": 5, "terms": [2, 3]}
    assert [block.type for block in picture.content] == ["text", "image"]
    assert picture.content[1].mime_type == "image/png"
    assert "VALUE=from-the-environment" in env.content[0].text


async def test_a_tool_error_reaches_the_model(host: IsolatedHost) -> None:
    outcome = await host.run("fail", replies=[tool_call("mcp__demo__fail", reason="no"), "ok"])
    (result,) = outcome.tool_results
    assert result.is_error and "refused: no" in result.content[0].text


async def test_long_output_is_truncated_like_the_built_in_tools(host: IsolatedHost) -> None:
    outcome = await host.run("flood", replies=[tool_call("mcp__demo__flood", lines=5000), "ok"])
    (result,) = outcome.tool_results
    assert result.details["truncation"]["totalLines"] == 5000
    assert "[Output truncated: 2000 of 5000 lines" in result.content[0].text


async def cancellations(host: IsolatedHost) -> int:
    """How many calls of the demo server's hang tool it saw cancelled (notifications/cancelled)."""
    outcome = await host.run("count", replies=[tool_call("mcp__demo__cancellations"), "ok"])
    return int(outcome.tool_results[0].content[0].text.split("=")[1])


async def test_a_hung_call_times_out_and_the_session_goes_on(host: IsolatedHost) -> None:
    before = await cancellations(host)
    started = time.monotonic()
    outcome = await host.run("hang", replies=[tool_call("mcp__demo__hang"), "ok"])
    (result,) = outcome.tool_results
    assert result.is_error
    text = result.content[0].text
    assert 'MCP server "demo" did not answer' in text and "mcp.toolTimeoutMs" in text
    assert time.monotonic() - started < TIMEOUT_MS / 1000 + 10
    again = await host.run("echo", replies=[tool_call("mcp__demo__echo", text="still"), "ok"])
    assert again.tool_results[0].content[0].text == "demo says: still"
    assert await cancellations(host) == before + 1  # the SDK told the server


async def test_abort_cancels_the_mcp_request(host: IsolatedHost, environment: Path) -> None:
    before = await cancellations(host)
    session = await host.session()
    marker = environment / "hang-started"
    outcome: list[Any] = []
    begun = time.monotonic()
    async with anyio.create_task_group() as group:

        async def run() -> None:
            # No reply after the call: the aborted run asks the model nothing more.
            call = tool_call("mcp__demo__hang", started_file=str(marker))
            outcome.append(await host.run("hang", replies=[call]))

        group.start_soon(run)
        # Aborted once the server runs the call (tool_execution_start comes before the
        # request is sent, and a request cancelled unsent needs no notice to the server).
        while not marker.exists():
            await anyio.sleep(0.01)
        await session.abort()
    assert time.monotonic() - begun < TIMEOUT_MS / 1000  # the abort, not the timeout, ended it
    (result,) = outcome[0].tool_results
    assert result.is_error
    assert await cancellations(host) == before + 1  # the server's call was cancelled, not left running


async def test_a_crash_mid_call_is_named_and_the_server_restarts(host: IsolatedHost, demo: Any) -> None:
    before = await host.run("pid", replies=[tool_call("mcp__demo__env"), "ok"])
    old_pid = int(before.tool_results[0].content[0].text.split("pid=")[1])
    outcome = await host.run("crash", replies=[tool_call("mcp__demo__crash"), "ok"])
    (result,) = outcome.tool_results
    assert result.is_error
    assert 'MCP server "demo" closed the connection' in result.content[0].text
    assert "restarted on next use" in result.content[0].text
    after = await host.run("pid", replies=[tool_call("mcp__demo__env"), "ok"])
    new_pid = int(after.tool_results[0].content[0].text.split("pid=")[1])
    assert new_pid != old_pid and not demo.pid_alive(old_pid)


async def test_resources_are_reachable_through_a_tool(host: IsolatedHost) -> None:
    outcome = await host.run(
        "read",
        replies=[
            reply(
                tool_calls=[
                    tool_call("mcp_read_resource", server="demo"),
                    tool_call("mcp_read_resource", server="demo", uri="demo://readme"),
                ]
            ),
            "ok",
        ],
    )
    listing, read = outcome.tool_results
    assert "demo://readme" in listing.content[0].text
    assert read.content[0].text == "readme of demo"


async def test_prompts_are_slash_commands(host: IsolatedHost) -> None:
    assert "mcp__demo__review" in host.commands
    await host.run("/mcp__demo__review path=src/app.py", replies=["reviewed"])
    last = host.provider.requests[-1].messages[-1]
    assert "Please review src/app.py carefully." in str(last.content)


async def test_the_mcp_command_lists_state_tools_and_errors(host: IsolatedHost) -> None:
    await host.run("/mcp")
    text = host.ui.notifications[-1][0]
    assert "demo (stdio): ready" in text
    assert "remote (http): ready, 2/" in text
    assert "ghost (stdio): failed" in text and "could not start" in text
    assert "tokens" in text


async def test_shutdown_leaves_no_server_process(host: IsolatedHost, demo: Any) -> None:
    outcome = await host.run("pid", replies=[tool_call("mcp__demo__env"), "ok"])
    pid = int(outcome.tool_results[0].content[0].text.split("pid=")[1])
    await host.close()
    assert not demo.pid_alive(pid)
    # Only the HTTP and SSE servers (the test session's fixtures) may remain.
    fixtures = {"--http", "--sse"}
    left = [
        child
        for child in demo.children_of(os.getpid())
        if "demo.py" in _cmdline(child) and not fixtures & set(_cmdline(child).split("\0"))
    ]
    assert not left


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""
