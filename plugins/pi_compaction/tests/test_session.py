"""pi-compaction in a real session on the scripted provider.

The scenarios of pi's ``agent-session-compaction`` and ``agent-session-auto-compaction-queue``
tests, plus mid-run compaction and the system prompt surviving compaction. Summaries are real
requests to the scripted model (``ctx.complete``), so the script interleaves conversation
replies and summary replies in the order the session asks for them.
"""

from __future__ import annotations

from typing import Any

import anyio
import pi_compaction
import pytest
from pydantic import BaseModel

from pi_host import hookimpl
from pi_host.agent import UNKNOWN_MODEL, Tool
from pi_host.hookspecs import Cancel, CompactionPreparation, CompactionResult
from pi_host.messages import (
    COMPACTION_SUMMARY_PREFIX,
    AssistantMessage,
    TextContent,
    ToolResult,
    Usage,
    UserMessage,
)
from pi_host.providers import FauxReply, faux_assistant_message, faux_tool_call
from pi_host.runtime import SessionError

SessionFactory = Any  # conftest's make_session: (replies, summaries=..., settings=...) -> Harness


SETTINGS = {"compaction": {"reserveTokens": 1000, "keepRecentTokens": 10}}


def big(text: str, tokens: int, **fields: Any) -> FauxReply:
    """A reply whose usage says the context held ``tokens``."""
    return FauxReply(faux_assistant_message(text, **fields), usage=Usage(input=tokens, total_tokens=tokens))


def summary(text: str = "## Goal\nstub summary") -> AssistantMessage:
    return faux_assistant_message([TextContent(text=text)])


def failure(text: str) -> AssistantMessage:
    return faux_assistant_message("", stop_reason="error", error_message=text)


def compaction_events(events: list[Any]) -> list[tuple[Any, ...]]:
    return [
        (e.type, e.reason)
        if e.type == "compaction_start"
        else (e.type, e.reason, e.aborted, e.will_retry, e.error_message)
        for e in events
        if e.type in ("compaction_start", "compaction_end")
    ]


def request_text(request: Any) -> str:
    (message,) = request.context.messages
    return "".join(block.text for block in message.content)


def compaction_entries(session: Any) -> list[Any]:
    return [e for e in session.session_manager.get_entries() if e.type == "compaction"]


# -- /compact ---------------------------------------------------------------------------------


async def test_manual_compact_summarises_with_the_session_model(make_session: SessionFactory) -> None:
    h = await make_session(
        [
            big("one " * 200, 100),
            big("two " * 200, 200),
            faux_assistant_message("three"),
        ],
        summaries=[summary("## Goal\nhistory"), summary("## Goal\nprefix")],
        settings=SETTINGS,
        system_prompt="You are the test agent.",
    )
    session, faux, events = h.session, h.faux, h.events
    await session.prompt("first " * 100)
    await session.prompt("second " * 100)
    await session.prompt("/compact focus on tests")
    assert compaction_events(events) == [
        ("compaction_start", "manual"),
        ("compaction_end", "manual", False, False, None),
    ]
    (entry,) = compaction_entries(session)
    # keepRecentTokens=10 keeps only the last reply: its turn is split, so two summaries.
    assert entry.summary == "## Goal\nhistory\n\n---\n\n**Turn Context (split turn):**\n\n## Goal\nprefix"
    assert entry.tokens_before == 200
    assert entry.details == {"readFiles": [], "modifiedFiles": []}
    assert not entry.from_hook
    history, prefix = h.summarizer.requests
    # maxTokens: 0.8 and 0.5 of reserveTokens; no reasoning on a model without it.
    assert (history.options.max_tokens, prefix.options.max_tokens) == (800, 500)
    assert history.options.reasoning is None
    assert request_text(history).startswith("<conversation>\n[User]: first")
    assert request_text(history).endswith("\n\nAdditional focus: focus on tests")
    assert "[User]: second" in request_text(prefix)
    assert "Additional focus" not in request_text(prefix)
    assert [m.role for m in session.messages] == ["compactionSummary", "assistant"]

    # The next request keeps the system prompt and opens with the summary.
    await session.prompt("third")
    first, *_, last = faux.requests
    assert last.context.system_prompt == first.context.system_prompt
    assert "You are the test agent." in last.context.system_prompt
    opening = last.context.messages[0]
    assert isinstance(opening, UserMessage)
    assert opening.content[0].text.startswith(COMPACTION_SUMMARY_PREFIX)
    assert "## Goal\nhistory" in opening.content[0].text


async def test_summary_budget_is_capped_by_the_model_and_uses_its_thinking_level(
    make_session: SessionFactory,
) -> None:
    h = await make_session(
        [big("one " * 200, 100), faux_assistant_message("two")],
        settings={"compaction": {"reserveTokens": 1000, "keepRecentTokens": 1}},
        reasoning=True,
        max_tokens=300,
        thinking="high",
    )
    session = h.session
    await session.prompt("first " * 100)
    await session.prompt("second")
    await session.compact()
    (request, *_) = h.summarizer.requests
    assert request.options.max_tokens == 300
    assert request.options.reasoning == "high"


async def test_nothing_to_compact(make_session: SessionFactory) -> None:
    h = await make_session([])
    session, events = h.session, h.events
    with pytest.raises(SessionError, match=r"Nothing to compact \(session too small\)"):
        await session.compact()
    assert events[-1].type == "compaction_end"


class _Supplier:
    """Supplies (or cancels) compactions and records ``pi_session_compact``."""

    def __init__(self, *, cancel: bool = False) -> None:
        self.cancel = cancel
        self.compacted: list[tuple[str, bool]] = []

    @hookimpl
    def pi_session_before_compact(self, preparation: CompactionPreparation) -> Cancel | CompactionResult:
        if self.cancel:
            return Cancel()
        return CompactionResult(
            summary="supplied by a plugin",
            first_kept_entry_id=preparation.first_kept_entry_id,
            tokens_before=preparation.tokens_before,
            details={"mine": True},
        )

    @hookimpl
    def pi_session_compact(self, compaction_entry: Any, from_extension: bool) -> None:
        self.compacted.append((compaction_entry.summary, from_extension))


async def test_a_plugin_supplies_the_manual_summary(make_session: SessionFactory) -> None:
    supplier = _Supplier()
    h = await make_session(
        [big("one " * 200, 100), faux_assistant_message("two")], settings=SETTINGS, extra_plugins=[supplier]
    )
    session, faux, events = h.session, h.faux, h.events
    await session.prompt("first " * 100)
    await session.prompt("second")
    result = await session.compact()
    assert result is not None and result.summary == "supplied by a plugin"
    assert faux.call_count == 2  # no summary request
    (entry,) = compaction_entries(session)
    assert entry.from_hook is True
    assert entry.details == {"mine": True}
    assert supplier.compacted == [("supplied by a plugin", True)]
    end = events[-1]
    assert end.type == "compaction_end" and end.result["summary"] == "supplied by a plugin"


async def test_a_plugin_cancels_the_compaction(make_session: SessionFactory) -> None:
    h = await make_session(
        [big("one " * 200, 100), faux_assistant_message("two")],
        settings=SETTINGS,
        extra_plugins=[_Supplier(cancel=True)],
    )
    session, faux, events = h.session, h.faux, h.events
    await session.prompt("first " * 100)
    await session.prompt("second")
    assert await session.compact() is None
    assert compaction_events(events)[-1] == ("compaction_end", "manual", True, False, None)
    assert compaction_entries(session) == []
    assert faux.call_count == 2


async def test_a_failed_summary_fails_the_compaction(make_session: SessionFactory) -> None:
    h = await make_session(
        [big("one " * 200, 100), faux_assistant_message("two")],
        summaries=[failure("500 internal error")],
        settings={"compaction": {"reserveTokens": 1000, "keepRecentTokens": 1}},
    )
    session, events = h.session, h.events
    await session.prompt("first " * 100)
    await session.prompt("second")
    expected = "Compaction failed: Summarization failed: 500 internal error"
    with pytest.raises(SessionError, match=expected):
        await session.compact()
    assert compaction_events(events)[-1] == ("compaction_end", "manual", False, False, expected)
    assert compaction_entries(session) == []


async def test_compacting_without_a_model_fails(make_session: SessionFactory) -> None:
    h = await make_session([big("one " * 200, 100), faux_assistant_message("two")], settings=SETTINGS)
    session, faux, events = h.session, h.faux, h.events
    await session.prompt("first " * 100)
    await session.prompt("second")
    session.agent.state.model = UNKNOWN_MODEL
    with pytest.raises(SessionError, match="Compaction failed: No model selected"):
        await session.compact()
    assert compaction_events(events)[-1][:4] == ("compaction_end", "manual", False, False)
    assert faux.call_count == 2


async def test_abort_cancels_a_compaction_in_progress(make_session: SessionFactory) -> None:
    summary_requested = anyio.Event()

    async def never_answers(*_: Any) -> AssistantMessage:
        summary_requested.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    h = await make_session(
        [big("one " * 200, 100), faux_assistant_message("two")],
        summaries=[never_answers],
        settings={"compaction": {"reserveTokens": 1000, "keepRecentTokens": 1}},
    )
    session, events = h.session, h.events
    await session.prompt("first " * 100)
    await session.prompt("second")
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.prompt, "/compact")
            await summary_requested.wait()
            assert session.is_compacting
            await session.abort()
    assert compaction_events(events)[-1] == ("compaction_end", "manual", True, False, None)
    assert compaction_entries(session) == []
    assert not session.is_compacting


# -- automatic compaction ---------------------------------------------------------------------


async def test_threshold_compacts_after_the_run(make_session: SessionFactory) -> None:
    h = await make_session(
        [big("one " * 200, 100), big("two " * 200, 1500)],
        settings=SETTINGS,
        context_window=2000,
    )
    session, faux, events = h.session, h.faux, h.events
    await session.prompt("first " * 100)
    assert compaction_events(events) == []
    await session.prompt("second " * 100)
    assert compaction_events(events) == [
        ("compaction_start", "threshold"),
        ("compaction_end", "threshold", False, False, None),
    ]
    assert len(faux.requests) == 2
    # The run does not continue after a threshold compaction: nothing is queued.
    assert session.messages[-1].role == "assistant"


async def test_no_threshold_compaction_below_it_or_without_usage(make_session: SessionFactory) -> None:
    h = await make_session(
        [failure("400 bad request"), big("ok", 900)], settings=SETTINGS, context_window=2000
    )
    session, faux, events = h.session, h.faux, h.events
    await session.prompt("first")  # an error with no usage before it: nothing to measure
    await session.prompt("second")  # 900 tokens <= 2000 - 1000
    assert compaction_events(events) == []
    assert faux.call_count == 2


async def test_threshold_after_an_error_uses_the_last_successful_usage(make_session: SessionFactory) -> None:
    h = await make_session(
        [big("one", 900), failure("400 bad request")],
        settings={"compaction": {"reserveTokens": 1000, "keepRecentTokens": 1}},
        context_window=2000,
    )
    session, events = h.session, h.events
    await session.prompt("first")
    assert compaction_events(events) == []
    # 900 (last usage) + 200 (this prompt, chars / 4) crosses 2000 - 1000.
    await session.prompt("x" * 800)
    assert compaction_events(events) == [
        ("compaction_start", "threshold"),
        ("compaction_end", "threshold", False, False, None),
    ]
    assert len(h.summarizer.requests) >= 1


async def test_stale_usage_from_before_a_compaction_is_ignored(make_session: SessionFactory) -> None:
    h = await make_session(
        [big("one " * 200, 1500), failure("400 bad request")],
        settings=SETTINGS,
        context_window=2000,
    )
    session, faux, events = h.session, h.faux, h.events
    await session.prompt("first " * 100)
    assert [e[0] for e in compaction_events(events)] == ["compaction_start", "compaction_end"]
    # The kept reply's usage (1500) measured the context before the compaction: neither the
    # pre-prompt check nor the error's estimate may compact again.
    await session.prompt("second")
    assert len(compaction_events(events)) == 2
    assert len(faux.requests) == 2


async def test_the_pre_prompt_check_includes_aborted_replies(make_session: SessionFactory) -> None:
    aborted = FauxReply(
        faux_assistant_message("partial " * 50, stop_reason="aborted", error_message="Request was aborted"),
        usage=Usage(input=1500, total_tokens=1500),
    )
    h = await make_session(
        [aborted, big("fine", 100)],
        settings=SETTINGS,
        context_window=2000,
    )
    session, faux, events = h.session, h.faux, h.events
    await session.prompt("first " * 100)
    assert compaction_events(events) == []  # the post-run check skips aborted replies
    await session.prompt("second")
    assert compaction_events(events) == [
        ("compaction_start", "threshold"),
        ("compaction_end", "threshold", False, False, None),
    ]
    last = faux.requests[-1]
    assert last.context.messages[0].content[0].text.startswith(COMPACTION_SUMMARY_PREFIX)
    assert session.messages[-1].content[0].text == "fine"


async def test_queued_messages_resume_the_run_after_a_threshold_compaction(
    make_session: SessionFactory,
) -> None:
    h = await make_session(
        [big("one " * 200, 1500), big("queued answer", 100)],
        settings=SETTINGS,
        context_window=2000,
    )
    session, faux, events = h.session, h.faux, h.events

    def queue_during_compaction(event: Any) -> None:
        # Only the agent's own queue holds the message (no prompt is pending).
        if event.type == "compaction_start":
            session.agent.follow_up(UserMessage(content="queued", timestamp=0))

    session.subscribe(queue_during_compaction)
    await session.prompt("first " * 100)
    assert [e[0] for e in compaction_events(events)] == ["compaction_start", "compaction_end"]
    assert len(faux.requests) == 2
    assert session.messages[-1].content[0].text == "queued answer"


async def test_overflow_is_compacted_and_retried_only_once(make_session: SessionFactory) -> None:
    overflow = failure("prompt is too long: 300000 tokens > 200000 maximum")
    h = await make_session([big("one " * 200, 100), overflow, overflow.model_copy()], settings=SETTINGS)
    session, faux, events = h.session, h.faux, h.events
    await session.prompt("first " * 100)
    await session.prompt("second " * 100)
    assert compaction_events(events) == [
        ("compaction_start", "overflow"),
        ("compaction_end", "overflow", False, True, None),
        ("compaction_end", "overflow", False, False, pi_compaction.OVERFLOW_RECOVERY_FAILED),
    ]
    assert len(faux.requests) == 3
    # The retried request went without the failed reply; the session file keeps both.
    retried = faux.requests[2]
    assert not any(getattr(m, "stop_reason", None) == "error" for m in retried.context.messages)
    stored = [e.message for e in session.session_manager.get_entries() if e.type == "message"]
    assert [getattr(m, "stop_reason", None) for m in stored].count("error") == 2


async def test_overflow_recovery_then_success(make_session: SessionFactory) -> None:
    overflow = failure("prompt is too long: 300000 tokens > 200000 maximum")
    h = await make_session(
        [big("one " * 200, 100), overflow, big("recovered", 100)],
        settings=SETTINGS,
    )
    session, faux, events = h.session, h.faux, h.events
    await session.prompt("first " * 100)
    await session.prompt("second " * 100)
    assert [e[0] for e in compaction_events(events)] == ["compaction_start", "compaction_end"]
    assert session.messages[-1].content[0].text == "recovered"
    # The next prompt may recover from an overflow again.
    faux.append_responses([overflow.model_copy(), big("again", 100)])
    await session.prompt("third " * 100)
    assert [e[0] for e in compaction_events(events)] == ["compaction_start", "compaction_end"] * 2
    assert session.messages[-1].content[0].text == "again"


async def test_a_successful_overflow_compacts_without_retry(make_session: SessionFactory) -> None:
    # The provider accepted more input than the window holds (z.ai-style silent overflow).
    silent = big("answer", 2500)
    h = await make_session([big("one " * 200, 100), silent], settings=SETTINGS, context_window=2000)
    session, faux, events = h.session, h.faux, h.events
    await session.prompt("first " * 100)
    await session.prompt("second " * 100)
    assert compaction_events(events) == [
        ("compaction_start", "overflow"),
        ("compaction_end", "overflow", False, False, None),
    ]
    assert len(faux.requests) == 2


# -- mid-run compaction (beyond pi) -----------------------------------------------------------


class _Dump(BaseModel):
    size: int


class _DumpTool:
    """A tool whose result is ``size`` characters: it fills the context between turns."""

    @hookimpl
    def pi_register_tools(self, register: Any) -> None:
        async def execute(params: _Dump, ctx: Any) -> ToolResult:
            return ToolResult(content=[TextContent(text="x" * params.size)])

        register(Tool(name="dump", description="Print data.", parameters=_Dump, execute=execute))


async def test_a_tool_loop_compacts_between_turns(make_session: SessionFactory) -> None:
    call = FauxReply(
        faux_assistant_message([faux_tool_call("dump", {"size": 2400}, id="c1")], stop_reason="toolUse"),
        usage=Usage(input=600, total_tokens=600),
    )
    h = await make_session(
        [big("one " * 200, 100), call, big("done", 400)],
        # Enough to keep the tool call with its result (a lone tool result is never a cut point).
        settings={"compaction": {"reserveTokens": 1000, "keepRecentTokens": 605}},
        context_window=2000,
        extra_plugins=[_DumpTool()],
        system_prompt="You are the test agent.",
    )
    session, faux, events = h.session, h.faux, h.events
    await session.prompt("first " * 100)
    # 600 tokens of usage + 600 of tool result cross 2000 - 1000 before the second turn.
    await session.prompt("second")
    assert compaction_events(events) == [
        ("compaction_start", "threshold"),
        ("compaction_end", "threshold", False, False, None),
    ]
    requests = faux.requests
    assert len(requests) == 3
    next_turn = requests[2]
    assert next_turn.context.system_prompt == requests[0].context.system_prompt
    assert next_turn.context.messages[0].content[0].text.startswith(COMPACTION_SUMMARY_PREFIX)
    # The tool call and its result are kept whole after the cut.
    roles = [m.role for m in next_turn.context.messages]
    assert roles[-2:] == ["assistant", "toolResult"]
    assert session.messages[-1].content[0].text == "done"
    # The run ended on a reply newer than the compaction, below the threshold: no second one.
    assert len(compaction_entries(session)) == 1


# -- branch summaries -------------------------------------------------------------------------


async def test_tree_navigation_summarises_the_branch_left(make_session: SessionFactory) -> None:
    edit = faux_assistant_message(
        [faux_tool_call("read", {"path": "notes.txt"}, id="r1")], stop_reason="toolUse"
    )
    h = await make_session(
        [faux_assistant_message("one"), edit, faux_assistant_message("read it")],
        summaries=[summary("## Goal\nexplored")],
    )
    session = h.session
    await session.prompt("first")
    await anyio.Path(session.cwd, "notes.txt").write_text("hello")
    await session.prompt("second")
    first_user = next(
        e for e in session.session_manager.get_entries() if e.type == "message" and e.message.role == "user"
    )
    outcome = await session.navigate_tree(first_user.id, summarize=True, custom_instructions="be brief")
    assert not outcome.cancelled
    assert outcome.editor_text == "first"
    (entry,) = [e for e in session.session_manager.get_entries() if e.type == "branch_summary"]
    assert entry.summary == (
        pi_compaction.BRANCH_SUMMARY_PREAMBLE + "## Goal\nexplored\n\n<read-files>\nnotes.txt\n</read-files>"
    )
    assert entry.details == {"readFiles": ["notes.txt"], "modifiedFiles": []}
    assert not entry.from_hook
    (request,) = h.summarizer.requests
    assert request.options.max_tokens == pi_compaction.BRANCH_SUMMARY_MAX_TOKENS
    text = request_text(request)
    # The branch starts after the entry navigated to (the common ancestor).
    assert "[User]: first" not in text
    assert "[Assistant]: one" in text and "[User]: second" in text
    assert "[Tool result]" not in text  # tool results are left out of branch summaries
    assert text.endswith("Additional focus: be brief")


async def test_a_tool_loop_that_cannot_be_cut_goes_on_quietly(make_session: SessionFactory) -> None:
    call = FauxReply(
        faux_assistant_message([faux_tool_call("dump", {"size": 4000}, id="c1")], stop_reason="toolUse"),
        usage=Usage(input=600, total_tokens=600),
    )
    h = await make_session(
        [call, big("done", 400)],
        # The tool result alone exceeds keepRecentTokens and is never a cut point.
        settings={"compaction": {"reserveTokens": 1000, "keepRecentTokens": 10}},
        context_window=2000,
        extra_plugins=[_DumpTool()],
    )
    await h.session.prompt("go")
    assert compaction_events(h.events) == []
    assert h.session.messages[-1].content[0].text == "done"


async def test_context_files_and_the_system_prompt_survive_compaction(
    make_session: SessionFactory, tmp_path: Any
) -> None:
    (tmp_path / "AGENTS.md").write_text("Always answer in haiku.")
    h = await make_session([big("one " * 200, 1500), big("two", 100)], settings=SETTINGS, context_window=2000)
    session, faux, events = h.session, h.faux, h.events
    await session.prompt("first " * 100)
    assert [e[0] for e in compaction_events(events)] == ["compaction_start", "compaction_end"]
    await session.prompt("second")
    before, after = faux.requests
    assert "Always answer in haiku." in before.context.system_prompt
    assert after.context.system_prompt == before.context.system_prompt
    assert session.system_prompt == before.context.system_prompt


async def test_automatic_compaction_failures_carry_pi_prefixes(make_session: SessionFactory) -> None:
    overflow = failure("prompt is too long: 300000 tokens > 200000 maximum")
    h = await make_session(
        [big("one " * 200, 1500), big("two " * 200, 100), overflow],
        summaries=[failure("503 unavailable") for _ in range(3)],
        settings={"compaction": {"reserveTokens": 1000, "keepRecentTokens": 1}},
        context_window=2000,
    )
    session, events = h.session, h.events
    await session.prompt("first " * 100)
    assert compaction_events(events)[-1] == (
        "compaction_end",
        "threshold",
        False,
        False,
        # Only the kept turn's beginning needed a summary (a split turn with no history).
        "Auto-compaction failed: Turn prefix summarization failed: 503 unavailable",
    )
    await session.prompt("second " * 100)  # the pre-prompt check compacts again: it fails again
    events.clear()
    await session.prompt("third " * 100)
    assert compaction_events(events)[-1] == (
        "compaction_end",
        "overflow",
        False,
        False,
        "Context overflow recovery failed: Summarization failed: 503 unavailable",
    )
    assert session.messages[-1].stop_reason == "error"  # no retry without a compaction
