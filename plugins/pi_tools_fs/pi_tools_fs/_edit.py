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
from ._special import open_regular
from ._text import encode_utf8, node_error_code, node_error_message

__all__ = ["edit"]

_REPLACEMENT = "\ufffd"
_FOREIGN_HINT = (
    "The file is not valid UTF-8: read shows its other bytes as \ufffd, which the old text "
    "cannot match. Choose old text that avoids them; the edit keeps them as they are."
)


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _model_text(text: str) -> str:
    """Text from the model with lone surrogates (possible in JSON) as U+FFFD, as Node writes
    them: they must not pass for the file's own undecodable bytes."""
    return encode_utf8(text).decode("utf-8")


def _shown(text: str) -> str:
    """``text`` for display, the file's undecodable bytes as U+FFFD."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


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
        with open_regular(path, shown_path, "edit") as handle:
            data = handle.read()
    except OSError as exc:
        raise ToolError(node_error_message(exc, "read", None)) from None
    # Bytes that are not UTF-8 (a Latin-1 file, a stray byte) decode to lone surrogates and
    # encode back to themselves: the edit changes only the text it replaces. pi decodes them
    # to U+FFFD and so rewrites every one of them.
    raw = data.decode("utf-8", "surrogateescape")
    foreign = not _is_utf8(data)
    edits = [Replacement(_model_text(e.old_text), _model_text(e.new_text)) for e in edits]
    bom, content = strip_bom(raw)
    ending = detect_line_ending(content)
    normalized = normalize_to_lf(content)
    try:
        base, new = apply_edits(normalized, edits, shown_path)
    except EditError as exc:
        if foreign and any(_REPLACEMENT in e.old_text for e in edits):
            raise ToolError(f"{exc} {_FOREIGN_HINT}") from None
        raise ToolError(str(exc)) from None
    try:
        with open(path, "wb") as handle:
            handle.write((bom + restore_line_endings(new, ending)).encode("utf-8", "surrogateescape"))
    except OSError as exc:
        raise ToolError(node_error_message(exc, "open", path)) from None
    if foreign:
        base, new = _shown(base), _shown(new)
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
