"""What the session does for plugins beyond the conversation: compacting, one-off model requests.

``compact`` runs the ``compact`` command a compaction plugin registered and reports the entry
it wrote; ``append_compaction_entry`` is how such a plugin writes one; ``complete`` sends a
request outside the conversation (summaries, classifiers).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

from pi_host.hookspecs import CompactionResult, EntryView
from pi_host.messages import AgentMessage, AssistantMessage, DoneEvent, ErrorEvent
from pi_host.providers import AbortSignal, Model, ThinkingLevel

from ._session_types import SessionError

if TYPE_CHECKING:
    from pi_host.agent import Agent
    from pi_host.session import SessionManager

    from ._context import SessionPluginContext
    from ._host import Host

__all__ = ["append_compaction_entry", "compact", "complete"]


class _Session(Protocol):
    """What these services need of their session."""

    host: Host
    agent: Agent
    session_manager: SessionManager
    ctx: SessionPluginContext
    model_resolver: Any

    @property
    def model(self) -> Model | None: ...

    @property
    def is_streaming(self) -> bool: ...

    async def abort(self) -> None: ...


async def compact(session: _Session, custom_instructions: str | None) -> CompactionResult | None:
    """Compact now (pi's ``compact``, RPC ``compact``, ``/compact``): abort any run first,
    then run the ``compact`` command a plugin registered.

    Returns the compaction entry the command wrote, as a result, or ``None`` when it wrote
    none (cancelled or aborted).

    :raises SessionError: no plugin registers ``compact``, or the command failed.
    """
    command = session.host.commands.get("compact")
    if command is None:
        raise SessionError("Compacting is not available: no installed plugin registers the compact command.")
    if session.is_streaming:
        await session.abort()
    before = session.session_manager.leaf_id
    try:
        await command.handler(custom_instructions or "", session.ctx)
    except SessionError:
        raise
    except Exception as exc:
        raise SessionError(str(exc) or type(exc).__name__) from exc
    entry: Any = session.session_manager.get_leaf_entry()
    if entry is None or entry.type != "compaction" or entry.id == before:
        return None
    return CompactionResult(
        summary=entry.summary,
        first_kept_entry_id=entry.first_kept_entry_id,
        tokens_before=entry.tokens_before,
        details=entry.details,
        from_hook=bool(entry.from_hook),
    )


def append_compaction_entry(session: _Session, result: CompactionResult) -> EntryView:
    """Write pi's ``compaction`` entry for ``result`` and rebuild the agent's messages from
    the session (the summary, then the entries kept)."""
    session.session_manager.append_compaction(
        result.summary,
        result.first_kept_entry_id,
        result.tokens_before,
        details=result.details,
        from_hook=result.from_hook or None,
    )
    session.agent.state.messages = session.session_manager.build_session_context().messages
    entry = session.session_manager.get_leaf_entry()
    assert entry is not None
    return cast("EntryView", entry)


async def complete(
    session: _Session,
    system_prompt: str,
    messages: Sequence[AgentMessage],
    *,
    max_tokens: int | None = None,
    model: Model | None = None,
    reasoning: ThinkingLevel | None = None,
    signal: AbortSignal | None = None,
) -> AssistantMessage:
    """One model request outside the conversation, for *session*.

    What it sends and returns is documented once, on :meth:`AgentSession.complete`.

    :raises SessionError: when there is no model to send to.
    """
    from pi_host.messages import convert_to_llm
    from pi_host.providers import LlmContext, StreamOptions

    target = model or session.model
    if target is None or session.model_resolver is None:
        raise SessionError("No model selected: cannot send a request")
    context = LlmContext(system_prompt=system_prompt, messages=convert_to_llm(messages))
    options = StreamOptions(
        signal=signal,
        max_tokens=max_tokens,
        reasoning=None if reasoning in (None, "off") else reasoning,
        session_id=session.session_manager.session_id,
    )
    final: AssistantMessage | None = None
    async for event in session.model_resolver.stream(target, context, options):
        if isinstance(event, DoneEvent):
            final = event.message
        elif isinstance(event, ErrorEvent):
            final = event.error
    if final is None:
        final = AssistantMessage(
            api=target.api,
            provider=target.provider,
            model=target.id,
            stop_reason="error",
            error_message="The provider ended the stream without a final message",
        )
    return final
