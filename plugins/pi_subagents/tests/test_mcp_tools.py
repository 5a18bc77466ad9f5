"""A definition's ``tools:`` is an allow-list that holds for tools a plugin registers while the
child runs: pi-mcp's tools, from a real MCP server (the SDK's, over stdio)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pi_mcp
import pi_subagents

from pi_host.testing import HostFactory, Request, reply, tool_call

DEMO_SERVER = Path(__file__).parents[2] / "pi_mcp" / "tests" / "servers" / "demo.py"
CHILD = "child task:"

AGENTS = {
    "echo-only": "Read, mcp__demo__echo",  # one MCP tool by name, beside a built-in one
    "whole-server": "mcp__demo",  # Claude Code's name for every tool of a server
    "pattern": "[mcp__demo__a*]",  # a YAML list with a wildcard
}
# The children use the parent's running server (tests/test_mcp_sharing.py); each form gets one.


async def test_tools_allow_list_holds_for_mcp_tools_registered_at_run_time(make_host: HostFactory) -> None:
    seen: dict[str, list[str]] = {}
    echoed: list[str] = []

    def respond(request: Request) -> Any:
        first = request.user_texts[0] if request.user_texts else ""
        if first.startswith(CHILD):
            agent = first.removeprefix(CHILD).strip()
            if not request.tool_results:
                seen[agent] = sorted(request.tool_names)
                if agent == "echo-only":
                    return reply(tool_calls=[tool_call("mcp__demo__echo", text="hello")])
                return reply(f"{agent} done")
            echoed.extend(str(r.content[0].text) for r in request.tool_results)  # type: ignore[union-attr]
            return reply("echo-only done")
        if not request.tool_results:
            return reply(
                tool_calls=[
                    tool_call("task", description=agent, prompt=f"{CHILD} {agent}", subagent_type=agent)
                    for agent in AGENTS
                ]
            )
        return reply("all done")

    settings = {
        "mcp": {
            "servers": {"demo": {"command": sys.executable, "args": [str(DEMO_SERVER), "--name", "demo"]}}
        },
    }
    host = make_host(pi_subagents, pi_mcp, load=["tools_fs"], respond=respond, settings=settings)
    agents = host.agent_dir / "agents"
    agents.mkdir()
    for name, tools in AGENTS.items():
        (agents / f"{name}.md").write_text(
            f"---\nname: {name}\ndescription: The {name} agent.\ntools: {tools}\n---\nWork.\n"
        )
    with anyio.fail_after(120):
        outcome = await host.run("go")
    outcome.assert_ok()
    parent_tools = host.provider.requests[0].tool_names
    assert "mcp__demo__echo" in parent_tools and "mcp__demo__picture" in parent_tools  # no limit
    demo_tools = sorted(name for name in parent_tools if name.startswith("mcp__demo__"))
    assert seen["echo-only"] == ["mcp__demo__echo", "read"]
    assert seen["whole-server"] == demo_tools
    assert seen["pattern"] == ["mcp__demo__add"]
    assert echoed == ["demo says: hello"]  # the allowed tool really ran, on the shared server
    await host.close()
