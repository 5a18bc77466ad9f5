"""Session listings for resume pickers, compared with pi's."""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pi_host.messages import AssistantMessage, TextContent, UserMessage
from pi_host.session import SessionManager, list_all_sessions, list_sessions, read_session_info
from tests.pi_reference import require_pi_package

DATA = Path(__file__).parent / "data" / "session"


@pytest.fixture(autouse=True)
def agent_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    agent = tmp_path / "agent"
    monkeypatch.setenv("PI_HOST_DIR", str(agent))
    return agent


def make(directory: Path, first: str, *, stamp: int, name: str | None = None, cwd: str = "/w") -> Path:
    manager = SessionManager.create(cwd, directory)
    manager.append_model_change("anthropic", "claude")
    manager.append_message(
        UserMessage(content=[TextContent(text=first), TextContent(text="(more)")], timestamp=stamp)
    )
    manager.append_message(AssistantMessage(content=[TextContent(text="reply")], timestamp=stamp + 1))
    if name is not None:
        manager.append_session_info(name)
    manager.append_message(UserMessage(content="second question", timestamp=stamp + 2))
    assert manager.session_file is not None
    return manager.session_file


def test_list_sessions_newest_activity_first(tmp_path: Path) -> None:
    older = make(tmp_path, "older one", stamp=1_700_000_000_000, name=" Named ")
    newer = make(tmp_path, "newer one", stamp=1_800_000_000_000)
    (tmp_path / "broken.jsonl").write_text("not a session\n", "utf-8")
    (tmp_path / "notes.txt").write_text("ignored\n", "utf-8")
    progress: list[tuple[int, int]] = []
    infos = list_sessions(tmp_path, lambda done, total: progress.append((done, total)))
    assert [info.path for info in infos] == [newer, older]
    assert progress[-1] == (3, 3)
    info = infos[1]
    assert info.name == "Named"
    assert info.first_message == "older one (more)"
    assert info.message_count == 3
    assert info.modified == datetime.fromtimestamp(1_700_000_000_002 / 1000, tz=UTC)
    assert info.cwd == "/w" and info.parent_session_path is None
    assert info.created.tzinfo is not None
    assert info.read_all_messages_text() == "older one (more) reply second question"
    assert SessionManager.list("/w", tmp_path) == infos


def test_a_session_without_messages(tmp_path: Path) -> None:
    file = tmp_path / "empty.jsonl"
    file.write_text(
        '{"type":"session","version":3,"id":"e","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}\n'
    )
    info = read_session_info(file)
    assert info is not None
    assert (info.first_message, info.message_count, info.name) == ("(no messages)", 0, None)
    assert info.modified == datetime(2025, 1, 1, tzinfo=UTC)
    assert read_session_info(tmp_path / "missing.jsonl") is None


def test_list_all_covers_every_project(agent_dir: Path) -> None:
    a = make(agent_dir / "sessions" / "--a--", "in a", stamp=1_000)
    b = make(agent_dir / "sessions" / "--b--", "in b", stamp=2_000)
    assert [info.path for info in list_all_sessions()] == [b, a]
    assert [info.path for info in SessionManager.list_all()] == [b, a]
    assert list_all_sessions(agent_dir / "nowhere") == []


def test_listing_matches_pi(tmp_path: Path) -> None:
    session_manager = require_pi_package() / "dist/core/session-manager.js"
    shutil.copy(DATA / "pi073_session.jsonl", tmp_path / "pi.jsonl")
    make(tmp_path, "ours", stamp=1_900_000_000_000, name="mine")
    script = (
        "const { SessionManager } = await import(process.argv[1]);"
        "const list = await SessionManager.list('/ignored', process.argv[2]);"
        "process.stdout.write(JSON.stringify(list));"
    )
    done = subprocess.run(
        ["node", "--input-type=module", "-e", script, session_manager.as_uri(), str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    expected = json.loads(done.stdout)
    ours = list_sessions(tmp_path)
    assert [str(info.path) for info in ours] == [item["path"] for item in expected]
    for info, item in zip(ours, expected, strict=True):
        assert info.id == item["id"] and info.cwd == item["cwd"]
        assert info.name == item.get("name")
        assert info.parent_session_path == item.get("parentSessionPath")
        assert info.first_message == item["firstMessage"]
        assert info.message_count == item["messageCount"]
        assert info.created.isoformat(timespec="milliseconds").replace("+00:00", "Z") == item["created"]
        assert info.modified.isoformat(timespec="milliseconds").replace("+00:00", "Z") == item["modified"]
        assert info.read_all_messages_text() == item["allMessagesText"]
