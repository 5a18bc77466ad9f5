"""The tools' own limits, and the capped output of ``grep``, ``find`` and ``ls``.

The truncation functions themselves are pi_host's (``pi_host.truncate_head`` …).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias

from pi_host import DEFAULT_MAX_BYTES, ToolResult

__all__ = ["GREP_MAX_LINE_LENGTH", "NO_LINE_LIMIT", "Notice", "capped_listing"]

GREP_MAX_LINE_LENGTH = 500
NO_LINE_LIMIT = 2**53 - 1
"""JavaScript's ``Number.MAX_SAFE_INTEGER``, pi's line limit where only bytes should count."""

Notice: TypeAlias = tuple[str, str, object]
"""A notice for the model, and the ``details`` key and value that go with it."""


def capped_listing(
    lines: Sequence[str], limit: Notice | None, *, lines_cut: Notice | None = None
) -> ToolResult:
    """``lines`` cut to pi's byte limit (whole lines), then pi's notices in one bracket.

    Notices and ``details`` keys come in pi's order: ``limit`` (the tool's result limit was
    reached), the byte limit, ``lines_cut`` (grep shortened long lines).
    """
    # Imported here: the tool definitions read this module's limits when a process starts,
    # and pi_host's truncation code loads only with the first listing it cuts.
    from pi_host import format_size, truncate_head

    truncation = truncate_head("\n".join(lines), max_lines=NO_LINE_LIMIT)
    notices: list[str] = []
    details: dict[str, Any] = {}
    byte_limit = f"{format_size(DEFAULT_MAX_BYTES)} limit reached", "truncation", truncation.to_json_dict()
    for notice in (limit, byte_limit if truncation.truncated else None, lines_cut):
        if notice is not None:
            text, key, value = notice
            notices.append(text)
            details[key] = value
    output = truncation.content
    if notices:
        output += "\n\n[" + ". ".join(notices) + "]"
    return ToolResult.text(output, details=details or None)
