"""pi-tools-fs: pi's file tools for pi-host (``read``, ``write``, ``edit``, ``grep``, ``find``, ``ls``).

Names, parameters, limits, notices and result texts follow pi, so a model tuned on pi uses
them the same way. The plugin registers the tools through ``pi_register_tools``; the tool
objects are also importable for direct use::

    from pi_tools_fs import read_tool
    result = await read_tool.execute(read_tool.validate_arguments({"path": "README.md"}), ctx)

The ``create_*_tool`` factories build variants (a forced grep/find backend, image resizing off).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pi_host import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_LINES,
    Tool,
    TruncationResult,
    hookimpl,
    truncate_head,
    truncate_line,
    truncate_tail,
)

from ._edit import EditParams, ReplaceEdit, create_edit_tool, prepare_edit_arguments
from ._errors import ToolError
from ._find import FindBackend, FindParams, create_find_tool
from ._grep import GrepBackend, GrepParams, create_grep_tool
from ._ls import LsParams, create_ls_tool
from ._mutation_queue import file_mutation_lock, with_file_mutation_queue
from ._paths import expand_path, resolve_read_path, resolve_to_cwd
from ._read import ReadParams, create_read_tool
from ._truncate import GREP_MAX_LINE_LENGTH
from ._write import WriteParams, create_write_tool

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

read_tool = create_read_tool()
write_tool = create_write_tool()
edit_tool = create_edit_tool()
grep_tool = create_grep_tool()
find_tool = create_find_tool()
ls_tool = create_ls_tool()

TOOLS: tuple[Tool[Any], ...] = (read_tool, write_tool, edit_tool, grep_tool, find_tool, ls_tool)
"""The six tools, in pi's order."""


@hookimpl
def pi_register_tools(register: Callable[[Tool[Any]], object]) -> None:
    """Register ``read``, ``write``, ``edit``, ``grep``, ``find`` and ``ls``."""
    for tool in TOOLS:
        register(tool)
