"""Session files are never replaced or lost: foreign files are refused, bad versions keep the
conversation, migrations keep a backup, and a failed write never ends the turn."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pi_host.messages import AssistantMessage, TextContent, UserMessage
from pi_host.session import SessionFileError, SessionManager, check_session_file

HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}


@pytest.fixture(autouse=True)
def _agent_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_HOST_DIR", str(tmp_path / "agent"))


def entry(entry_id: str, parent: str | None, text: str) -> dict[str, object]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2025-01-01T00:00:01.000Z",
        "message": {"role": "user", "content": text, "timestamp": 1},
    }


def write_session(path: Path, header: dict[str, object], *entries: dict[str, object]) -> Path:
    path.write_text("".join(json.dumps(obj) + "\n" for obj in (header, *entries)), "utf-8")
    return path


def texts(manager: SessionManager) -> list[str]:
    return [m.content for m in manager.build_session_context().messages if isinstance(m, UserMessage)]  # type: ignore[misc]


def reply(text: str) -> AssistantMessage:
    return AssistantMessage(content=[TextContent(text=text)], api="a", provider="p", model="m")


# -- files that are not sessions -----------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [b"# notes\nhello\n", b'{"some": "json"}\n', b"no newline at all", b"\x00\x01binary"],
    ids=["markdown", "json-object", "one-line", "binary"],
)
def test_a_file_that_is_not_a_session_is_refused_and_left_byte_identical(
    tmp_path: Path, content: bytes
) -> None:
    file = tmp_path / "notes.md"
    file.write_bytes(content)
    with pytest.raises(SessionFileError) as raised:
        SessionManager.open(file)
    assert str(file) in str(raised.value) and "not a pi session file" in str(raised.value)
    assert file.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "agent") == ["notes.md"]
    with pytest.raises(SessionFileError):
        check_session_file(file)


def test_switching_to_a_foreign_file_keeps_the_current_session(tmp_path: Path) -> None:
    manager = SessionManager.create("/w", tmp_path / "sessions")
    manager.append_message(UserMessage(content="keep me"))
    manager.append_message(reply("ok"))
    before = manager.session_file
    (tmp_path / "notes.md").write_text("# notes\n")
    with pytest.raises(SessionFileError):
        manager.set_session_file(tmp_path / "notes.md")
    assert manager.session_file == before and texts(manager) == ["keep me"]
    manager.append_message(UserMessage(content="more"))
    assert texts(SessionManager.open(before)) == ["keep me", "more"]  # type: ignore[arg-type]


def test_a_directory_or_a_device_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SessionFileError, match="is a directory"):
        SessionManager.open(tmp_path)
    with pytest.raises(SessionFileError, match="not a regular file"):
        SessionManager.open("/dev/null")


def test_a_torn_real_session_is_still_read(tmp_path: Path) -> None:
    file = write_session(tmp_path / "s.jsonl", HEADER, entry("a", None, "one"))
    with open(file, "ab") as f:
        f.write(b'{"type":"message","id":"b","parentId":"a","timest')  # a crash mid-line
    manager = SessionManager.open(file)
    assert texts(manager) == ["one"]
    manager.append_message(UserMessage(content="two"))
    assert texts(SessionManager.open(file)) == ["one", "two"]


# -- header versions -------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["3", "abc", 3.5, True, None, 0, -1, [3]])
def test_a_bad_header_version_keeps_the_conversation(tmp_path: Path, version: object) -> None:
    # A tree: b and c are both children of a. Reading it as version 1 would flatten it.
    entries = (entry("a", None, "root"), entry("b", "a", "left"), entry("c", "a", "right"))
    file = write_session(tmp_path / "s.jsonl", {**HEADER, "version": version}, *entries)
    original = file.read_bytes()
    manager = SessionManager.open(file)
    assert [e.id for e in manager.get_entries()] == ["a", "b", "c"]
    assert texts(manager) == ["root", "right"]
    assert [e.id for e in manager.get_children("a")] == ["b", "c"]
    assert any(
        'invalid "version"' in w.message and "read as format version 3" in w.message for w in manager.warnings
    )
    assert file.read_bytes() == original  # nothing rewritten
    assert [p.name for p in tmp_path.iterdir() if p.name != "agent"] == ["s.jsonl"]


def test_a_newer_version_is_read_and_reported(tmp_path: Path) -> None:
    file = write_session(tmp_path / "s.jsonl", {**HEADER, "version": 4}, entry("a", None, "hi"))
    manager = SessionManager.open(file)
    assert texts(manager) == ["hi"]
    assert any("format version 4" in w.message for w in manager.warnings)


def test_v1_migration_keeps_a_backup_of_the_original(tmp_path: Path) -> None:
    header = {k: v for k, v in HEADER.items() if k != "version"}
    v1 = {
        "type": "message",
        "timestamp": "2025-01-01T00:00:01.000Z",
        "message": {"role": "user", "content": "one", "timestamp": 1},
    }
    file = tmp_path / "old.jsonl"
    original = (
        json.dumps(header) + "\n" + json.dumps(v1) + "\nnot json, dropped by the migration\n"
    ).encode()
    file.write_bytes(original)
    manager = SessionManager.open(file)
    assert texts(manager) == ["one"]
    backup = tmp_path / "old.jsonl.v1.bak"
    assert backup.read_bytes() == original
    assert any(str(backup) in w.message for w in manager.warnings)
    assert json.loads(file.read_text().splitlines()[0])["version"] == 3


def test_a_version_one_file_with_a_bad_version_is_migrated_with_a_backup(tmp_path: Path) -> None:
    v1 = {
        "type": "message",
        "timestamp": "2025-01-01T00:00:01.000Z",
        "message": {"role": "user", "content": "one", "timestamp": 1},
    }
    file = write_session(tmp_path / "old.jsonl", {**HEADER, "version": "one"}, v1)
    original = file.read_bytes()
    manager = SessionManager.open(file)
    assert texts(manager) == ["one"]
    assert (tmp_path / "old.jsonl.v1.bak").read_bytes() == original
    assert any("read as format version 1" in w.message for w in manager.warnings)


def test_fork_of_a_file_with_a_bad_version_keeps_its_tree(tmp_path: Path) -> None:
    entries = (entry("a", None, "root"), entry("b", "a", "left"), entry("c", "a", "right"))
    source = write_session(tmp_path / "s.jsonl", {**HEADER, "version": None}, *entries)
    forked = SessionManager.fork_from(source, "/w", tmp_path / "forks")
    assert [e.id for e in forked.get_children("a")] == ["b", "c"]


# -- write failures --------------------------------------------------------------------------


def test_a_session_dir_that_is_a_file_loses_no_turn(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    manager = SessionManager.create("/w", blocker / "sessions")
    manager.append_message(UserMessage(content="hi"))
    manager.append_message(reply("answer"))  # the first write: fails, reported, not raised
    manager.append_message(UserMessage(content="again"))  # tried again, fails again quietly
    assert isinstance(manager.write_error, NotADirectoryError)
    problems = [w.message for w in manager.warnings if "could not save the session" in w.message]
    assert len(problems) == 1 and "ENOTDIR" in problems[0]
    assert manager.warnings[-1].path is not None and "not-a-dir" in manager.warnings[-1].path
    assert texts(manager) == ["hi", "again"]


def test_writes_held_back_are_written_once_the_file_can_be_written(tmp_path: Path) -> None:
    blocker = tmp_path / "later-a-dir"
    blocker.write_text("x")
    manager = SessionManager.create("/w", blocker)
    manager.append_message(UserMessage(content="hi"))
    manager.append_message(reply("answer"))
    assert manager.write_error is not None
    blocker.unlink()
    manager.append_message(UserMessage(content="again"))
    assert manager.write_error is None
    assert texts(SessionManager.open(manager.session_file)) == ["hi", "again"]  # type: ignore[arg-type]


_FULL_DISK = r"""
import resource, signal, sys
from pi_host.messages import AssistantMessage, TextContent, UserMessage
from pi_host.session import SessionManager

manager = SessionManager.open(sys.argv[1])
size = int(sys.argv[2])
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of death, like ENOSPC
resource.setrlimit(resource.RLIMIT_FSIZE, (size + 150, resource.RLIM_INFINITY))
manager.append_message(UserMessage(content="x" * 400))  # torn at the limit
print(type(manager.write_error).__name__, flush=True)
resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
manager.append_message(AssistantMessage(content=[TextContent(text="y")], api="a", provider="p", model="m"))
print(manager.write_error, flush=True)
"""


def test_a_write_torn_by_a_full_disk_is_written_again_whole(tmp_path: Path) -> None:
    file = write_session(tmp_path / "s.jsonl", HEADER, entry("a", None, "one"))
    size = file.stat().st_size
    done = subprocess.run(
        [sys.executable, "-c", _FULL_DISK, str(file), str(size)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PI_HOST_DIR": str(tmp_path / "agent")},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["OSError", "None"]
    assert "could not save the session (File too large, EFBIG)" in done.stderr
    manager = SessionManager.open(file)
    assert texts(manager) == ["one", "x" * 400]
    assert len(manager.get_entries()) == 3
