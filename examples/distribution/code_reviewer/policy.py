"""The review policy: only read-only tools run, whatever the command line enables.

``Distribution.tools`` makes the read-only tools the default; this policy also holds when a
user enables more with ``--tools write,edit``: every other tool call is blocked, and the
model reads why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pi_host import ToolCallBlock, hookimpl

from . import READ_ONLY_TOOLS

__all__ = ["pi_tool_call"]


@hookimpl(trylast=True)
def pi_tool_call(tool_name: str, input: Mapping[str, Any]) -> ToolCallBlock | None:
    if tool_name in READ_ONLY_TOOLS:
        return None
    return ToolCallBlock(
        reason=f"code-reviewer is read-only: the {tool_name} tool is not allowed. "
        "Report the change as a finding instead."
    )
