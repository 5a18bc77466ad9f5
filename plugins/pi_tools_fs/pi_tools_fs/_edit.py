"""The ``edit`` tool: targeted exact-text replacements in one file."""

from __future__ import annotations

import json
import os
from typing import Any

import anyio
from pydantic import ConfigDict, Field

from pi_host import Tool, ToolCallContext, ToolResult

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
from ._params import ToolParams
from ._paths import resolve_to_cwd
from ._text import encode_utf8, node_error_code, node_error_message

__all__ = ["EditParams", "ReplaceEdit", "create_edit_tool", "prepare_edit_arguments"]


class ReplaceEdit(ToolParams):
    """One replacement of ``edit``."""

    model_config = ConfigDict(extra="forbid")

    old_text: str = Field(
        description=(
            "Exact text for one targeted replacement. It must be unique in the original file and must "
            "not overlap with any other edits[].oldText in the same call."
        )
    )
    new_text: str = Field(description="Replacement text for this targeted edit.")


class EditParams(ToolParams):
    """Arguments of ``edit``."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="Path to the file to edit (relative or absolute)")
    edits: list[ReplaceEdit] = Field(
        description=(
            "One or more targeted replacements. Each edit is matched against the original file, not "
            "incrementally. Do not include overlapping or nested edits. If two changes touch the same "
            "block or nearby lines, merge them into one edit instead."
        )
    )


def prepare_edit_arguments(raw: dict[str, Any]) -> dict[str, Any]:
    """Fold the argument shapes models still send into ``{path, edits}``.

    ``edits`` given as a JSON string is parsed; a top-level ``oldText``/``newText`` pair (the
    single-edit form of older pi versions) is appended to ``edits``.
    """
    args = dict(raw)
    if isinstance(args.get("edits"), str):
        try:
            parsed = json.loads(args["edits"])
        except ValueError:
            parsed = None
        if isinstance(parsed, list):
            args["edits"] = parsed
    old_text, new_text = args.get("oldText"), args.get("newText")
    if not isinstance(old_text, str) or not isinstance(new_text, str):
        return args
    edits = list(args["edits"]) if isinstance(args.get("edits"), list) else []
    edits.append({"oldText": old_text, "newText": new_text})
    del args["oldText"], args["newText"]
    args["edits"] = edits
    return args


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


def create_edit_tool() -> Tool[EditParams]:
    """The ``edit`` tool (runs inside the file's mutation queue).

    Details carry ``diff`` (pi's numbered display diff), ``patch`` (a unified patch of the
    change) and ``firstChangedLine``.
    """

    async def execute(params: EditParams, ctx: ToolCallContext) -> ToolResult:
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

    return Tool(
        name="edit",
        label="edit",
        description=(
            "Edit a single file using exact text replacement. Every edits[].oldText must match a unique, "
            "non-overlapping region of the original file. If two changes affect the same block or nearby "
            "lines, merge them into one edit instead of emitting overlapping edits. Do not include large "
            "unchanged regions just to connect distant changes."
        ),
        parameters=EditParams,
        execute=execute,
        prompt_snippet=(
            "Make precise file edits with exact text replacement, "
            "including multiple disjoint edits in one call"
        ),
        prompt_guidelines=(
            "Use edit for precise changes (edits[].oldText must match exactly)",
            "When changing multiple separate locations in one file, use one edit call with multiple entries "
            "in edits[] instead of multiple edit calls",
            "Each edits[].oldText is matched against the original file, not after earlier edits are applied. "
            "Do not emit overlapping or nested edits. Merge nearby changes into one edit.",
            "Keep edits[].oldText as small as possible while still being unique in the file. Do not pad with "
            "large unchanged regions.",
        ),
        prepare_arguments=prepare_edit_arguments,
    )
