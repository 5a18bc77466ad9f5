"""A session's tool allow-list (``SessionOptions.tool_allowlist``): names and ``*`` patterns."""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase

__all__ = ["tool_allowed"]


def tool_allowed(name: str, allowlist: Sequence[str] | None) -> bool:
    """Whether ``name`` matches one of ``allowlist``'s names or patterns (``None``: every tool).

    Patterns are ``fnmatch``'s, case-sensitive: ``*`` any run of characters, ``?`` one, so
    ``mcp__db__*`` is every tool of the MCP server ``db``.
    """
    if allowlist is None:
        return True
    return any(name == pattern or fnmatchcase(name, pattern) for pattern in allowlist)
