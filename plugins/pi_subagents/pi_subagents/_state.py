"""pi-subagents' per-session state, light to import (the plugin's entry point needs it)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pi_host.hookspecs import StashKey

if TYPE_CHECKING:
    import anyio

    from pi_host import PluginContext

    from ._definitions import LoadedDefinitions
    from ._settings import SubagentSettings

__all__ = ["CHILD_DEPTH", "STATE", "TASK_TOOL", "ChildRun", "RunBudget", "SessionState", "state_of"]

TASK_TOOL = "task"


@dataclass
class RunBudget:
    """What the children of one parent run have spent so far (reset when a run starts)."""

    turns: int = 0
    cost: float = 0.0


@dataclass
class ChildRun:
    """A running child, as ``/agents`` and the budget checks see it.

    :ivar usage: pi's usage object (camelCase) summed over the child's replies.
    """

    subagent_id: str
    tool_call_id: str
    agent: str
    description: str
    session_file: str | None
    started: float = field(default_factory=time.monotonic)
    turns: int = 0
    cost: float = 0.0
    usage: dict[str, Any] = field(default_factory=dict)
    current_tool: str | None = None
    tools_run: list[str] = field(default_factory=list)
    stop_reason: str | None = None


@dataclass
class SessionState:
    """pi-subagents' state in one session (the parent's, or a child's own)."""

    definitions: LoadedDefinitions
    settings: SubagentSettings
    depth: int = 0
    running: dict[str, ChildRun] = field(default_factory=dict)
    run: RunBudget = field(default_factory=RunBudget)
    limiter: anyio.CapacityLimiter | None = None

    def capacity(self) -> anyio.CapacityLimiter:
        import anyio

        if self.limiter is None:
            self.limiter = anyio.CapacityLimiter(self.settings.max_concurrency)
        return self.limiter


STATE = StashKey[SessionState]()
CHILD_DEPTH = StashKey[int]()
"""Set by the parent in a child's stash before the child starts: how deep it is."""


def state_of(ctx: PluginContext) -> SessionState | None:
    return ctx.stash.get(STATE, None)
