"""pi-compaction in a real session on the scripted provider (agent-session-compaction)."""

from __future__ import annotations

from typing import Any

import pi_compaction

from pi_host.messages import AssistantMessage, TextContent, Usage
from pi_host.providers._faux import FauxReply, faux_assistant_message

SessionFactory = Any  # conftest's make_session

SETTINGS = {"compaction": {"reserveTokens": 1000, "keepRecentTokens": 10}}


def big(text: str, tokens: int) -> FauxReply:
    return FauxReply(faux_assistant_message(text), usage=Usage(input=tokens, total_tokens=tokens))


async def summarize_stub(system: str, messages: list[Any], max_tokens: int) -> AssistantMessage:
    return faux_assistant_message([TextContent(text="## Goal\nstub summary")])


def compaction_events(events: list[Any]) -> list[tuple[Any, ...]]:
    return [
        (e.type, e.reason, getattr(e, "will_retry", None), getattr(e, "error_message", None))
        for e in events
        if e.type in ("compaction_start", "compaction_end")
    ]


async def test_manual_compact_command_writes_a_compaction_entry(make_session: SessionFactory) -> None:
    session, _faux, events = await make_session(
        [big("one " * 200, 100), big("two " * 200, 200)], settings=SETTINGS
    )
    session.stash[pi_compaction.SUMMARIZER] = summarize_stub
    await session.prompt("first " * 100)
    await session.prompt("second " * 100)
    await session.prompt("/compact focus on tests")
    assert compaction_events(events) == [
        ("compaction_start", "manual", None, None),
        ("compaction_end", "manual", False, None),
    ]
    (entry,) = [e for e in session.session_manager.get_entries() if e.type == "compaction"]
    # keepRecentTokens=10 keeps only the last reply: its turn is split, so two summaries.
    assert entry.summary == (
        "## Goal\nstub summary\n\n---\n\n**Turn Context (split turn):**\n\n## Goal\nstub summary"
    )
    assert entry.tokens_before == 200
    assert not entry.from_hook
    assert session.messages[0].role == "compactionSummary"


async def test_threshold_compacts_after_the_run(make_session: SessionFactory) -> None:
    session, faux, events = await make_session(
        [big("one " * 200, 100), big("two " * 200, 1500)], settings=SETTINGS, context_window=2000
    )
    session.stash[pi_compaction.SUMMARIZER] = summarize_stub
    await session.prompt("first " * 100)
    assert compaction_events(events) == []
    await session.prompt("second " * 100)
    assert compaction_events(events) == [
        ("compaction_start", "threshold", None, None),
        ("compaction_end", "threshold", False, None),
    ]
    assert faux.call_count == 2


async def test_overflow_is_compacted_and_retried_only_once(make_session: SessionFactory) -> None:
    overflow = faux_assistant_message(
        "", stop_reason="error", error_message="prompt is too long: 300000 tokens"
    )
    session, faux, events = await make_session(
        [big("one " * 200, 100), overflow, overflow.model_copy()], settings=SETTINGS
    )
    session.stash[pi_compaction.SUMMARIZER] = summarize_stub
    await session.prompt("first " * 100)
    await session.prompt("second " * 100)
    assert compaction_events(events) == [
        ("compaction_start", "overflow", None, None),
        ("compaction_end", "overflow", True, None),
        ("compaction_end", "overflow", False, pi_compaction.OVERFLOW_RECOVERY_FAILED),
    ]
    assert faux.call_count == 3
