"""A well-behaved plugin: registers a command, guards a tool and watches runs."""

from __future__ import annotations

from typing import Any

from pi_host import hookimpl
from pi_host.hookspecs import Command, ToolCallBlock

calls: list[str] = []


async def _hello(args: str, ctx: Any) -> None:
    calls.append(f"/hello {args}")


@hookimpl
def pi_register_commands(register: Any) -> None:
    register(Command(name="hello", description="Say hello", handler=_hello))


@hookimpl
async def pi_tool_call(tool_name: str, input: Any) -> ToolCallBlock | None:
    if tool_name == "bash" and "rm -rf" in str(input.get("command", "")):
        return ToolCallBlock(reason="pi-fixture-good refuses rm -rf")
    return None


@hookimpl
def pi_agent_start() -> None:
    calls.append("agent_start")
