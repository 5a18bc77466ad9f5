"""The ``ls`` tool: one directory's entries, alphabetical, ``/`` after directories."""

from __future__ import annotations

import os
import stat

import anyio
from pydantic import Field

from pi_host import DEFAULT_MAX_BYTES, Tool, ToolCallContext, ToolResult

from ._collate import collation_key
from ._errors import ToolError, raise_if_aborted
from ._params import ToolParams
from ._paths import resolve_to_cwd
from ._text import int_argument, node_error_message
from ._truncate import capped_listing

__all__ = ["LsParams", "create_ls_tool"]

DEFAULT_LIMIT = 500

_DESCRIPTION = (
    "List directory contents. Returns entries sorted alphabetically, with '/' suffix for directories. "
    f"Includes dotfiles. Output is truncated to {DEFAULT_LIMIT} entries or {DEFAULT_MAX_BYTES // 1024}KB "
    "(whichever is hit first)."
)


class LsParams(ToolParams):
    """Arguments of ``ls``."""

    path: str | None = Field(default=None, description="Directory to list (default: current directory)")
    limit: float | None = Field(
        default=None, description="Maximum number of entries to return (default: 500)"
    )


def _list(directory: str, limit: int) -> tuple[list[str], bool]:
    if not os.path.exists(directory):
        raise ToolError(f"Path not found: {directory}")
    if not stat.S_ISDIR(os.stat(directory).st_mode):
        raise ToolError(f"Not a directory: {directory}")
    try:
        names = os.listdir(directory)
    except OSError as exc:
        raise ToolError(f"Cannot read directory: {node_error_message(exc, 'scandir', directory)}") from None
    names.sort(key=collation_key)
    entries: list[str] = []
    for name in names:
        if len(entries) >= limit:
            return entries, True
        try:
            is_dir = stat.S_ISDIR(os.stat(os.path.join(directory, name)).st_mode)
        except OSError:
            continue  # a dangling link or an entry that vanished: pi skips it too
        entries.append(name + "/" if is_dir else name)
    return entries, False


def create_ls_tool() -> Tool[LsParams]:
    """The ``ls`` tool."""

    async def execute(params: LsParams, ctx: ToolCallContext) -> ToolResult:
        raise_if_aborted(ctx.signal)
        directory = resolve_to_cwd(params.path or ".", ctx.cwd)
        limit = int_argument(params.limit, DEFAULT_LIMIT)
        entries, limit_reached = await anyio.to_thread.run_sync(_list, directory, limit)
        raise_if_aborted(ctx.signal)
        if not entries:
            return ToolResult.text("(empty directory)")
        hint = f"{limit} entries limit reached. Use limit={limit * 2} for more"
        return capped_listing(entries, (hint, "entryLimitReached", limit) if limit_reached else None)

    return Tool(
        name="ls",
        label="ls",
        description=_DESCRIPTION,
        parameters=LsParams,
        execute=execute,
        prompt_snippet="List directory contents",
    )
