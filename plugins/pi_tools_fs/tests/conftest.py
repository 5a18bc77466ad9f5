"""Fixtures for the pi-tools-fs tests: call a tool the way the agent loop does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pi_host import AbortSignal, Tool, ToolCallContext, ToolResult


class Caller:
    """Runs a tool like the loop: prepare_arguments, validation, execute with a context."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd

    async def __call__(
        self,
        tool: Tool[Any],
        args: dict[str, Any],
        *,
        cwd: Path | None = None,
        signal: AbortSignal | None = None,
    ) -> ToolResult:
        if tool.prepare_arguments is not None:
            args = tool.prepare_arguments(args)
        params = tool.validate_arguments(args)
        ctx = ToolCallContext(tool_call_id="call-1", signal=signal or AbortSignal(), cwd=str(cwd or self.cwd))
        return await tool.execute(params, ctx)

    async def text(self, tool: Tool[Any], args: dict[str, Any], **kwargs: Any) -> str:
        return text_of(await self(tool, args, **kwargs))

    @staticmethod
    def text_of(result: ToolResult) -> str:
        return text_of(result)


def text_of(result: ToolResult) -> str:
    """The result's text blocks joined by newlines (pi's test helper getTextOutput)."""
    return "\n".join(block.text for block in result.content if block.type == "text")


@pytest.fixture
def call(tmp_path: Path) -> Caller:
    return Caller(tmp_path)
