"""The checks the hooks make after every run: pi's threshold and entry timestamps.

Kept apart from :mod:`pi_compaction._prepare` (cut points, file operations) and
:mod:`pi_compaction._summarize` (the summary requests), which the hooks import only when a
compaction is prepared or written.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._settings import CompactionSettings

__all__ = ["entry_ms", "should_compact"]


def should_compact(tokens: int, context_window: int, settings: CompactionSettings) -> bool:
    """pi's trigger: enabled and more than ``context_window - reserve_tokens`` in use."""
    return settings.enabled and tokens > context_window - settings.reserve_tokens


def entry_ms(entry: Any) -> int:
    """An entry's ISO 8601 ``timestamp`` in epoch milliseconds (messages' unit); 0 if unreadable."""
    try:
        moment = datetime.fromisoformat(str(entry.timestamp).replace("Z", "+00:00"))
    except ValueError:
        return 0
    return round(moment.timestamp() * 1000)
