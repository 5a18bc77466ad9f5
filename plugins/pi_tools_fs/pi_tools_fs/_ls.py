"""The ``ls`` tool: one directory's entries, alphabetical, ``/`` after directories."""

from __future__ import annotations

import os
import stat

import anyio

from pi_host import ToolCallContext, ToolResult

from ._collate import collation_key
from ._definitions import LS_DEFAULT_LIMIT, LsParams
from ._errors import ToolError, raise_if_aborted
from ._paths import resolve_to_cwd
from ._text import int_argument, node_error_message
from ._truncate import capped_listing

__all__ = ["ls"]


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


async def ls(params: LsParams, ctx: ToolCallContext) -> ToolResult:
    """Run ``ls`` (see :func:`~pi_tools_fs.create_ls_tool`)."""
    raise_if_aborted(ctx.signal)
    directory = resolve_to_cwd(params.path or ".", ctx.cwd)
    limit = int_argument(params.limit, LS_DEFAULT_LIMIT)
    entries, limit_reached = await anyio.to_thread.run_sync(_list, directory, limit)
    raise_if_aborted(ctx.signal)
    if not entries:
        return ToolResult.text("(empty directory)")
    hint = f"{limit} entries limit reached. Use limit={limit * 2} for more"
    return capped_listing(entries, (hint, "entryLimitReached", limit) if limit_reached else None)
