"""The pure compaction algorithm: estimates, cut points, split turns, file ops, serialisation."""

from __future__ import annotations

from typing import Any

import pi_compaction as pc
import pytest
from pi_compaction import CompactionSettings

from pi_host.hookspecs import FileOperations
from pi_host.messages import (
    AssistantMessage,
    BashExecutionMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from pi_host.session import BranchSummaryEntry, CompactionEntry, ModelChangeEntry, SessionMessageEntry


def user(text: str) -> UserMessage:
    return UserMessage(content=text, timestamp=1)


def reply(text: str = "", *, calls: list[ToolCall] | None = None, tokens: int = 0) -> AssistantMessage:
    content: list[Any] = [TextContent(text=text)] if text else []
    content.extend(calls or [])
    return AssistantMessage(
        content=content,
        api="faux",
        provider="faux",
        model="faux-1",
        usage=Usage(total_tokens=tokens),
        stop_reason="toolUse" if calls else "stop",
        timestamp=1,
    )


def result(call_id: str, text: str) -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id=call_id, tool_name="read", content=[TextContent(text=text)], is_error=False, timestamp=1
    )


def entries_of(*messages: Any) -> list[Any]:
    entries: list[Any] = []
    parent = None
    for index, message in enumerate(messages):
        if isinstance(message, CompactionEntry | ModelChangeEntry):
            entry = message.model_copy(update={"id": f"e{index}", "parent_id": parent})
        else:
            entry = SessionMessageEntry(id=f"e{index}", parent_id=parent, message=message)
        entries.append(entry)
        parent = entry.id
    return entries


def test_estimates_are_chars_over_four_rounded_up() -> None:
    assert pc.estimate_tokens(user("abcde")) == 2
    call = ToolCall(id="c", name="read", arguments={"path": "a"})
    assistant = reply("hi", calls=[call]).model_copy(
        update={"content": [TextContent(text="hi"), ThinkingContent(thinking="hmm"), call]}
    )
    assert pc.estimate_tokens(assistant) == -(-(2 + 3 + 4 + len('{"path":"a"}')) // 4)
    image = ToolResultMessage(
        tool_call_id="c",
        tool_name="read",
        content=[ImageContent(data="x", mime_type="image/png")],
        is_error=False,
        timestamp=1,
    )
    assert pc.estimate_tokens(image) == 1200
    assert pc.estimate_tokens(BashExecutionMessage(command="ls", output="ab")) == 1


def test_context_estimate_uses_the_last_usage_plus_what_followed() -> None:
    messages = [user("x" * 40), reply("ok", tokens=500), user("y" * 40)]
    assert pc.estimate_context_tokens(messages) == 510
    assert pc.estimate_context_tokens([user("x" * 40)]) == 10
    failed = reply("", tokens=900).model_copy(update={"stop_reason": "error"})
    assert pc.estimate_context_tokens([*messages, failed]) == 510


def test_threshold_is_window_minus_reserve() -> None:
    settings = CompactionSettings(reserve_tokens=100)
    assert not pc.should_compact(900, 1000, settings)
    assert pc.should_compact(901, 1000, settings)
    assert not pc.should_compact(5000, 1000, CompactionSettings(enabled=False))


def test_cut_never_lands_on_a_tool_result() -> None:
    call = ToolCall(id="c1", name="read", arguments={"path": "big.txt"})
    entries = entries_of(
        user("a" * 400),
        reply("b" * 400),
        user("c" * 40),
        reply(calls=[call]),
        result("c1", "r" * 400),
        reply("d" * 40),
    )
    # Keeping 100 tokens reaches back into the tool result; the cut moves to the next cut
    # point, never onto the result, and the turn is split.
    cut = pc.find_cut_point(entries, 0, len(entries), 100)
    assert entries[cut.first_kept_index].message.role != "toolResult"
    cut = pc.find_cut_point(entries, 0, len(entries), 20)
    assert cut.first_kept_index == 5 and cut.is_split_turn and cut.turn_start_index == 2
    cut = pc.find_cut_point(entries, 0, len(entries), 115)
    assert cut.first_kept_index == 3 and cut.turn_start_index == 2


def test_cut_at_a_user_message_is_not_a_split_turn() -> None:
    entries = entries_of(user("a" * 400), reply("b" * 400), user("c" * 400), reply("d" * 40))
    cut = pc.find_cut_point(entries, 0, len(entries), 110)
    assert cut == pc.CutPoint(first_kept_index=2)


def test_cut_takes_preceding_settings_entries_along() -> None:
    change = ModelChangeEntry(id="x", provider="faux", model_id="faux-1")
    entries = entries_of(user("a" * 400), reply("b" * 400), change, user("c" * 400), reply("d"))
    assert pc.find_cut_point(entries, 0, len(entries), 100).first_kept_index == 2


def test_prepare_splits_history_and_turn_prefix_and_tracks_files() -> None:
    read = ToolCall(id="c1", name="read", arguments={"path": "src/a.py"})
    edit = ToolCall(id="c2", name="edit", arguments={"path": "src/b.py", "edits": []})
    entries = entries_of(
        user("first " * 100),
        reply("done " * 100, calls=[read], tokens=300),
        result("c1", "x" * 100),
        user("second"),
        reply(calls=[edit]),
        result("c2", "y" * 4000),
        reply("final"),
    )
    prep = pc.prepare_compaction(entries, CompactionSettings(keep_recent_tokens=10))
    assert prep is not None
    assert prep.first_kept_entry_id == "e6"
    assert prep.is_split_turn
    assert [m.role for m in prep.messages_to_summarize] == ["user", "assistant", "toolResult"]
    assert [m.role for m in prep.turn_prefix_messages] == ["user", "assistant", "toolResult"]
    assert pc.file_lists(prep.file_ops) == (["src/a.py"], ["src/b.py"])
    assert prep.tokens_before > 300


def test_prepare_after_a_compaction_starts_at_its_first_kept_entry() -> None:
    previous = CompactionEntry(
        id="p",
        summary="OLD",
        first_kept_entry_id="e2",
        tokens_before=1,
        details={"readFiles": ["old.txt"], "modifiedFiles": ["mod.txt"]},
    )
    entries = entries_of(
        user("a" * 400),
        reply("b" * 400),
        user("c" * 400),
        reply("d" * 400),
        previous,
        user("e" * 400),
        reply("f"),
    )
    prep = pc.prepare_compaction(entries, CompactionSettings(keep_recent_tokens=50))
    assert prep is not None
    assert prep.previous_summary == "OLD"
    assert [m.content for m in prep.messages_to_summarize if m.role == "user"] == ["c" * 400]
    assert prep.first_kept_entry_id == "e5"
    assert pc.file_lists(prep.file_ops) == (["old.txt"], ["mod.txt"])
    assert pc.prepare_compaction([*entries, previous]) is None


def test_nothing_to_compact_in_a_tiny_session() -> None:
    assert pc.prepare_compaction(entries_of(user("hi"), reply("hello"))) is None
    assert pc.prepare_compaction([]) is None


def test_file_lists_separate_read_only_from_modified() -> None:
    ops = FileOperations(read=frozenset({"b", "a", "w"}), written=frozenset({"w"}), edited=frozenset({"e"}))
    assert pc.file_lists(ops) == (["a", "b"], ["e", "w"])
    assert pc.format_file_operations(["a"], ["e"]) == (
        "\n\n<read-files>\na\n</read-files>\n\n<modified-files>\ne\n</modified-files>"
    )
    assert pc.format_file_operations([], []) == ""


def test_serialization_labels_roles_and_truncates_tool_results() -> None:
    call = ToolCall(id="c1", name="read", arguments={"path": "a.py", "limit": 5})
    thinking = reply("answer", calls=[call]).model_copy(
        update={"content": [ThinkingContent(thinking="plan"), TextContent(text="answer"), call]}
    )
    text = pc.serialize_conversation([user("question"), thinking, result("c1", "z" * 2010)])
    assert text == (
        "[User]: question\n\n[Assistant thinking]: plan\n\n[Assistant]: answer\n\n"
        '[Assistant tool calls]: read(path="a.py", limit=5)\n\n'
        f"[Tool result]: {'z' * 2000}\n\n[... 10 more characters truncated]"
    )


@pytest.mark.parametrize("previous", [None, "## Goal\nold"])
async def test_summary_request_and_result(previous: str | None) -> None:
    entries = entries_of(user("a" * 400), reply("b" * 400), user("c" * 400), reply("d"))
    prep = pc.prepare_compaction(entries, CompactionSettings(keep_recent_tokens=50, reserve_tokens=1000))
    assert prep is not None
    prep = prep.model_copy(update={"previous_summary": previous})
    asked: list[tuple[str, str, int]] = []

    async def summarize(system: str, messages: list[Any], max_tokens: int) -> AssistantMessage:
        asked.append((system, messages[0].content[0].text, max_tokens))
        return reply("## Goal\nsummary")

    result_ = await pc.summarize_compaction(prep, summarize, custom_instructions="focus on tests")
    assert result_.summary == "## Goal\nsummary"
    assert result_.first_kept_entry_id == prep.first_kept_entry_id
    assert result_.details == {"readFiles": [], "modifiedFiles": []}
    ((system, prompt, max_tokens),) = asked
    assert system == pc.SUMMARY_SYSTEM_PROMPT
    assert max_tokens == 800
    assert prompt.startswith("<conversation>\n[User]: " + "a" * 400)
    assert prompt.endswith("\n\nAdditional focus: focus on tests")
    for heading in (
        "## Goal",
        "## Constraints & Preferences",
        "### Done",
        "## Next Steps",
        "## Critical Context",
    ):
        assert heading in prompt
    assert ("<previous-summary>\n## Goal\nold\n</previous-summary>" in prompt) == (previous is not None)


async def test_split_turn_summaries_are_merged_and_failures_raise() -> None:
    call = ToolCall(id="c1", name="edit", arguments={"path": "x.py"})
    entries = entries_of(
        user("a" * 400),
        reply("b" * 400),
        user("c" * 40),
        reply(calls=[call]),
        result("c1", "r" * 400),
        reply("d"),
    )
    prep = pc.prepare_compaction(entries, CompactionSettings(keep_recent_tokens=5))
    assert prep is not None and prep.is_split_turn

    async def summarize(system: str, messages: list[Any], max_tokens: int) -> AssistantMessage:
        return reply("PREFIX" if "## Original Request" in messages[0].content[0].text else "HISTORY")

    merged = await pc.summarize_compaction(prep, summarize)
    assert merged.summary == (
        "HISTORY\n\n---\n\n**Turn Context (split turn):**\n\nPREFIX"
        "\n\n<modified-files>\nx.py\n</modified-files>"
    )

    async def failing(system: str, messages: list[Any], max_tokens: int) -> AssistantMessage:
        return reply().model_copy(update={"stop_reason": "error", "error_message": "boom"})

    with pytest.raises(RuntimeError, match="failed: boom"):
        await pc.summarize_compaction(prep, failing)


# -- branch summaries ---------------------------------------------------------------------------


def branch_summary(summary: str, details: Any = None, *, from_hook: bool | None = None) -> BranchSummaryEntry:
    return BranchSummaryEntry(id="b", from_id="x", summary=summary, details=details, from_hook=from_hook)


def test_branch_entries_keep_the_newest_within_the_budget_and_skip_tool_results() -> None:
    call = ToolCall(id="c1", name="read", arguments={"path": "old.py"})
    entries = entries_of(
        user("a" * 400),  # 100 tokens: over the budget once the newer ones are in
        reply(calls=[call]),
        result("c1", "r" * 4000),  # tool results never count: the call carries them
        user("b" * 200),  # 50 tokens
        reply("c" * 160),  # 40 tokens
    )
    messages, (read, modified), tokens = pc.prepare_branch_entries(entries, token_budget=120)
    assert [m.role for m in messages] == ["assistant", "user", "assistant"]
    assert tokens == pc.estimate_tokens(messages[0]) + 90
    # The call that was walked (it fit) contributes its file.
    assert (read, modified) == (["old.py"], [])


def test_a_summary_is_squeezed_in_below_ninety_percent_of_the_budget() -> None:
    entries = [branch_summary("s" * 400), *entries_of(user("b" * 200))]
    messages, _, tokens = pc.prepare_branch_entries(entries, token_budget=100)
    assert [m.role for m in messages] == ["branchSummary", "user"]
    assert tokens == 150  # over the budget: summaries are context worth keeping
    messages, _, _ = pc.prepare_branch_entries(
        [*entries_of(user("x" * 400)), *entries_of(user("b" * 360))], token_budget=100
    )
    assert [m.role for m in messages] == ["user"]  # an ordinary message is not squeezed in


def test_branch_file_lists_carry_nested_generated_summaries_only() -> None:
    call = ToolCall(id="c1", name="edit", arguments={"path": "new.py"})
    entries = [
        branch_summary("old", {"readFiles": ["a.py"], "modifiedFiles": ["b.py"]}),
        branch_summary("plugin's", {"readFiles": ["ignored.py"], "modifiedFiles": []}, from_hook=True),
        *entries_of(reply(calls=[call])),
    ]
    _, (read, modified), _ = pc.prepare_branch_entries(entries)
    assert (read, modified) == (["a.py"], ["b.py", "new.py"])


async def test_branch_summary_prompt_budget_and_preamble() -> None:
    asked: list[tuple[str, str, int]] = []

    async def summarize(system: str, messages: list[Any], max_tokens: int) -> AssistantMessage:
        asked.append((system, messages[0].content[0].text, max_tokens))
        return reply("## Goal\nexplored")

    call = ToolCall(id="c1", name="write", arguments={"path": "out.txt"})
    entries = entries_of(user("try this"), reply(calls=[call]))
    made = await pc.summarize_branch(
        entries, summarize, context_window=None, reserve_tokens=16384, custom_instructions="be brief"
    )
    assert made.summary == (
        "The user explored a different conversation branch before returning here.\n"
        "Summary of that exploration:\n\n## Goal\nexplored\n\n<modified-files>\nout.txt\n</modified-files>"
    )
    assert made.details == {"readFiles": [], "modifiedFiles": ["out.txt"]}
    ((system, text, max_tokens),) = asked
    assert system == pc.SUMMARY_SYSTEM_PROMPT and max_tokens == 2048
    assert text.startswith("<conversation>\n[User]: try this")
    assert text.endswith("\n\nAdditional focus: be brief")

    replaced = await pc.summarize_branch(
        entries,
        summarize,
        context_window=None,
        reserve_tokens=16384,
        custom_instructions="Only list the files.",
        replace_instructions=True,
    )
    assert asked[-1][1].endswith("</conversation>\n\nOnly list the files.")
    assert replaced.summary.startswith(pc.BRANCH_SUMMARY_PREAMBLE)
    empty = await pc.summarize_branch([], summarize, context_window=None, reserve_tokens=16384)
    assert empty.summary == pc.NO_BRANCH_CONTENT and len(asked) == 2


async def test_branch_summary_failures_and_aborts_raise() -> None:
    async def failing(system: str, messages: list[Any], max_tokens: int) -> AssistantMessage:
        return reply().model_copy(update={"stop_reason": "error", "error_message": "boom"})

    async def aborted(system: str, messages: list[Any], max_tokens: int) -> AssistantMessage:
        return reply().model_copy(update={"stop_reason": "aborted"})

    entries = entries_of(user("hi"))
    with pytest.raises(RuntimeError, match="boom"):
        await pc.summarize_branch(entries, failing, context_window=1000, reserve_tokens=100)
    with pytest.raises(pc.SummaryAborted):
        await pc.summarize_branch(entries, aborted, context_window=1000, reserve_tokens=100)


def test_a_small_session_compacts_on_overflow_or_request_but_not_at_the_threshold() -> None:
    """Regression (#17): everything fits keepRecentTokens, yet the provider overflowed: the
    history before the prompt is summarised and the prompt kept; a manual compaction goes
    ahead as pi's does; the threshold check leaves it alone."""
    failed = reply("").model_copy(update={"stop_reason": "error", "error_message": "400 prompt is too long"})
    entries = entries_of(user("hello"), reply("hi there"), user("what now?"), failed)
    assert pc.prepare_compaction(entries, reason="threshold") is None
    overflow = pc.prepare_compaction(entries, reason="overflow")
    assert overflow is not None
    assert overflow.first_kept_entry_id == entries[2].id
    assert [m.role for m in overflow.messages_to_summarize] == ["user", "assistant"]
    assert not overflow.is_split_turn
    manual = pc.prepare_compaction(entries, reason="manual")
    assert manual is not None and manual.first_kept_entry_id == entries[0].id
    assert manual.messages_to_summarize == ()
    # One prompt and nothing before it: nothing the summary could stand in for.
    assert pc.prepare_compaction(entries_of(user("x" * 10), failed), reason="overflow") is None
