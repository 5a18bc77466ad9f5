"""Tool middleware: plugins wrap a tool they do not own, in a documented order."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from pi_host import Tool, ToolInvocation, ToolMiddleware, ToolNext, ToolResult, hookimpl
from pi_host.testing import HostFactory, tool_call


class EchoParams(BaseModel):
    text: str


async def echo(params: EchoParams, ctx: Any) -> ToolResult:
    return ToolResult.text(f"echo:{params.text}")


class Tools:
    """Owns the ``echo`` tool (and ``other``, which no middleware names)."""

    @hookimpl
    def pi_register_tools(self, register: Any) -> None:
        register(Tool(name="echo", description="Echo", parameters=EchoParams, execute=echo))
        register(Tool(name="other", description="Other", parameters=EchoParams, execute=echo))


def audit(log: list[str]) -> object:
    """Logs every call around it; wraps every tool."""

    async def wrap(call: ToolInvocation, call_next: ToolNext) -> ToolResult:
        log.append(f"audit in {call.tool_name}({call.params.text})")  # type: ignore[attr-defined]
        result = await call_next()
        log.append(f"audit out {result.content[0].text}")  # type: ignore[union-attr]
        return result

    class Audit:
        @hookimpl
        def pi_register_tool_middleware(self, register: Any) -> None:
            register(ToolMiddleware(name="audit", wrap=wrap))

    return Audit()


def repair(log: list[str]) -> object:
    """Repairs the arguments of ``echo`` only, and marks its result."""

    async def wrap(call: ToolInvocation, call_next: ToolNext) -> ToolResult:
        log.append(f"repair in {call.params.text}")  # type: ignore[attr-defined]
        result = await call_next({"text": call.params.text.strip().upper()})  # type: ignore[attr-defined]
        log.append("repair out")
        return result.model_copy(
            update={"content": [*result.content, *ToolResult.text("(repaired)").content]}
        )

    class Repair:
        @hookimpl(trylast=True)  # innermost: nearest the tool
        def pi_register_tool_middleware(self, register: Any) -> None:
            register(ToolMiddleware(name="repair", wrap=wrap, tools=frozenset({"echo"})))

    return Repair()


async def test_two_middlewares_wrap_one_tool_in_call_order(make_host: HostFactory) -> None:
    log: list[str] = []
    host = make_host(
        Tools(),
        repair(log),
        audit(log),
        replies=[tool_call("echo", text="  hi "), tool_call("other", text="x"), "done"],
    )
    outcome = await host.run("go")
    outcome.assert_ok()
    assert [result.content[0].text for result in outcome.tool_results] == ["echo:HI", "echo:x"]  # type: ignore[union-attr]
    assert outcome.tool_results[0].content[1].text == "(repaired)"  # type: ignore[union-attr]
    # audit (called first) is outermost; repair (trylast) sits next to the tool; "other" only gets audit.
    assert log == [
        "audit in echo(  hi )",
        "repair in   hi ",
        "repair out",
        "audit out echo:HI",
        "audit in other(x)",
        "audit out echo:x",
    ]
    # The name stays with the plugin that registered the tool.
    assert host.host.tool_sources["echo"] == "Tools"


async def test_a_middleware_that_answers_itself_or_fails_is_reported_to_the_model(
    make_host: HostFactory,
) -> None:
    async def deny(call: ToolInvocation, call_next: ToolNext) -> ToolResult:
        if call.params.text == "no":  # type: ignore[attr-defined]
            return ToolResult.text("denied by policy")
        if call.params.text == "boom":  # type: ignore[attr-defined]
            raise ValueError("policy file is broken")
        return await call_next({"text": 3})  # wrong type: the tool's own validation answers

    class Policy:
        @hookimpl
        def pi_register_tool_middleware(self, register: Any) -> None:
            register(ToolMiddleware(name="policy", wrap=deny, tools=frozenset({"echo"})))

    host = make_host(
        Tools(),
        Policy(),
        replies=[
            tool_call("echo", text="no"),
            tool_call("echo", text="boom"),
            tool_call("echo", text="ok"),
            "done",
        ],
    )
    outcome = await host.run("go")
    texts = [result.content[0].text for result in outcome.tool_results]  # type: ignore[union-attr]
    assert texts[0] == "denied by policy"
    assert texts[1] == 'tool middleware "policy" of plugin "Policy" failed: ValueError: policy file is broken'
    # Arguments a middleware passes on are validated; invalid ones are that middleware's fault.
    prefix = 'tool middleware "policy" of plugin "Policy" failed: ToolArgumentsError: '
    assert texts[2].startswith(prefix + 'Validation failed for tool "echo"')
    assert [result.is_error for result in outcome.tool_results] == [False, True, True]


async def test_a_tool_registered_at_runtime_is_wrapped_too(make_host: HostFactory) -> None:
    log: list[str] = []
    host = make_host(Tools(), audit(log), replies=[])
    host.host.add_tool(Tool(name="late", description="Late", parameters=EchoParams, execute=echo), "runtime")
    from pi_host import ToolCallContext
    from pi_host.providers import AbortSignal

    tool = host.host.tools["late"]
    await tool.execute(EchoParams(text="x"), ToolCallContext(tool_call_id="1", signal=AbortSignal()))
    assert log == ["audit in late(x)", "audit out echo:x"]
