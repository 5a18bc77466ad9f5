"""A server's tool list is followed through the session: after a restart and on list_changed.

The server (tests/servers/shifting.py, the SDK's low-level ``Server`` over stdio) reads its
tools from a JSON file on every listing, so a test changes what the server offers by
rewriting the file, then makes the server list again: a crash and the next use's restart, or
its ``notifications/tools/list_changed``. The model's next request must carry the new list:
new tools callable, removed ones gone (a call says which server dropped them), changed
schemas and descriptions as the server now has them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pi_mcp

from pi_host import hookimpl
from pi_host.testing import HostFactory, RecordingUI, tool_call

SHIFTING = Path(__file__).parent / "servers" / "shifting.py"

BEFORE = {
    "old": {"description": "The tool the server drops.", "properties": {}},
    "keep": {"description": "Version one.", "properties": {"a": {"type": "string"}}},
}
AFTER = {
    "keep": {
        "description": "Version two.",
        "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
    },
    "new": {"description": "The tool the server adds.", "properties": {"x": {"type": "string"}}},
}


class Capture:
    manager: Any = None

    @hookimpl(trylast=True)
    def pi_session_start(self, ctx: Any) -> None:
        self.manager = pi_mcp.manager_of(ctx)


class Tools:
    """The JSON file the server's tools come from."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.write(BEFORE)

    def write(self, tools: dict[str, Any]) -> None:
        self.path.write_text(json.dumps(tools))


def build(make_host: HostFactory, tools: Tools, *args: str, **mcp: Any) -> tuple[Any, Capture, RecordingUI]:
    capture, ui = Capture(), RecordingUI()
    server = {"command": sys.executable, "args": [str(SHIFTING), str(tools.path), *args]}
    settings = {"mcp": {"servers": {"shift": server}, **mcp}}
    host = make_host(pi_mcp, capture, settings=settings, ui=ui, session_options={"mode": "tui"})
    return host, capture, ui


def spec(request: Any, name: str) -> Any:
    return next(s for s in request.context.tools if s.name == name)


def gone(name: str) -> str:
    return (
        f'Tool mcp__shift__{name} not found: MCP server "shift" no longer offers the tool "{name}" '
        "(its tool list changed: it was restarted, or announced a change)"
    )


async def test_after_a_restart_the_next_request_carries_the_new_tool_list(
    make_host: HostFactory, tmp_path: Path
) -> None:
    tools = Tools(tmp_path / "tools.json")
    host, capture, _ = build(make_host, tools)
    (await host.run("hello", replies=["hi"])).assert_ok()
    first = host.provider.requests[-1]
    assert {"mcp__shift__old", "mcp__shift__keep"} <= set(first.tool_names)
    assert spec(first, "mcp__shift__keep").description == "Version one."

    tools.write(AFTER)
    crashed = await host.run("crash", replies=[tool_call("mcp__shift__crash"), "ok"])
    assert "restarted on next use" in crashed.tool_results[0].content[0].text
    connection = capture.manager.connections["shift"]
    assert connection.state == "failed" and connection.starts == 1

    outcome = await host.run(
        "again",
        replies=[tool_call("mcp__shift__new", x="1"), tool_call("mcp__shift__old"), "done"],
    )
    assert connection.starts == 2  # the prompt restarted it and listed its tools again
    request = host.provider.requests[-3]
    assert "mcp__shift__new" in request.tool_names and "mcp__shift__old" not in request.tool_names
    keep = spec(request, "mcp__shift__keep")
    assert keep.description == "Version two." and set(keep.parameters["properties"]) == {"a", "b"}
    added, removed = outcome.tool_results
    assert not added.is_error and added.content[0].text == 'new got {"x": "1"}'
    assert removed.is_error and removed.content[0].text == gone("old")
    assert "mcp__shift__old" not in (await host.session()).host.tools
    await host.close()


async def test_a_call_that_restarts_the_server_finds_its_tool_gone_and_the_next_turn_updated(
    make_host: HostFactory, tmp_path: Path
) -> None:
    tools = Tools(tmp_path / "tools.json")
    host, capture, _ = build(make_host, tools)

    def change_then_crash(request: Any) -> Any:
        tools.write(AFTER)
        return tool_call("mcp__shift__crash")

    outcome = await host.run(
        "go",
        replies=[
            change_then_crash,
            tool_call("mcp__shift__old"),  # the model still has it: this call restarts the server
            tool_call("mcp__shift__new", x="2"),
            "done",
        ],
    )
    outcome.assert_ok()
    _, stale, added = outcome.tool_results
    assert stale.is_error and stale.content[0].text == (
        'MCP server "shift" no longer offers the tool "old": its tool list changed (it was '
        "restarted, or announced a change), and the tool is gone from your tools"
    )
    assert capture.manager.connections["shift"].starts == 2
    assert "mcp__shift__old" in host.provider.requests[1].tool_names
    after = host.provider.requests[2]
    assert "mcp__shift__old" not in after.tool_names and "mcp__shift__new" in after.tool_names
    assert spec(after, "mcp__shift__keep").description == "Version two."
    assert added.content[0].text == 'new got {"x": "2"}'
    await host.close()


async def test_a_list_changed_notification_updates_the_next_request(
    make_host: HostFactory, tmp_path: Path
) -> None:
    tools = Tools(tmp_path / "tools.json")
    host, capture, _ = build(make_host, tools, "--list-changed")

    def change_then_announce(request: Any) -> Any:
        tools.write(AFTER)
        return tool_call("mcp__shift__announce")

    outcome = await host.run(
        "go",
        replies=[
            change_then_announce,
            tool_call("mcp__shift__new", x="3"),
            tool_call("mcp__shift__old"),
            "ok",
        ],
    )
    connection = capture.manager.connections["shift"]
    assert connection.announces_changes and connection.starts == 1  # listed again, not restarted
    announced, added, removed = outcome.tool_results
    assert announced.content[0].text == "announced"
    after = host.provider.requests[1]
    assert "mcp__shift__new" in after.tool_names and "mcp__shift__old" not in after.tool_names
    assert spec(after, "mcp__shift__keep").parameters["properties"]["b"] == {"type": "integer"}
    assert added.content[0].text == 'new got {"x": "3"}'
    assert removed.is_error and removed.content[0].text == gone("old")
    await host.close()


async def test_in_search_mode_loaded_tools_follow_the_list_and_the_search_finds_the_new_ones(
    make_host: HostFactory, tmp_path: Path
) -> None:
    tools = Tools(tmp_path / "tools.json")
    host, _, ui = build(make_host, tools, toolSearchThreshold=0)
    outcome = await host.run(
        "load",
        replies=[tool_call("mcp_tool_search", query="mcp__shift__*", limit=10), "loaded"],
    )
    outcome.assert_ok()
    assert {"mcp__shift__old", "mcp__shift__keep"} <= set(outcome.tool_results[0].details["loaded"])
    assert "mcp__shift__new" not in outcome.tool_results[0].details["loaded"]

    tools.write(AFTER)
    await host.run("/mcp restart shift")
    assert "shift (stdio): ready" in ui.messages[-1]
    outcome = await host.run(
        "again",
        replies=[
            tool_call("mcp__shift__old"),
            tool_call("mcp_tool_search", query="adds"),
            tool_call("mcp__shift__new", x="4"),
            "done",
        ],
    )
    request = host.provider.requests[-4]
    assert "mcp__shift__old" not in request.tool_names and "mcp__shift__new" not in request.tool_names
    assert spec(request, "mcp__shift__keep").description == "Version two."  # loaded, replaced
    removed, found, added = outcome.tool_results
    assert removed.is_error and removed.content[0].text == gone("old")
    assert found.details["loaded"][0] == "mcp__shift__new"
    assert "mcp__shift__new" in host.provider.requests[-2].tool_names
    assert added.content[0].text == 'new got {"x": "4"}'
    await host.close()


async def test_a_changed_tool_the_user_turned_off_stays_off(make_host: HostFactory, tmp_path: Path) -> None:
    tools = Tools(tmp_path / "tools.json")
    host, _, _ = build(make_host, tools)
    (await host.run("hello", replies=["hi"])).assert_ok()
    session = await host.session()
    session.set_active_tools([name for name in session.active_tool_names if name != "mcp__shift__keep"])

    tools.write(AFTER)
    await host.run("/mcp restart shift")
    assert session.host.tools["mcp__shift__keep"].description == "Version two."  # replaced,
    assert "mcp__shift__keep" not in session.active_tool_names  # and still off
    assert "mcp__shift__new" in session.active_tool_names
    (await host.run("again", replies=["ok"])).assert_ok()
    assert "mcp__shift__keep" not in host.provider.requests[-1].tool_names
    await host.close()


async def test_a_change_announced_over_streamable_http_adds_the_tool(
    make_host: HostFactory, growing_http_server: str
) -> None:
    capture = Capture()
    settings = {"mcp": {"servers": {"remote": {"type": "http", "url": growing_http_server}}}}
    host = make_host(pi_mcp, capture, settings=settings)
    outcome = await host.run(
        "grow", replies=[tool_call("mcp__remote__grow"), tool_call("mcp__remote__grown"), "ok"]
    )
    outcome.assert_ok()
    assert "mcp__remote__grown" not in host.provider.requests[0].tool_names
    assert "mcp__remote__grown" in host.provider.requests[1].tool_names
    grew, grown = outcome.tool_results
    assert grew.content[0].text == "grew" and grown.content[0].text == "growing grew"
    assert capture.manager.connections["remote"].starts == 1
    await host.close()
