"""The ``edit`` tool: targeted exact-text replacements in one file."""

from __future__ import annotations

import os
from typing import Any

import anyio

from pi_host import ToolCallContext, ToolResult

from ._definitions import EditParams
from ._diff import display_diff, unified_patch
from ._edit_apply import (
    EditError,
    Replacement,
    apply_edits,
    detect_line_ending,
    normalize_to_lf,
    restore_line_endings,
    strip_bom,
)
from ._errors import ToolError, raise_if_aborted
from ._mutation_queue import file_mutation_lock
from ._paths import resolve_to_cwd
from ._text import encode_utf8, node_error_code, node_error_message

__all__ = ["edit"]


def _edit(path: str, shown_path: str, edits: list[Replacement]) -> tuple[str, dict[str, Any]]:
    try:
        os.stat(path)
        if not os.access(path, os.R_OK | os.W_OK):
            raise PermissionError(13, "Permission denied", path)
    except OSError as exc:
        code = node_error_code(exc)
        reason = f"Error code: {code}" if code else f"Error: {exc}"
        raise ToolError(f"Could not edit file: {shown_path}. {reason}.") from None
    try:
        with open(path, "rb") as handle:
            raw = handle.read().decode("utf-8", "replace")
    except OSError as exc:
        raise ToolError(node_error_message(exc, "read", None)) from None
    bom, content = strip_bom(raw)
    ending = detect_line_ending(content)
    normalized = normalize_to_lf(content)
    try:
        base, new = apply_edits(normalized, edits, shown_path)
    except EditError as exc:
        raise ToolError(str(exc)) from None
    try:
        with open(path, "wb") as handle:
            handle.write(encode_utf8(bom + restore_line_endings(new, ending)))
    except OSError as exc:
        raise ToolError(node_error_message(exc, "open", path)) from None
    diff, first_changed = display_diff(base, new)
    details: dict[str, Any] = {"diff": diff, "patch": unified_patch(shown_path, base, new)}
    if first_changed is not None:
        details["firstChangedLine"] = first_changed
    return f"Successfully replaced {len(edits)} block(s) in {shown_path}.", details


async def edit(params: EditParams, ctx: ToolCallContext) -> ToolResult:
    """Run ``edit`` (see :func:`~pi_tools_fs.create_edit_tool`)."""
    if not params.edits:
        raise ToolError("Edit tool input is invalid. edits must contain at least one replacement.")
    edits = [Replacement(edit.old_text, edit.new_text) for edit in params.edits]
    path = resolve_to_cwd(params.path, ctx.cwd)
    # The lock is held until the write has settled, even on abort, so a queued edit never
    # reads a half-written file.
    async with file_mutation_lock(path):
        raise_if_aborted(ctx.signal)
        text, details = await anyio.to_thread.run_sync(_edit, path, params.path, edits)
        raise_if_aborted(ctx.signal)
    return ToolResult.text(text, details=details)
