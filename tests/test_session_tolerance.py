"""Damaged session files load with warnings instead of failing, and stay appendable."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from pi_host.messages import AssistantMessage, TextContent, UserMessage
from pi_host.session import SessionFileError, SessionManager, UnknownEntry

HEADER = '{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}'


@pytest.fixture(autouse=True)
def _agent_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_HOST_DIR", str(tmp_path / "agent"))


def msg(entry_id: str, parent: str | None, text: str, role: str = "user") -> str:
    parent_json = "null" if parent is None else f'"{parent}"'
    if role == "user":
        message = f'{{"role":"user","content":"{text}","timestamp":1}}'
    else:
        message = (
            f'{{"role":"assistant","content":[{{"type":"text","text":"{text}"}}],"api":"a","provider":"p",'
            '"model":"m","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,'
            '"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop",'
            '"timestamp":2}'
        )
    return (
        f'{{"type":"message","id":"{entry_id}","parentId":{parent_json},'
        f'"timestamp":"2025-01-01T00:00:01.000Z","message":{message}}}'
    )


def write(path: Path, *lines: str, newline: bool = True) -> Path:
    path.write_bytes(("\n".join(lines) + ("\n" if newline else "")).encode("utf-8"))
    return path


def texts(manager: SessionManager) -> list[str]:
    out = []
    for message in manager.build_session_context().messages:
        content = getattr(message, "content", "")
        out.append(content if isinstance(content, str) else "".join(getattr(b, "text", "") for b in content))
    return out


def test_a_torn_last_line_is_skipped_and_appends_start_on_a_fresh_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    torn = msg("c", "b", "lost")[:40]
    file = write(
        tmp_path / "s.jsonl",
        HEADER,
        msg("a", None, "one"),
        msg("b", "a", "two", "assistant"),
        torn,
        newline=False,
    )
    with caplog.at_level(logging.WARNING, logger="pi_host.session"):
        manager = SessionManager.open(file)
    assert manager.leaf_id == "b"
    assert texts(manager) == ["one", "two"]
    (warning,) = manager.warnings
    assert "torn write" in warning.message and warning.offset is not None and warning.path == str(file)
    assert "torn write" in caplog.text
    new_id = manager.append_message(UserMessage(content="three"))
    raw = file.read_text("utf-8").split("\n")
    assert raw[3] == torn and json.loads(raw[4])["id"] == new_id and raw[5] == ""
    reopened = SessionManager.open(file)
    assert texts(reopened) == ["one", "two", "three"]
    assert ["malformed" in w.message for w in reopened.warnings] == [True]


def test_a_valid_last_line_without_newline_is_kept(tmp_path: Path) -> None:
    file = write(
        tmp_path / "s.jsonl", HEADER, msg("a", None, "one"), msg("b", "a", "two", "assistant"), newline=False
    )
    manager = SessionManager.open(file)
    assert manager.warnings == [] and manager.leaf_id == "b"
    manager.append_message(UserMessage(content="three"))
    assert texts(SessionManager.open(file)) == ["one", "two", "three"]


@pytest.mark.parametrize(
    "junk",
    [
        b"this is not json",
        b"\xff\xfe\x00garbage\x80",
        b'{"type":"message","id":"x"',
        b"[1,2,3]",
        b"42",
        b'{"no":"id"}',
    ],
)
def test_junk_lines_in_the_middle_are_skipped(tmp_path: Path, junk: bytes) -> None:
    file = tmp_path / "s.jsonl"
    file.write_bytes(
        b"\n".join(
            [
                HEADER.encode(),
                msg("a", None, "one").encode(),
                junk,
                msg("b", "a", "two", "assistant").encode(),
            ]
        )
        + b"\n"
    )
    manager = SessionManager.open(file)
    assert texts(manager) == ["one", "two"]
    assert len(manager.warnings) == 1
    assert [e.id for e in manager.get_entries()] == ["a", "b"]
    assert len(manager.warnings) == 1  # reading everything does not report it twice


def test_a_broken_line_on_the_active_path_cuts_the_path_like_pi(tmp_path: Path) -> None:
    # A line torn by a crash and then continued by pi (which does not start a fresh line).
    glued = msg("b", "a", "two", "assistant")[:50] + msg("c", "b", "three")
    file = write(
        tmp_path / "s.jsonl", HEADER, msg("a", None, "one"), glued, msg("d", "c", "four", "assistant")
    )
    manager = SessionManager.open(file)
    assert texts(manager) == ["four"]  # pi loses b and c too: d's parent is gone
    messages = [w.message for w in manager.warnings]
    assert any("missing parent c" in m for m in messages)


def test_duplicate_ids_keep_the_later_line(tmp_path: Path) -> None:
    file = write(
        tmp_path / "s.jsonl",
        HEADER,
        msg("a", None, "one"),
        msg("b", "a", "first b", "assistant"),
        msg("b", "a", "second b", "assistant"),
        msg("c", "b", "three"),
    )
    manager = SessionManager.open(file)
    assert texts(manager) == ["one", "second b", "three"]
    assert any("duplicate entry id b" in w.message for w in manager.warnings)
    assert [e.id for e in manager.get_entries()] == ["a", "b", "c"]


def test_a_missing_parent_starts_the_path_at_the_orphan(tmp_path: Path) -> None:
    file = write(tmp_path / "s.jsonl", HEADER, msg("a", None, "one"), msg("b", "gone", "two", "assistant"))
    manager = SessionManager.open(file)
    assert texts(manager) == ["two"]
    assert any("missing parent gone" in w.message for w in manager.warnings)
    roots = manager.get_tree()
    assert [node.entry.id for node in roots] == ["a", "b"]


def test_parent_cycles_do_not_hang(tmp_path: Path) -> None:
    file = write(tmp_path / "s.jsonl", HEADER, msg("a", "b", "one"), msg("b", "a", "two", "assistant"))
    manager = SessionManager.open(file)
    assert texts(manager) == ["one", "two"]
    assert any("cycle" in w.message for w in manager.warnings)
    assert [e.id for e in manager.get_branch()] == ["a", "b"]
    write(tmp_path / "t.jsonl", HEADER, msg("a", "a", "self"))
    assert texts(SessionManager.open(tmp_path / "t.jsonl")) == ["self"]


def test_unknown_and_invalid_entries_keep_their_place_in_the_tree(tmp_path: Path) -> None:
    file = write(
        tmp_path / "s.jsonl",
        HEADER,
        msg("a", None, "one"),
        '{"type":"future","id":"f","parentId":"a","timestamp":"t","x":1}',
        '{"type":"message","id":"g","parentId":"f","timestamp":"t","message":{"role":"alien"}}',
        msg("b", "g", "two", "assistant"),
    )
    manager = SessionManager.open(file)
    assert texts(manager) == ["one", "two"]
    assert [type(e).__name__ for e in manager.get_branch()] == [
        "SessionMessageEntry",
        "UnknownEntry",
        "UnknownEntry",
        "SessionMessageEntry",
    ]
    invalid = manager.get_entry("g")
    assert isinstance(invalid, UnknownEntry) and invalid.reason
    assert ["kept invalid message entry g" in w.message for w in manager.warnings] == [True]


def test_a_file_without_a_valid_header_is_refused_and_left_alone(tmp_path: Path) -> None:
    # pi 0.73 restarts such a file in place, losing what it held; pi-host refuses it.
    file = write(tmp_path / "s.jsonl", msg("a", None, "no header"), msg("b", "a", "x", "assistant"))
    original = file.read_bytes()
    with pytest.raises(SessionFileError, match="is not a pi session file") as raised:
        SessionManager.open(file)
    assert raised.value.file == file
    assert file.read_bytes() == original
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("s.jsonl")] == ["s.jsonl"]


def test_an_empty_file_is_restarted_quietly(tmp_path: Path) -> None:
    file = tmp_path / "s.jsonl"
    file.write_bytes(b"\n\n")
    manager = SessionManager.open(file)
    assert manager.warnings == []
    assert file.read_text("utf-8") == manager.header.to_json() + "\n"
    assert not (tmp_path / "s.jsonl.invalid").exists()


def test_junk_before_the_header_and_a_second_header_are_skipped(tmp_path: Path) -> None:
    file = write(
        tmp_path / "s.jsonl", "junk", HEADER, msg("a", None, "one"), HEADER, msg("b", "a", "two", "assistant")
    )
    manager = SessionManager.open(file)
    assert manager.session_id == "s1"
    assert texts(manager) == ["one", "two"]
    assert [w.message for w in manager.warnings] == [
        "skipped a malformed line before the session header",
        "ignored a second session header",
    ]


def test_foreign_key_order_is_read_through_the_slow_path(tmp_path: Path) -> None:
    reordered = json.loads(msg("b", "a", "two", "assistant"))
    reordered = {
        "message": reordered["message"],
        "parentId": "a",
        "id": "b",
        "type": "message",
        "timestamp": "t",
    }
    file = write(tmp_path / "s.jsonl", HEADER, msg("a", None, "one"), json.dumps(reordered))
    manager = SessionManager.open(file)
    assert texts(manager) == ["one", "two"] and manager.warnings == []


def test_a_file_rewritten_under_the_reader_gives_warnings_not_errors(tmp_path: Path) -> None:
    lines = [HEADER] + [msg(f"{n:04d}", f"{n - 1:04d}" if n else None, f"m{n}") for n in range(2000)]
    file = write(tmp_path / "s.jsonl", *lines)
    manager = SessionManager.open(file)  # reads only the end of the file
    write(file, HEADER)  # someone truncates it
    entries = manager.get_entries()
    assert len(entries) < 2000
    assert any("shorter than when it was opened" in w.message for w in manager.warnings)


def test_appending_after_a_crash_mid_write_of_our_own(tmp_path: Path) -> None:
    manager = SessionManager.create("/w", tmp_path)
    manager.append_message(UserMessage(content="one"))
    manager.append_message(AssistantMessage(content=[TextContent(text="two")]))
    file = manager.session_file
    assert file is not None
    with open(file, "ab") as f:
        f.write(b'{"type":"message","id":"torn","par')  # a write cut short
    reopened = SessionManager.open(file)
    reopened.append_message(UserMessage(content="three"))
    assert texts(SessionManager.open(file)) == ["one", "two", "three"]
