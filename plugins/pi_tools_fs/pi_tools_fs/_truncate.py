"""The tools' own limits; the truncation functions are pi_host's (``pi_host.truncate_head`` …)."""

from __future__ import annotations

__all__ = ["GREP_MAX_LINE_LENGTH", "NO_LINE_LIMIT"]

GREP_MAX_LINE_LENGTH = 500
NO_LINE_LIMIT = 2**53 - 1
"""JavaScript's ``Number.MAX_SAFE_INTEGER``, pi's line limit where only bytes should count."""
