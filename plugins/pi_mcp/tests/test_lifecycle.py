"""Lazy and eager start: when the servers start, and that the first prompt waits for them."""

from __future__ import annotations

import logging
from typing import Any

import pi_mcp
import pytest

from pi_host import hookimpl
from pi_host.testing import HostFactory


class Capture:
    manager: Any = None

    @hookimpl(trylast=True)
    def pi_session_start(self, ctx: Any) -> None:
        self.manager = pi_mcp.manager_of(ctx)


async def test_lazy_servers_start_with_the_first_prompt(make_host: HostFactory, demo: Any) -> None:
    capture = Capture()
    host = make_host(pi_mcp, capture, settings={"mcp": {"servers": {"demo": demo.stdio()}}}, replies=["hi"])
    await host.session()
    connection = capture.manager.connections["demo"]
    assert capture.manager.starting is None and connection.state == "stopped" and connection.starts == 0
    await host.close()  # a session that never prompted starts nothing
    assert connection.starts == 0


async def test_eager_servers_start_with_the_session(make_host: HostFactory, demo: Any) -> None:
    capture = Capture()
    settings = {"mcp": {"startup": "eager", "servers": {"demo": demo.stdio()}}}
    host = make_host(pi_mcp, capture, settings=settings, replies=["hi"])
    await host.session()
    starting = capture.manager.starting
    assert starting is not None  # started in the background, before any prompt
    await starting
    connection = capture.manager.connections["demo"]
    assert connection.state == "ready" and connection.starts == 1
    outcome = await host.run("hello")
    assert "mcp__demo__echo" in host.provider.requests[-1].tool_names
    assert connection.starts == 1  # the prompt used the running server
    outcome.assert_ok()
    await host.close()
    assert connection.state == "stopped"


def _calls(server: str, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    steps = [{"name": f"mcp__{server}__{tool}", "arguments": arguments} for tool, arguments in calls]
    return [{"toolCalls": steps}, "done"]


async def test_an_sse_server_with_headers(
    make_host: HostFactory, sse_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEMO_TOKEN", "s3cret")
    server = {"type": "sse", "url": sse_server, "headers": {"X-Token": "Bearer ${DEMO_TOKEN}"}}
    host = make_host(
        pi_mcp,
        settings={"mcp": {"servers": {"legacy": server}}},
        replies=_calls("legacy", ("echo", {"text": "old"}), ("header", {"name": "x-token"})),
    )
    outcome = await host.run("go")
    outcome.assert_ok()
    echo, header = outcome.tool_results
    assert echo.content[0].text == "legacy says: old"
    assert header.content[0].text == "x-token=Bearer s3cret"
    await host.close()


async def test_configured_headers_reach_a_streamable_http_server_expanded(
    make_host: HostFactory, http_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEMO_TOKEN", "s3cret")
    monkeypatch.delenv("DEMO_REGION", raising=False)
    headers = {"Authorization": "Bearer ${DEMO_TOKEN}", "X-Region": "${DEMO_REGION:-eu-west}"}
    host = make_host(
        pi_mcp,
        settings={"mcp": {"servers": {"remote": {"type": "http", "url": http_server, "headers": headers}}}},
        replies=_calls(
            "remote",
            ("header", {"name": "authorization"}),
            ("header", {"name": "x-region"}),
            ("header", {"name": "x-absent"}),
        ),
    )
    outcome = await host.run("go")
    outcome.assert_ok()
    texts = [result.content[0].text for result in outcome.tool_results]
    # What the SDK's server saw on the HTTP request of each call, variables expanded.
    assert texts == ["authorization=Bearer s3cret", "x-region=eu-west", "x-absent=<absent>"]
    await host.close()


async def test_the_sdk_stdio_log_is_filtered_only_while_servers_run(
    make_host: HostFactory, demo: Any, caplog: pytest.LogCaptureFixture
) -> None:
    sdk = logging.getLogger("mcp.client.stdio")
    before = list(sdk.filters)
    capture = Capture()
    host = make_host(pi_mcp, capture, settings={"mcp": {"servers": {"demo": demo.stdio()}}}, replies=["hi"])
    outcome = await host.run("hello")
    outcome.assert_ok()
    assert capture.manager.connections["demo"].state == "ready"
    assert len(sdk.filters) == len(before) + 1
    # Another MCP client's record (no pi-mcp connection in its context) is left alone.
    with caplog.at_level(logging.ERROR, logger="mcp.client.stdio"):
        sdk.error("Failed to parse JSONRPC message from server")
    assert [r.getMessage() for r in caplog.records] == ["Failed to parse JSONRPC message from server"]
    await host.close()
    assert sdk.filters == before  # the logger is as pi-mcp found it once its servers stopped


async def test_pi_guard_rules_name_mcp_tools(make_host: HostFactory, demo: Any) -> None:
    pi_guard = pytest.importorskip("pi_guard")
    settings = {
        "mcp": {"servers": {"demo": demo.stdio()}},
        "permissions": {"allow": ["mcp__demo"], "deny": ["mcp__demo__env"]},
    }
    host = make_host(
        pi_mcp,
        pi_guard,
        settings=settings,
        replies=_calls("demo", ("echo", {"text": "allowed"}), ("env", {})),
    )
    outcome = await host.run("go")
    assert outcome.tool_results[0].content[0].text == "demo says: allowed"  # the server's rule allows
    block = outcome.assert_blocked("mcp__demo__env", plugin="pi_guard")
    assert 'deny rule "mcp__demo__env"' in block.reason
    await host.close()


class Managers:
    """Every session's MCP manager, in order."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    @hookimpl(trylast=True)
    def pi_session_start(self, ctx: Any) -> None:
        self.seen.append(pi_mcp.manager_of(ctx))


async def test_a_new_session_calls_its_own_servers_not_the_stopped_ones(
    make_host: HostFactory, demo: Any
) -> None:
    from pi_host.testing import tool_call

    managers = Managers()
    host = make_host(pi_mcp, managers, settings={"mcp": {"servers": {"demo": demo.stdio()}}})
    (await host.run("one", replies=[tool_call("mcp__demo__echo", text="a"), "ok"])).assert_ok()
    session = await host.session()
    assert not await session.new_session()  # True would mean a plugin cancelled it
    old, new = managers.seen
    assert old.connections["demo"].state == "stopped"
    outcome = await host.run("two", replies=[tool_call("mcp__demo__echo", text="b"), "ok"])
    assert outcome.tool_results[0].content[0].text == "demo says: b"
    # The call went to the new session's server: the old one was not started again.
    assert old.connections["demo"].state == "stopped" and old.connections["demo"].starts == 1
    assert new.connections["demo"].state == "ready"
    await host.close()
