"""The ``write`` tool: create or overwrite a file, making parent directories as needed."""

from __future__ import annotations

import os

import anyio

from pi_host import ToolCallContext, ToolResult

from ._definitions import WriteParams
from ._errors import ToolError, raise_if_aborted
from ._mutation_queue import file_mutation_lock
from ._paths import resolve_to_cwd
from ._special import refuse_special
from ._text import encode_utf8, js_length, node_error_message

__all__ = ["write"]


def _write(path: str, content: str) -> None:
    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as exc:
        raise ToolError(node_error_message(exc, "mkdir", exc.filename or directory)) from None
    try:
        refuse_special(path, os.stat(path).st_mode, "write")
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise ToolError(node_error_message(exc, "open", path)) from None
    try:
        # O_NONBLOCK: a FIFO that appeared after the check fails to open instead of blocking.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NONBLOCK", 0), 0o666)
        with os.fdopen(fd, "wb") as handle:
            handle.write(encode_utf8(content))
    except OSError as exc:
        raise ToolError(node_error_message(exc, "open", path)) from None


async def write(params: WriteParams, ctx: ToolCallContext) -> ToolResult:
    """Run ``write`` (see :func:`~pi_tools_fs.create_write_tool`)."""
    path = resolve_to_cwd(params.path, ctx.cwd)
    async with file_mutation_lock(path):
        raise_if_aborted(ctx.signal)
        await anyio.to_thread.run_sync(_write, path, params.content)
        raise_if_aborted(ctx.signal)
    # pi reports the string's length (UTF-16 units), not the bytes written.
    return ToolResult.text(f"Successfully wrote {js_length(params.content)} bytes to {params.path}")
