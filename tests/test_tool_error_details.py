"""A tool that fails with ``ToolError`` keeps its details; tool results' recorded usage counts
in the session's totals (``message_usage``), as a sub-agent's spending does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from pi_host import (
    Tool,
    ToolCallContext,
    ToolError,
    ToolResult,
    ToolResultMessage,
    Usage,
    hookimpl,
    message_usage,
)
from pi_host.messages import AssistantMessage
from pi_host.testing import HostFactory, tool_call

SPENT = {"input": 5, "output": 2, "totalTokens": 7, "cost": {"total": 0.5}}


class _Params(BaseModel):
    fail: bool = False


async def _spend(params: _Params, ctx: ToolCallContext) -> ToolResult:
    if params.fail:
        raise ToolError("it went wrong", details={"usage": SPENT})
    return ToolResult.text("fine", details={"usage": SPENT})


class _Plugin:
    @hookimpl
    def pi_register_tools(self, register: Callable[[Tool[Any]], None]) -> None:
        register(Tool(name="spend", description="Spend.", parameters=_Params, execute=_spend))


async def test_tool_error_keeps_its_details_and_usage_counts(make_host: HostFactory) -> None:
    host = make_host(
        _Plugin(), replies=[tool_call("spend"), tool_call("spend", fail=True), "done"], tools=["spend"]
    )
    outcome = await host.run("go")
    fine, failed = outcome.tool_results
    assert not fine.is_error and failed.is_error
    assert failed.details == {"usage": SPENT}
    assert outcome.result_text(failed.tool_call_id) == "it went wrong"
    counted = [message_usage(m) for m in outcome.messages]
    assert [u.cost.total for u in counted if u is not None and u.cost.total] == [0.5, 0.5]
    await host.close()


def test_message_usage_reads_replies_and_recorded_tool_usage_only() -> None:
    reply = AssistantMessage(usage=Usage(input=3), api="x", provider="y", model="z", stop_reason="stop")
    assert message_usage(reply) == reply.usage
    plain = ToolResultMessage(tool_call_id="1", tool_name="read", details={"usage": "lots"})
    assert message_usage(plain) is None
    assert message_usage(ToolResultMessage(tool_call_id="1", tool_name="read")) is None
