"""pi's default output limits for tools, importable without the truncation code.

Tool definitions name these limits in their descriptions when a process starts; the
truncation functions (:mod:`._truncate`) load with the first tool output they cut.
"""

from __future__ import annotations

__all__ = ["DEFAULT_MAX_BYTES", "DEFAULT_MAX_LINES"]

DEFAULT_MAX_LINES = 2000
DEFAULT_MAX_BYTES = 50 * 1024
