"""Sub-agents use their parent's running MCP servers (pi-mcp through ``ctx.parent_stash``):
one server process for a parent and its children, owned by the parent's session.

Real SDK servers over stdio (pi-mcp's ``tests/servers/demo.py``), each start recorded in a file.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pi_mcp
import pi_subagents

from pi_host import TextContent, ToolResultMessage
from pi_host.testing import HostFactory, Request, reply, tool_call

DEMO_SERVER = Path(__file__).parents[2] / "pi_mcp" / "tests" / "servers" / "demo.py"
CHILD = "child task:"


def _settings(record: Path) -> dict[str, Any]:
    args = [str(DEMO_SERVER), "--name", "demo", "--record", str(record)]
    return {"mcp": {"servers": {"demo": {"command": sys.executable, "args": args}}}}


def _starts(record: Path) -> list[int]:
    return [int(line) for line in record.read_text().split()] if record.exists() else []


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purpose
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return True


def _texts(results: list[ToolResultMessage]) -> list[str]:
    return [
        "".join(block.text for block in result.content if isinstance(block, TextContent))
        for result in results
    ]


def _pid_of(env_text: str) -> int:
    return int(env_text.rsplit("pid=", 1)[1])


def _task(name: str, agent: str = "general-purpose") -> Any:
    return tool_call("task", description=name, prompt=f"{CHILD} {name}", subagent_type=agent)


async def test_three_children_use_the_parents_server_and_it_stops_with_the_parent(
    make_host: HostFactory, tmp_path: Path
) -> None:
    record = tmp_path / "starts.txt"
    child_tools: dict[str, list[str]] = {}

    def respond(request: Request) -> Any:
        first = request.user_texts[0] if request.user_texts else ""
        if first.startswith(CHILD):
            name = first.removeprefix(CHILD).strip()
            if not request.tool_results:
                child_tools[name] = sorted(t for t in request.tool_names if t.startswith("mcp"))
                calls = [tool_call("mcp__demo__echo", text=name)]
                if name != "limited":  # its allow-list has echo only
                    calls.append(tool_call("mcp__demo__env"))
                return reply(tool_calls=calls)
            return reply(" | ".join(_texts(request.tool_results)))
        done = len(request.tool_results)
        if done == 0:
            return reply(tool_calls=[tool_call("mcp__demo__env")])  # the parent uses it first
        if done == 1:
            return reply(tool_calls=[_task("first"), _task("second"), _task("limited", "echo-only")])
        return reply("all done")

    host = make_host(pi_subagents, pi_mcp, respond=respond, settings=_settings(record))
    agents = host.agent_dir / "agents"
    agents.mkdir()
    (agents / "echo-only.md").write_text(
        "---\nname: echo-only\ndescription: Echoes.\ntools: mcp__demo__echo\n---\nEcho.\n"
    )
    with anyio.fail_after(120):
        outcome = await host.run("go")
    outcome.assert_ok()

    final = host.provider.requests[-1]
    parent_env, *answers = _texts(final.tool_results)
    (server,) = _starts(record)  # one process for the parent and its three children
    assert _pid_of(parent_env) == server
    first, second, limited = answers
    assert first == f"demo says: first | VALUE= pid={server}"
    assert second == f"demo says: second | VALUE= pid={server}"
    assert limited == "demo says: limited"
    # Each child's tools still follow its definition: the allow-list holds for shared servers.
    assert child_tools["limited"] == ["mcp__demo__echo"]
    assert "mcp__demo__env" in child_tools["first"] and "mcp__read_resource" not in child_tools["first"]
    assert _alive(server)  # the children's ends left the parent's server running
    await host.close()
    assert not _alive(server)


async def test_a_shared_server_that_crashed_is_restarted_by_the_next_session_to_use_it(
    make_host: HostFactory, tmp_path: Path
) -> None:
    record = tmp_path / "starts.txt"

    def respond(request: Request) -> Any:
        first = request.user_texts[0] if request.user_texts else ""
        if first.startswith(CHILD):
            name = first.removeprefix(CHILD).strip()
            if not request.tool_results:
                tool = "mcp__demo__crash" if name == "crasher" else "mcp__demo__env"
                return reply(tool_calls=[tool_call(tool)])
            return reply(_texts(request.tool_results)[0])
        done = len(request.tool_results)
        if done == 0:
            return reply(tool_calls=[_task("crasher")])
        if done == 1:
            return reply(tool_calls=[_task("after")])
        if done == 2:
            return reply(tool_calls=[tool_call("mcp__demo__env")])
        return reply("all done")

    host = make_host(pi_subagents, pi_mcp, respond=respond, settings=_settings(record))
    with anyio.fail_after(120):
        outcome = await host.run("go")
    outcome.assert_ok()
    crashed, after, parent_env = _texts(host.provider.requests[-1].tool_results)
    assert 'MCP server "demo" closed the connection' in crashed
    # The next child's prompt started the server again; the parent then used that process.
    first, second = _starts(record)
    assert _pid_of(after) == second == _pid_of(parent_env) and first != second
    assert not _alive(first) and _alive(second)
    await host.close()
    assert not _alive(second)  # the parent's session owns the restarted process too
