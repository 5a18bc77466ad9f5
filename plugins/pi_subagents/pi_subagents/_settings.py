"""The plugin's ``subagents`` section of ``settings.json``."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

__all__ = ["SubagentSettings"]


class SubagentSettings(BaseModel):
    """``"subagents": {...}`` in ``settings.json``.

    :ivar max_concurrency: how many children of one session run at once; further ``task``
        calls of the same turn wait for a free place.
    :ivar max_depth: how deep children may nest: 1 lets the main agent start children that
        cannot start their own; 2 lets those start one more level.
    :ivar child_max_turns: turns one child may take before it is stopped (a definition's
        ``maxTurns`` may lower it).
    :ivar child_max_cost: dollars one child may spend before it is stopped (``None``: no limit).
    :ivar run_max_turns: child turns all children of one parent run may take together.
    :ivar run_max_cost: dollars all children of one parent run may spend together.
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    max_concurrency: int = Field(default=4, ge=1)
    max_depth: int = Field(default=1, ge=0)
    child_max_turns: int = Field(default=50, ge=1)
    child_max_cost: float | None = Field(default=None, ge=0)
    run_max_turns: int | None = Field(default=None, ge=1)
    run_max_cost: float | None = Field(default=None, ge=0)
