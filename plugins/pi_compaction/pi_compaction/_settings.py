"""pi's ``compaction`` and ``branchSummary`` sections of ``settings.json``, owned by this plugin."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

__all__ = ["BranchSummarySettings", "CompactionSettings"]


class _Section(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, extra="allow")


class CompactionSettings(_Section):
    """``compaction``: summarise old history when the context fills up (pi's keys and defaults)."""

    enabled: bool = True
    reserve_tokens: int = 16384
    keep_recent_tokens: int = 20000


class BranchSummarySettings(_Section):
    """``branchSummary``: summaries of abandoned branches on tree navigation."""

    reserve_tokens: int = 16384
    skip_prompt: bool = False
