"""The ``write`` tool: create or overwrite a file, making parent directories as needed."""

from __future__ import annotations

import os

import anyio
from pydantic import Field

from pi_host import Tool, ToolCallContext, ToolResult

from ._errors import ToolError, raise_if_aborted
from ._mutation_queue import file_mutation_lock
from ._params import ToolParams
from ._paths import resolve_to_cwd
from ._text import encode_utf8, js_length, node_error_message

__all__ = ["WriteParams", "create_write_tool"]


class WriteParams(ToolParams):
    """Arguments of ``write``."""

    path: str = Field(description="Path to the file to write (relative or absolute)")
    content: str = Field(description="Content to write to the file")


def _write(path: str, content: str) -> None:
    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as exc:
        raise ToolError(node_error_message(exc, "mkdir", exc.filename or directory)) from None
    try:
        with open(path, "wb") as handle:
            handle.write(encode_utf8(content))
    except OSError as exc:
        raise ToolError(node_error_message(exc, "open", path)) from None


def create_write_tool() -> Tool[WriteParams]:
    """The ``write`` tool (runs inside the file's mutation queue)."""

    async def execute(params: WriteParams, ctx: ToolCallContext) -> ToolResult:
        path = resolve_to_cwd(params.path, ctx.cwd)
        async with file_mutation_lock(path):
            raise_if_aborted(ctx.signal)
            await anyio.to_thread.run_sync(_write, path, params.content)
            raise_if_aborted(ctx.signal)
        # pi reports the string's length (UTF-16 units), not the bytes written.
        return ToolResult.text(f"Successfully wrote {js_length(params.content)} bytes to {params.path}")

    return Tool(
        name="write",
        label="write",
        description=(
            "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. "
            "Automatically creates parent directories."
        ),
        parameters=WriteParams,
        execute=execute,
        prompt_snippet="Create or overwrite files",
        prompt_guidelines=("Use write only for new files or complete rewrites.",),
    )
