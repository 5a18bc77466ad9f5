"""The session's model and thinking level: switching, clamping, recording, announcing.

Every change is recorded in the session file and announced to plugins in pi's order
(``pi_thinking_level_select`` before ``pi_model_select``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pi_host.providers import Model, ThinkingLevel
from pi_host.providers import clamp_thinking_level as _clamp_for_model

if TYPE_CHECKING:
    from pi_host.agent import Agent
    from pi_host.resources import Settings
    from pi_host.session import SessionManager

    from ._context import SessionPluginContext
    from ._host import Host

__all__ = ["ModelControl", "clamp_thinking_level"]


class _Session(Protocol):
    """What model control needs of its session."""

    host: Host
    agent: Agent
    session_manager: SessionManager
    ctx: SessionPluginContext
    model_resolver: Any
    settings: Settings | None

    def emit_event(self, event: Any) -> None: ...

    def spawn(self, work: Callable[[], Awaitable[Any]]) -> None: ...


def clamp_thinking_level(model: Model | None, level: ThinkingLevel) -> ThinkingLevel:
    """The nearest level ``model`` supports (pi's rule; see :func:`pi_host.providers.clamp_thinking_level`);
    ``level`` unchanged when no model is selected."""
    return level if model is None else _clamp_for_model(model, level)


class ModelControl:
    """Sets the agent's model and thinking level on behalf of one session."""

    def __init__(self, session: _Session) -> None:
        self._session = session

    @property
    def model(self) -> Model | None:
        model = self._session.agent.state.model
        return None if model.api == "unknown" else model

    async def set_model(self, model: Model, source: Literal["set", "cycle", "restore"]) -> bool:
        """Switch to ``model``; ``False`` (nothing changed) when it has no credentials."""
        session = self._session
        resolver = session.model_resolver
        if resolver is not None and not resolver.has_auth(model):
            return False
        previous = self.model
        state = session.agent.state
        # pi carries the level over from a reasoning model; from one without reasoning (whose
        # level is forced "off") it takes the default level instead.
        level = state.thinking_level if previous is not None and previous.reasoning else self._default_level()
        state.model = model
        session.session_manager.append_model_change(model.provider, model.id)
        previous_level = self.apply_thinking_level(level)
        dispatcher = session.host.dispatcher
        if previous_level is not None:
            # Awaited here so it fires before pi_model_select, as in pi.
            await dispatcher.thinking_level_select(
                level=state.thinking_level, previous_level=previous_level, ctx=session.ctx
            )
        if previous is None or previous.ref != model.ref:
            await dispatcher.model_select(
                model=model, previous_model=previous, source=source, ctx=session.ctx
            )
        return True

    def set_thinking_level(self, level: ThinkingLevel) -> None:
        """Set ``level`` (clamped); plugins hear of a change in the background."""
        session = self._session
        previous = self.apply_thinking_level(level)
        if previous is None:
            return
        current = session.agent.state.thinking_level
        session.spawn(
            lambda: session.host.dispatcher.thinking_level_select(
                level=current, previous_level=previous, ctx=session.ctx
            )
        )

    def apply_thinking_level(self, level: ThinkingLevel) -> ThinkingLevel | None:
        """Clamp, set and record ``level``; returns the previous level if it changed."""
        session = self._session
        level = clamp_thinking_level(self.model, level)
        state = session.agent.state
        previous = state.thinking_level
        if level == previous:
            return None
        state.thinking_level = level
        session.session_manager.append_thinking_level_change(level)
        from ._events import ThinkingLevelChangedEvent

        session.emit_event(ThinkingLevelChangedEvent(level=level))
        return previous

    def _default_level(self) -> ThinkingLevel:
        settings = self._session.settings
        configured = settings.default_thinking_level if settings is not None else None
        return configured or "medium"
