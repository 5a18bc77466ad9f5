"""A tool registered while a run goes on is callable from the run's next turn (pi's registerTool)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from pi_host import Tool, ToolCallContext, ToolResult, hookimpl
from pi_host.testing import HostFactory, tool_call


class NoParams(BaseModel):
    pass


async def _late(params: NoParams, ctx: ToolCallContext) -> ToolResult:
    return ToolResult.text("late tool ran")


LATE = Tool(name="late", description="Registered mid-run.", parameters=NoParams, execute=_late)


async def _loader(params: NoParams, ctx: ToolCallContext) -> ToolResult:
    ctx.session.register_tool(LATE)
    return ToolResult.text("loaded")


class Loader:
    @hookimpl
    def pi_register_tools(self, register: Any) -> None:
        register(Tool(name="loader", description="Registers a tool.", parameters=NoParams, execute=_loader))


async def test_a_tool_registered_mid_run_is_called_in_the_next_turn(make_host: HostFactory) -> None:
    host = make_host(Loader(), replies=[tool_call("loader"), tool_call("late"), "done"])
    outcome = await host.run("go")
    outcome.assert_ok()
    _, late = outcome.tool_results
    assert late.content[0].text == "late tool ran" and not late.is_error
    assert "late" in host.provider.requests[1].tool_names


async def test_a_tool_outside_the_allow_list_stays_inactive_however_it_comes(make_host: HostFactory) -> None:
    host = make_host(
        Loader(),
        replies=[tool_call("loader"), tool_call("late"), "done"],
        session_options={"tool_allowlist": ["load*"]},
    )
    outcome = await host.run("go")
    _, late = outcome.tool_results
    assert late.is_error  # registered, but the model cannot call it
    assert host.provider.requests[1].tool_names == ["loader"]
    session = await host.session()
    session.set_active_tools(["loader", "late"])
    assert [tool.name for tool in session.agent.state.tools] == ["loader"]


NEWER = Tool(name="late", description="The late tool, replaced.", parameters=NoParams, execute=_late)


async def _unloader(params: NoParams, ctx: ToolCallContext) -> ToolResult:
    removed = ctx.session.unregister_tool("late", reason="the late tool was withdrawn")
    kept = ctx.session.unregister_tool("loader")  # a startup tool is not the plugin's to remove
    return ToolResult.text(f"removed={removed} kept={not kept}")


class Unloader:
    @hookimpl
    def pi_register_tools(self, register: Any) -> None:
        register(Tool(name="unloader", description="Removes a tool.", parameters=NoParams, execute=_unloader))


async def test_an_unregistered_tool_is_gone_from_the_next_turn_and_its_call_says_why(
    make_host: HostFactory,
) -> None:
    host = make_host(
        Loader(),
        Unloader(),
        replies=[tool_call("loader"), tool_call("late"), tool_call("unloader"), tool_call("late"), "done"],
    )
    outcome = await host.run("go")
    outcome.assert_ok()
    _, late, unloaded, gone = outcome.tool_results
    assert not late.is_error and unloaded.content[0].text == "removed=True kept=True"
    assert "late" in host.provider.requests[2].tool_names
    assert "late" not in host.provider.requests[3].tool_names
    assert "loader" in host.provider.requests[3].tool_names
    assert gone.is_error and gone.content[0].text == "Tool late not found: the late tool was withdrawn"
    session = await host.session()
    assert "late" not in session.host.tools and "late" not in session.active_tool_names

    session.register_tool(NEWER)  # a new definition under the name: active again, no reason kept
    assert session.host.tools["late"].description == "The late tool, replaced."
    assert "late" in session.active_tool_names and session.removed_tool_reason("late") is None
    assert not session.unregister_tool("nothing")
