"""pi-tools-fs: pi's file tools for pi-host (``read``, ``write``, ``edit``, ``grep``, ``find``, ``ls``).

Names, parameters, limits, notices and result texts follow pi, so a model tuned on pi uses
them the same way. The plugin registers the tools through ``pi_register_tools``; the tool
objects are also importable for direct use::

    from pi_tools_fs import read_tool
    result = await read_tool.execute(read_tool.validate_arguments({"path": "README.md"}), ctx)

The ``create_*_tool`` factories build variants (a forced grep/find backend, image resizing off).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pi_host import hookimpl

if TYPE_CHECKING:
    from pi_host import (
        DEFAULT_MAX_BYTES,
        DEFAULT_MAX_LINES,
        Tool,
        TruncationResult,
        truncate_head,
        truncate_line,
        truncate_tail,
    )

    from ._definitions import (
        EditParams,
        FindBackend,
        FindParams,
        GrepBackend,
        GrepParams,
        LsParams,
        ReadParams,
        ReplaceEdit,
        WriteParams,
        create_edit_tool,
        create_find_tool,
        create_grep_tool,
        create_ls_tool,
        create_read_tool,
        create_write_tool,
        prepare_edit_arguments,
    )
    from ._errors import ToolError
    from ._mutation_queue import file_mutation_lock, with_file_mutation_queue
    from ._paths import expand_path, resolve_read_path, resolve_to_cwd
    from ._truncate import GREP_MAX_LINE_LENGTH

    read_tool: Tool[ReadParams]
    write_tool: Tool[WriteParams]
    edit_tool: Tool[EditParams]
    grep_tool: Tool[GrepParams]
    find_tool: Tool[FindParams]
    ls_tool: Tool[LsParams]
    TOOLS: tuple[Tool[Any], ...]
    """The six tools, in pi's order."""

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LINES",
    "GREP_MAX_LINE_LENGTH",
    "TOOLS",
    "EditParams",
    "FindBackend",
    "FindParams",
    "GrepBackend",
    "GrepParams",
    "LsParams",
    "ReadParams",
    "ReplaceEdit",
    "ToolError",
    "TruncationResult",
    "WriteParams",
    "create_edit_tool",
    "create_find_tool",
    "create_grep_tool",
    "create_ls_tool",
    "create_read_tool",
    "create_write_tool",
    "edit_tool",
    "expand_path",
    "file_mutation_lock",
    "find_tool",
    "grep_tool",
    "ls_tool",
    "pi_register_tools",
    "prepare_edit_arguments",
    "read_tool",
    "resolve_read_path",
    "resolve_to_cwd",
    "truncate_head",
    "truncate_line",
    "truncate_tail",
    "with_file_mutation_queue",
    "write_tool",
]

# Everything is imported on first access (PEP 562): loading the plugin, or reading its flags
# for ``--help``, must not import the tools' implementations (the file walker, the glob
# compiler, the diff …); each tool imports its own on its first call.
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(
        [
            "DEFAULT_MAX_BYTES",
            "DEFAULT_MAX_LINES",
            "TruncationResult",
            "truncate_head",
            "truncate_line",
            "truncate_tail",
        ],
        "pi_host",
    ),
    **dict.fromkeys(
        [
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
            "prepare_edit_arguments",
        ],
        f"{__name__}._definitions",
    ),
    "ToolError": f"{__name__}._errors",
    "file_mutation_lock": f"{__name__}._mutation_queue",
    "with_file_mutation_queue": f"{__name__}._mutation_queue",
    "expand_path": f"{__name__}._paths",
    "resolve_read_path": f"{__name__}._paths",
    "resolve_to_cwd": f"{__name__}._paths",
    "GREP_MAX_LINE_LENGTH": f"{__name__}._truncate",
}
# The default tool objects, by their index in ``TOOLS``.
_TOOL_NAMES = ("read_tool", "write_tool", "edit_tool", "grep_tool", "find_tool", "ls_tool")


def _default_tools() -> tuple[Tool[Any], ...]:
    from ._definitions import default_tools

    return default_tools()


def __getattr__(name: str) -> Any:
    if name == "TOOLS":
        value: Any = _default_tools()
    elif name in _TOOL_NAMES:
        value = _default_tools()[_TOOL_NAMES.index(name)]
    elif name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


@hookimpl
def pi_register_tools(register: Callable[[Tool[Any]], object]) -> None:
    """Register ``read``, ``write``, ``edit``, ``grep``, ``find`` and ``ls``."""
    for tool in _default_tools():
        register(tool)
