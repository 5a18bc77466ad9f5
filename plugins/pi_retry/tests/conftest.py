"""A real session over a scripted provider, with the installed plugins and chosen settings."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from pi_host import Provider, hookimpl
from pi_host.providers import FauxProvider
from pi_host.runtime import AgentSession, SessionOptions, create_session

SessionFactory = Callable[..., Awaitable[tuple[AgentSession, FauxProvider, list[Any]]]]


class _ScriptedProvider:
    def __init__(self, faux: FauxProvider) -> None:
        self.faux = faux

    @hookimpl
    def pi_register_providers(self, register: Callable[[Provider], None]) -> None:
        faux = self.faux
        register(Provider(api=faux.api, stream=faux.stream, models=faux.models, requires_auth=False))


@pytest.fixture
def make_session(tmp_path: Path) -> SessionFactory:
    """``await make_session(replies, settings={...})`` → (session, provider, recorded events)."""

    async def make(
        replies: Sequence[Any],
        *,
        settings: dict[str, Any] | None = None,
        disabled: Sequence[str] = ("compaction",),
        extra_plugins: Sequence[object] = (),
        context_window: int = 128_000,
    ) -> tuple[AgentSession, FauxProvider, list[Any]]:
        (tmp_path / "settings.json").write_text(json.dumps(settings or {}))
        faux = FauxProvider(
            replies,
            api="faux-test",
            provider="faux-test",
            models=[{"id": "faux-1", "context_window": context_window}],
        )
        session = await create_session(
            SessionOptions(
                provider="faux-test",
                no_session=True,
                agent_dir=str(tmp_path),
                cwd=str(tmp_path),
                disabled_plugins=list(disabled),
                extra_plugins=[_ScriptedProvider(faux), *extra_plugins],
            )
        )
        events: list[Any] = []
        session.subscribe(events.append)
        return session, faux, events

    return make
