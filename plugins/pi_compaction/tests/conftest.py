"""A real session over a scripted provider, with the installed plugins and chosen settings.

Summary requests (recognised by the summariser's system prompt) go to a second scripted
model, so a test scripts the conversation and the summaries separately; when no summary is
scripted the summariser answers ``STUB_SUMMARY``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pi_compaction
import pytest

from pi_host import Provider, hookimpl
from pi_host.messages import AssistantMessageEvent
from pi_host.providers import FauxProvider, LlmContext, Model, StreamOptions, faux_assistant_message
from pi_host.runtime import AgentSession, SessionOptions, create_session

STUB_SUMMARY = "## Goal\nstub summary"


@dataclass
class Harness:
    """A session, its conversation model, its summariser model and every event it sent."""

    session: AgentSession
    faux: FauxProvider
    summarizer: FauxProvider
    events: list[Any] = field(default_factory=list)


SessionFactory = Callable[..., Awaitable[Harness]]


class ScriptedProvider:
    """Registers the scripted models (an extra plugin is asked before the built-ins)."""

    def __init__(self, faux: FauxProvider, summarizer: FauxProvider) -> None:
        self.faux = faux
        self.summarizer = summarizer

    def stream(
        self, model: Model, context: LlmContext, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        if context.system_prompt != pi_compaction.SUMMARY_SYSTEM_PROMPT:
            return self.faux.stream(model, context, options)
        if not self.summarizer.pending_response_count:
            self.summarizer.append_responses([faux_assistant_message(STUB_SUMMARY)])
        return self.summarizer.stream(model, context, options)

    @hookimpl
    def pi_register_providers(self, register: Callable[[Provider], None]) -> None:
        faux = self.faux
        register(Provider(api=faux.api, stream=self.stream, models=faux.models, requires_auth=False))


@pytest.fixture
def make_session(tmp_path: Path) -> SessionFactory:
    """``await make_session(replies, summaries=[...], settings={...})`` → :class:`Harness`.

    The session keeps its file under ``tmp_path`` (compaction and tree navigation need
    entries); the retry plugin is disabled unless ``disabled`` says otherwise.
    """

    async def make(
        replies: Sequence[Any],
        *,
        summaries: Sequence[Any] = (),
        settings: dict[str, Any] | None = None,
        disabled: Sequence[str] = ("retry",),
        extra_plugins: Sequence[object] = (),
        context_window: int = 128_000,
        reasoning: bool = False,
        max_tokens: int = 16_384,
        system_prompt: str | None = None,
        thinking: str | None = None,
    ) -> Harness:
        (tmp_path / "settings.json").write_text(json.dumps(settings or {}))
        faux = FauxProvider(
            replies,
            api="faux-test",
            provider="faux-test",
            models=[
                {
                    "id": "faux-1",
                    "context_window": context_window,
                    "reasoning": reasoning,
                    "max_tokens": max_tokens,
                }
            ],
        )
        summarizer = FauxProvider(summaries, api="faux-test", provider="faux-test")
        session = await create_session(
            SessionOptions(
                provider="faux-test",
                agent_dir=str(tmp_path),
                cwd=str(tmp_path),
                session_dir=str(tmp_path / "sessions"),
                disabled_plugins=list(disabled),
                extra_plugins=[ScriptedProvider(faux, summarizer), *extra_plugins],
                system_prompt=system_prompt,
                thinking=thinking,  # type: ignore[arg-type]
            )
        )
        harness = Harness(session, faux, summarizer)
        session.subscribe(harness.events.append)
        return harness

    return make
