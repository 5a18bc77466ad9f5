"""A prompt that arrives while a compaction runs waits for it, then runs on the new history."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pi_compaction
from pi_compaction import hookspecs as pi_compaction_hookspecs

from pi_host import hookimpl
from pi_host.hookspecs import CompactionPreparation, CompactionResult
from pi_host.messages import CompactionSummaryMessage, UserMessage
from pi_host.plugin import PluginControls
from pi_host.providers import FauxProvider, Provider, faux_assistant_message
from pi_host.runtime import Host, SessionOptions, create_session


class ScriptedFaux:
    def __init__(self, faux: FauxProvider) -> None:
        self.faux = faux

    @hookimpl
    def pi_register_providers(self, register: Any) -> None:
        register(Provider(api="faux", stream=self.faux.stream, models=self.faux.models, requires_auth=False))


class SlowCompactor:
    """Holds the compaction open until the test releases it."""

    @hookimpl
    def pi_addhooks(self, pluginmanager: Any) -> None:
        # pi-compaction's sequence without pi-compaction registered: its hook comes along.
        pluginmanager.add_hookspecs(pi_compaction_hookspecs)

    @hookimpl
    def pi_register_commands(self, register: Any) -> None:
        register(pi_compaction.compact_command())  # pi's compaction sequence, this class's cut

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.release = anyio.Event()

    @hookimpl
    def pi_compaction_prepare(self, branch_entries: Any) -> CompactionPreparation:
        first = branch_entries[-1].id
        return CompactionPreparation(first_kept_entry_id=first, tokens_before=100)

    @hookimpl
    async def pi_session_before_compact(self, preparation: CompactionPreparation) -> CompactionResult:
        self.started.set()
        await self.release.wait()
        return CompactionResult(
            summary="earlier talk", first_kept_entry_id=preparation.first_kept_entry_id, tokens_before=100
        )


async def test_a_prompt_during_a_compaction_waits_for_it(tmp_path: Path) -> None:
    faux = FauxProvider([faux_assistant_message("one"), faux_assistant_message("two")])
    compactor = SlowCompactor()
    host = Host.load(
        controls=PluginControls(allow=frozenset()), extra_plugins=[ScriptedFaux(faux), compactor]
    )
    session = await create_session(
        SessionOptions(cwd=str(tmp_path), agent_dir=str(tmp_path / "agent"), provider="faux", no_tools=True),
        host=host,
    )
    order: list[str] = []
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            session.bind_task_group(tg)
            await session.prompt("first")

            async def compact() -> None:
                await session.compact()
                order.append("compacted")

            async def second() -> None:
                await compactor.started.wait()
                await session.prompt("second")
                order.append("prompted")

            tg.start_soon(compact)
            tg.start_soon(second)
            await compactor.started.wait()
            await anyio.wait_all_tasks_blocked()
            assert faux.call_count == 1  # the second prompt has not reached the model
            compactor.release.set()
    assert order == ["compacted", "prompted"]
    assert faux.call_count == 2
    sent = faux.requests[-1].context.messages
    assert isinstance(sent[0], UserMessage)
    assert "earlier talk" in sent[0].content[0].text  # type: ignore[union-attr]
    assert any(isinstance(m, CompactionSummaryMessage) for m in session.messages)
