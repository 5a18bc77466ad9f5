"""SessionManager: creating, appending, branching, naming, forking and switching sessions."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from pi_host.messages import (
    AssistantMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    TextContent,
    UserMessage,
)
from pi_host.session import (
    BranchSummaryEntry,
    EntryNotFoundError,
    LabelEntry,
    SessionManager,
    SessionMessageEntry,
    default_session_dir,
    find_most_recent_session,
)


@pytest.fixture(autouse=True)
def agent_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    agent = tmp_path / "agent"
    monkeypatch.setenv("PI_HOST_DIR", str(agent))
    return agent


def user(text: str) -> UserMessage:
    return UserMessage(content=text)


def assistant(text: str, provider: str = "anthropic", model: str = "claude") -> AssistantMessage:
    return AssistantMessage(content=[TextContent(text=text)], provider=provider, model=model)


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text("utf-8").split("\n")[:-1]]


def test_default_location_is_under_the_agent_dir(agent_dir: Path) -> None:
    manager = SessionManager.create("/home/ann/my proj")
    file = manager.session_file
    assert file is not None
    assert file.parent == agent_dir / "sessions" / "--home-ann-my proj--"
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z_" + re.escape(manager.session_id) + r"\.jsonl", file.name
    )
    assert default_session_dir("C:\\Users\\ann", "/a") == Path("/a/sessions/--C--Users-ann--")
    assert manager.is_persisted and manager.cwd == "/home/ann/my proj"
    assert manager.session_dir == file.parent


def test_file_is_created_with_the_first_assistant_message(tmp_path: Path) -> None:
    manager = SessionManager.create("/w", tmp_path)
    file = manager.session_file
    assert file is not None
    manager.append_model_change("anthropic", "claude")
    first = manager.append_message(user("hi"))
    assert not file.exists()  # an abandoned prompt leaves no file behind
    second = manager.append_message(assistant("hello"))
    written = lines(file)
    assert [line["type"] for line in written] == ["session", "model_change", "message", "message"]
    assert written[0] == manager.header.to_json_dict()
    assert [written[2]["id"], written[3]["id"]] == [first, second]
    manager.append_thinking_level_change("high")
    assert len(lines(file)) == 5  # then one line per append


def test_the_directory_is_made_again_if_it_went_away(tmp_path: Path) -> None:
    manager = SessionManager.create("/w", tmp_path / "nested" / "sessions")
    file = manager.session_file
    assert file is not None
    manager.append_message(user("hi"))
    manager.append_message(assistant("hello"))
    assert len(lines(file)) == 3
    file.unlink()
    file.parent.rmdir()
    manager.append_message(user("again"))  # appends the new entry to a fresh file
    assert [line["type"] for line in lines(file)] == ["message"]


def test_appends_chain_onto_the_leaf(tmp_path: Path) -> None:
    manager = SessionManager.create("/w", tmp_path)
    assert manager.leaf_id is None and manager.get_leaf_entry() is None
    a = manager.append_message(user("a"))
    b = manager.append_message(assistant("b"))
    c = manager.append_custom_entry("state", {"x": 1})
    assert re.fullmatch(r"[0-9a-f]{8}", a)
    assert [e.parent_id for e in manager.get_entries()] == [None, a, b]
    assert manager.leaf_id == c
    assert [e.id for e in manager.get_branch()] == [a, b, c]
    assert [e.id for e in manager.get_branch(b)] == [a, b]
    assert manager.get_branch("nope") == []
    assert manager.get_children(a)[0].id == b


def test_branch_moves_the_leaf_and_later_appends_fork(tmp_path: Path) -> None:
    manager = SessionManager.create("/w", tmp_path)
    a = manager.append_message(user("a"))
    manager.append_message(assistant("b"))
    manager.branch(a)
    c = manager.append_message(assistant("c"))
    assert manager.get_entry(c).parent_id == a  # type: ignore[union-attr]
    assert [e.id for e in manager.get_children(a)] == [manager.get_entries()[1].id, c]
    with pytest.raises(EntryNotFoundError, match=r"^Entry zzz not found$"):
        manager.branch("zzz")
    manager.reset_leaf()
    root = manager.append_message(user("again"))
    assert manager.get_entry(root).parent_id is None  # type: ignore[union-attr]
    assert len(manager.get_tree()) == 2
    assert manager.build_session_context().messages == [manager.get_entry(root).message]  # type: ignore[union-attr]


def test_branch_with_summary(tmp_path: Path) -> None:
    manager = SessionManager.create("/w", tmp_path)
    a = manager.append_message(user("a"))
    manager.append_message(assistant("b"))
    summary_id = manager.branch_with_summary(a, "left a branch", {"readFiles": []}, True)
    entry = manager.get_entry(summary_id)
    assert isinstance(entry, BranchSummaryEntry)
    assert (entry.parent_id, entry.from_id, entry.details, entry.from_hook) == (a, a, {"readFiles": []}, True)
    assert manager.leaf_id == summary_id
    messages = manager.build_session_context().messages
    assert isinstance(messages[-1], BranchSummaryMessage) and messages[-1].summary == "left a branch"
    top = manager.branch_with_summary(None, "from the top")
    top_entry = manager.get_entry(top)
    assert isinstance(top_entry, BranchSummaryEntry)
    assert (top_entry.parent_id, top_entry.from_id) == (None, "root")
    with pytest.raises(EntryNotFoundError, match="Entry missing not found"):
        manager.branch_with_summary("missing", "x")


def test_compaction_shapes_the_context(tmp_path: Path) -> None:
    manager = SessionManager.create("/w", tmp_path)
    manager.append_thinking_level_change("high")
    manager.append_message(user("old"))
    manager.append_message(assistant("old reply"))
    kept = manager.append_message(user("kept"))
    manager.append_message(assistant("kept reply", model="m2"))
    manager.append_compaction("summary", kept, 999)
    manager.append_message(user("new"))
    context = manager.build_session_context()
    assert isinstance(context.messages[0], CompactionSummaryMessage)
    assert context.messages[0].tokens_before == 999
    assert [getattr(m, "content", None) for m in context.messages[1:]] == [
        "kept",
        [TextContent(text="kept reply")],
        "new",
    ]
    assert context.thinking_level == "high" and context.has_thinking_entry
    assert context.model is not None and context.model.model_id == "m2"


def test_compaction_and_branch_summary_messages_are_not_appended_as_messages(tmp_path: Path) -> None:
    manager = SessionManager.create("/w", tmp_path)
    with pytest.raises(ValueError, match="append_compaction"):
        manager.append_message(CompactionSummaryMessage(summary="s", tokens_before=1))
    with pytest.raises(ValueError, match="branch_with_summary"):
        manager.append_message(BranchSummaryMessage(summary="s", from_id="x"))


def test_custom_message_entries_are_in_context(tmp_path: Path) -> None:
    manager = SessionManager.create("/w", tmp_path)
    manager.append_custom_message_entry("note", "text", False, {"d": 1})
    manager.append_custom_entry("state")  # never in context
    (message,) = manager.build_session_context().messages
    assert isinstance(message, CustomMessage)
    assert (message.custom_type, message.content, message.display, message.details) == (
        "note",
        "text",
        False,
        {"d": 1},
    )


def test_labels(tmp_path: Path) -> None:
    manager = SessionManager.create("/w", tmp_path)
    a = manager.append_message(user("a"))
    manager.append_message(assistant("b"))
    label_id = manager.append_label_change(a, "checkpoint")
    assert manager.get_label(a) == "checkpoint"
    label = manager.get_entry(label_id)
    assert isinstance(label, LabelEntry) and label.target_id == a
    assert manager.get_tree()[0].label == "checkpoint"
    manager.append_label_change(a, None)
    assert manager.get_label(a) is None
    manager.append_label_change(a, "")
    assert manager.get_label(a) is None
    with pytest.raises(EntryNotFoundError):
        manager.append_label_change("missing", "x")
    reopened = SessionManager.open(manager.session_file)  # type: ignore[arg-type]
    assert reopened.get_label(a) is None
    manager.append_label_change(a, "again")
    assert SessionManager.open(manager.session_file).get_label(a) == "again"  # type: ignore[arg-type]


def test_session_name_latest_wins_and_empty_clears(tmp_path: Path) -> None:
    manager = SessionManager.create("/w", tmp_path)
    manager.append_message(user("a"))
    manager.append_message(assistant("b"))
    assert manager.session_name is None
    manager.append_session_info("  First\n")
    assert manager.session_name == "First"
    info = manager.get_leaf_entry()
    assert info is not None and info.to_json_dict()["name"] == "First"
    manager.append_session_info("Second")
    assert SessionManager.open(manager.session_file).session_name == "Second"  # type: ignore[arg-type]
    manager.append_session_info("   ")
    assert manager.session_name is None
    assert SessionManager.open(manager.session_file).session_name is None  # type: ignore[arg-type]


def test_custom_session_ids_are_validated(tmp_path: Path) -> None:
    manager = SessionManager.create("/w", tmp_path, id="my-session_1.2")
    assert manager.session_id == "my-session_1.2"
    assert manager.session_file is not None and manager.session_file.name.endswith("_my-session_1.2.jsonl")
    for bad in ("-x", "x-", "a/b", "a b", "", "x\n", "é"):
        with pytest.raises(ValueError, match="Invalid session id"):
            SessionManager.create("/w", tmp_path, id=bad)


def test_new_session_and_parent_session(tmp_path: Path) -> None:
    manager = SessionManager.create("/w", tmp_path)
    manager.append_message(user("a"))
    manager.append_message(assistant("b"))
    old = manager.session_file
    new = manager.new_session(parent_session=old)
    assert new != old and manager.session_file == new
    assert manager.leaf_id is None and manager.get_entries() == []
    assert manager.header.parent_session == str(old)
    manager.append_message(user("c"))
    manager.append_message(assistant("d"))
    assert lines(new)[0]["parentSession"] == str(old)  # type: ignore[arg-type]


def test_next_session_is_chosen_before_switching_to_it(tmp_path: Path) -> None:
    manager = SessionManager.create("/w", tmp_path)
    manager.append_message(user("a"))
    manager.append_message(assistant("b"))
    current = (manager.session_id, manager.session_file)
    planned = manager.next_session()
    assert (manager.session_id, manager.session_file) == current  # nothing switched yet
    assert planned.file is not None and planned.file.parent == tmp_path and planned.id in planned.file.name
    assert manager.new_session(planned=planned) == planned.file
    assert (manager.session_id, manager.header.timestamp) == (planned.id, planned.timestamp)
    manager.append_message(user("c"))
    manager.append_message(assistant("d"))
    branched = manager.next_session()
    assert manager.create_branched_session(manager.get_entries()[0].id, planned=branched) == branched.file
    assert manager.session_id == branched.id and manager.session_file == branched.file
    assert SessionManager.in_memory("/w").next_session().file is None
    with pytest.raises(ValueError, match="Invalid session id"):
        manager.next_session("a/b")


def test_in_memory_sessions_never_touch_disk(tmp_path: Path, agent_dir: Path) -> None:
    manager = SessionManager.in_memory("/w")
    assert not manager.is_persisted and manager.session_file is None and manager.session_dir is None
    a = manager.append_message(user("a"))
    manager.append_message(assistant("b"))
    manager.append_compaction("s", a, 1)
    assert manager.create_branched_session(a) is None
    assert manager.get_entries()[0].id == a
    assert not agent_dir.exists()


def test_open_uses_the_header_cwd_unless_overridden(tmp_path: Path) -> None:
    manager = SessionManager.create("/original", tmp_path)
    manager.append_message(user("a"))
    manager.append_message(assistant("b"))
    file = manager.session_file
    assert file is not None
    reopened = SessionManager.open(file)
    assert reopened.cwd == "/original" and reopened.session_dir == tmp_path
    assert reopened.session_id == manager.session_id
    assert SessionManager.open(file, cwd_override="/elsewhere").cwd == "/elsewhere"


def test_open_a_missing_file_starts_a_session_saved_there(tmp_path: Path) -> None:
    target = tmp_path / "explicit.jsonl"
    manager = SessionManager.open(target)
    assert manager.session_file == target and not target.exists()
    manager.append_message(user("a"))
    manager.append_message(assistant("b"))
    assert [line["type"] for line in lines(target)] == ["session", "message", "message"]


def test_continue_recent_picks_the_newest_valid_file(tmp_path: Path) -> None:
    assert SessionManager.continue_recent("/w", tmp_path).get_entries() == []
    first = SessionManager.create("/w", tmp_path)
    first.append_message(user("one"))
    first.append_message(assistant("one"))
    second = SessionManager.create("/w", tmp_path)
    second.append_message(user("two"))
    second.append_message(assistant("two"))
    assert first.session_file is not None and second.session_file is not None
    os.utime(first.session_file, (2_000_000_000, 2_000_000_000))
    (tmp_path / "zzz.jsonl").write_text("not a session\n", "utf-8")
    os.utime(tmp_path / "zzz.jsonl", (2_100_000_000, 2_100_000_000))
    assert find_most_recent_session(tmp_path) == first.session_file
    resumed = SessionManager.continue_recent("/w", tmp_path)
    assert resumed.session_file == first.session_file
    assert resumed.build_session_context().messages[0] == UserMessage(
        content="one", timestamp=resumed.build_session_context().messages[0].timestamp
    )


def test_fork_from_copies_entries_into_a_new_project(tmp_path: Path, agent_dir: Path) -> None:
    source = SessionManager.create("/a", tmp_path / "a")
    source.append_message(user("a"))
    source.append_message(assistant("b"))
    source.append_session_info("named")
    assert source.session_file is not None
    forked = SessionManager.fork_from(source.session_file, "/b")
    assert forked.session_file is not None
    assert forked.session_file.parent == agent_dir / "sessions" / "--b--"
    assert forked.cwd == "/b" and forked.session_id != source.session_id
    assert forked.header.parent_session == str(source.session_file)
    assert (
        forked.session_file.read_text("utf-8").split("\n")[1:]
        == source.session_file.read_text("utf-8").split("\n")[1:]
    )
    assert forked.session_name == "named"
    with pytest.raises(ValueError, match="Cannot fork: source session file is empty or invalid"):
        SessionManager.fork_from(tmp_path / "missing.jsonl", "/b")


def test_create_branched_session_keeps_only_the_path(tmp_path: Path) -> None:
    manager = SessionManager.create("/w", tmp_path)
    a = manager.append_message(user("a"))
    b = manager.append_message(assistant("b"))
    manager.append_label_change(a, "start")
    manager.append_message(user("c"))
    manager.branch(b)
    d = manager.append_message(user("d"))
    old_file = manager.session_file
    new_file = manager.create_branched_session(d)
    assert new_file is not None and new_file != old_file and manager.session_file == new_file
    written = lines(new_file)
    assert written[0]["parentSession"] == str(old_file)
    assert [line.get("id") for line in written[1:4]] == [a, b, d]
    assert written[4]["type"] == "label" and written[4]["targetId"] == a and written[4]["parentId"] == d
    assert manager.get_label(a) == "start"
    assert manager.leaf_id == written[4]["id"]
    with pytest.raises(EntryNotFoundError):
        manager.create_branched_session("missing")


def test_a_branched_session_without_assistant_is_written_later(tmp_path: Path) -> None:
    manager = SessionManager.create("/w", tmp_path)
    a = manager.append_message(user("a"))
    manager.append_message(assistant("b"))
    new_file = manager.create_branched_session(a)
    assert new_file is not None and not new_file.exists()
    manager.append_message(assistant("c"))
    assert [line["type"] for line in lines(new_file)] == ["session", "message", "message"]


def test_entries_are_frozen_models_of_pi_types(tmp_path: Path) -> None:
    manager = SessionManager.create("/w", tmp_path)
    entry_id = manager.append_message(user("a"))
    entry = manager.get_entry(entry_id)
    assert isinstance(entry, SessionMessageEntry)
    with pytest.raises(Exception, match="frozen"):
        entry.id = "other"  # type: ignore[misc]
    assert manager.get_entry("missing") is None


def test_iter_branch_walks_up_lazily(tmp_path: Path) -> None:
    manager = SessionManager.create("/w", tmp_path)
    a = manager.append_message(user("a"))
    b = manager.append_message(assistant("b"))
    c = manager.append_compaction("sum", b, 10)
    d = manager.append_message(user("d"))
    assert [e.id for e in manager.iter_branch()] == [d, c, b, a]
    assert [e.id for e in manager.iter_branch(b)] == [b, a]
    assert list(manager.iter_branch("missing")) == []
    reopened = SessionManager.open(manager.session_file)  # type: ignore[arg-type]
    walk = reopened.iter_branch()
    assert next(walk).id == d and next(walk).id == c
    assert [e.id for e in reopened.get_branch()] == [a, b, c, d]


def test_reading_pauses_the_garbage_collector_only_while_it_reads(tmp_path: Path) -> None:
    import gc

    manager = SessionManager.create("/w", tmp_path)
    manager.append_message(user("a"))
    manager.append_message(assistant("b"))
    reopened = SessionManager.open(manager.session_file)  # type: ignore[arg-type]
    assert gc.isenabled()
    reopened.build_session_context()
    reopened.get_tree()
    assert gc.isenabled()
    gc.disable()
    try:
        reopened.get_entries()
        assert not gc.isenabled()  # a caller's choice is left alone
    finally:
        gc.enable()
