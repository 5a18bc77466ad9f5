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

__all__ = [
    "CHILD_DEPTH",
    "STATE",
    "TASK_TOOL",
    "ChildRun",
    "RunBudget",
    "SessionState",
    "find_child",
    "running_children",
    "state_of",
]

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
    #: Set when the user aborted this child alone (RPC ``abort_subagent``, ``/agents stop``,
    #: the terminal's key); the parent's run and the other children go on.
    aborted_by_user: bool = False
    #: Set once the child runs: stops it (its run ends aborted, its transcript complete).
    stop: anyio.Event | None = None
    #: The child's session, for its own children (nested ``abort_subagent``).
    stash: Any = None

    def abort(self) -> None:
        """Stop this child only; its ``task`` call answers that the user aborted it."""
        self.aborted_by_user = True
        if self.stop is not None:
            self.stop.set()


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


def running_children(state: SessionState) -> list[ChildRun]:
    """Every running child of this session, its own children after each (depth first)."""
    found: list[ChildRun] = []
    for run in list(state.running.values()):
        found.append(run)
        inner = run.stash.get(STATE, None) if run.stash is not None else None
        if inner is not None:
            found.extend(running_children(inner))
    return found


def find_child(state: SessionState, reference: str) -> ChildRun | str:
    """The running child whose id is ``reference`` or starts with it (at any depth), or why
    there is none: the message names the running children."""
    children = running_children(state)
    exact = [run for run in children if run.subagent_id == reference]
    matches = exact or [run for run in children if reference and run.subagent_id.startswith(reference)]
    if len(matches) == 1:
        return matches[0]
    running = ", ".join(f"{run.subagent_id} ({run.agent})" for run in children) or "none"
    if matches:
        return (
            f"Sub-agent id {reference!r} is ambiguous: {len(matches)} running sub-agents' ids start "
            f"with it; give more of the id. Running: {running}"
        )
    return f"No running sub-agent has the id {reference!r} (it may have finished); running: {running}"
