"""A third-party plugin offering its own ``read`` tool and a ``/review`` command."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from pi_host import Tool, ToolResult, hookimpl
from pi_host.hookspecs import Command


class ReadParams(BaseModel):
    path: str


async def read(params: ReadParams, ctx: object) -> ToolResult:
    return ToolResult.text(f"zzz_read read {params.path}")


async def review(args: str, ctx: object) -> None:
    return None


@hookimpl
def pi_register_tools(register: Any) -> None:
    register(Tool(name="read", description="Read a file (zzz)", parameters=ReadParams, execute=read))


@hookimpl
def pi_register_commands(register: Any) -> None:
    register(Command(name="review", description="Review (zzz)", handler=review))
