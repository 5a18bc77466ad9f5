"""What the user sees: ``/agents`` and the terminal UI's block for a running child."""

from __future__ import annotations

import re
from typing import Any

import pi_subagents
from pi_subagents import agents_report
from pi_subagents._state import STATE
from rich.console import Console

from pi_host.hookspecs import ToolCallView
from pi_host.testing import HostFactory, Request, reply, tool_call


async def test_agents_lists_definitions_skipped_files_and_running_children(make_host: HostFactory) -> None:
    reports: list[str] = []
    host = make_host(pi_subagents, load=["tools_fs"], tools=["task", "read"])

    async def respond(request: Request) -> Any:
        texts = request.user_texts
        if texts and texts[0] == "child task":
            if not request.tool_results:
                return reply(tool_calls=[tool_call("read", path="notes.txt")])
            session = await host.session()
            reports.append(agents_report(session.stash[STATE]))  # while the child runs
            return reply("read it")
        if not request.tool_results:
            return reply(tool_calls=[tool_call("task", description="read notes", prompt="child task")])
        return reply("done")

    host.provider.respond = respond
    agents = host.agent_dir / "agents"
    agents.mkdir()
    (agents / "reader.md").write_text("---\nname: reader\ndescription: Reads.\ntools: Read\n---\nRead.\n")
    (agents / "broken.md").write_text("---\nname: Broken!\ndescription: x\n---\nx\n")
    (host.cwd / "notes.txt").write_text("hello\n")
    (await host.run("go")).assert_ok()
    (running,) = reports
    assert "Running:" in running
    assert "general-purpose: read notes - thinking, turn 2, 1 tool calls" in running

    await host.run("/agents")
    shown = host.ui.messages[-1]
    assert "general-purpose (built in): parent's tools; parent's model" in shown
    assert f"reader ({agents / 'reader.md'}): read; parent's model" in shown
    assert f"skipped {agents / 'broken.md'}:2: name must be" in shown
    assert "No sub-agents running." in shown
    assert "task" in host.host.tool_renderers
    await host.close()


def _view(**overrides: Any) -> ToolCallView:
    values: dict[str, Any] = {
        "tool_call_id": "c1",
        "name": "task",
        "args": {"description": "find the bug", "subagent_type": "explore"},
        "result_text": None,
        "details": {"currentTool": "grep TODO", "turns": 2, "toolCalls": ["read a.py", "grep TODO"]},
        "is_error": False,
        "partial": True,
        "elapsed": 1.0,
        "expanded": False,
    }
    values.update(overrides)
    return ToolCallView(**values)


def _plain(renderable: Any) -> str:
    console = Console(width=80, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_a_running_child_shows_its_current_tool_and_expands_to_every_call() -> None:
    renderer = pi_subagents._plugin
    assert _plain(renderer._render_call(_view())) == "task explore  find the bug\n"
    collapsed = _plain(renderer._render_result(_view()))
    assert collapsed == "▸ grep TODO  turn 2, 2 tool calls\n"
    expanded = _plain(renderer._render_result(_view(expanded=True)))
    assert "  read a.py\n  grep TODO" in expanded
    done = _plain(renderer._render_result(_view(partial=False, result_text="one\ntwo\nthree\nfour")))
    assert done.startswith("one\ntwo\nthree\n")
    assert "2 tool calls, 4 lines (Ctrl+O to expand)" in done


def test_the_screen_draws_a_running_child_as_a_block_with_its_current_tool() -> None:
    from pi_host.messages import TextContent
    from pi_host.modes._interactive._render import RenderOptions, ToolView, ansi_lines, render_tool

    registered: list[Any] = []
    pi_subagents.pi_register_tool_renderers(registered.append)
    (renderer,) = registered
    view = ToolView(tool_call_id="1", name="task", args={"description": "find the bug", "prompt": "..."})
    details = {"currentTool": "grep TODO", "turns": 1, "toolCalls": ["grep TODO"]}
    view.set_result([TextContent(text="general-purpose: grep TODO")], details, is_error=False, partial=True)
    ansi = re.compile(r"\x1b\[[0-9;]*m")
    text = "\n".join(
        ansi.sub("", line) for line in ansi_lines(render_tool(view, RenderOptions(), renderer), 70)
    )
    assert "task general-purpose  find the bug" in text
    assert "▸ grep TODO  turn 1, 1 tool calls" in text
