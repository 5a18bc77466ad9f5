"""``/import`` in the runtime: the file is checked, copied into the session directory, continued."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pi_host import hookimpl
from pi_host.hookspecs import Cancel
from pi_host.messages import AssistantMessage, TextContent, UserMessage
from pi_host.plugin import PluginControls
from pi_host.runtime import Host, SessionError, SessionOptions, create_session
from pi_host.session import SessionManager


def session_file(directory: Path, cwd: Path, *texts: str) -> Path:
    """A pi session file recorded in ``cwd`` with one user message per text."""
    manager = SessionManager.create(cwd, directory, cache_dir=False)
    for text in texts:
        manager.append_message(UserMessage(content=text))
        # pi writes the file once there is an assistant message.
        manager.append_message(
            AssistantMessage(api="faux", provider="faux", model="m", content=[TextContent(text="ok")])
        )
    assert manager.session_file is not None
    return manager.session_file


async def start(tmp_path: Path, *plugins: object) -> Any:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    host = Host.load(controls=PluginControls(allow=frozenset()), extra_plugins=list(plugins))
    options = SessionOptions(
        cwd=str(project),
        agent_dir=str(tmp_path / "agent"),
        provider="faux",
        session_dir=str(tmp_path / "sessions"),
    )
    return await create_session(options, host=host)


def texts(session: Any) -> list[str]:
    return [
        m.content if isinstance(m.content, str) else "".join(b.text for b in m.content if hasattr(b, "text"))
        for m in session.messages
        if isinstance(m, UserMessage)
    ]


async def test_the_file_is_copied_into_the_session_directory_and_continued(tmp_path: Path) -> None:
    source = session_file(tmp_path / "elsewhere", tmp_path, "first question", "second question")
    original = source.read_bytes()
    session = await start(tmp_path)

    outcome = await session.import_session(str(source))

    assert not outcome.cancelled
    copy = tmp_path / "sessions" / source.name
    assert outcome.file == str(copy)
    assert session.session_manager.session_file == copy
    assert texts(session) == ["first question", "second question"]
    assert copy.read_bytes() == original and source.read_bytes() == original
    # The session was recorded in another directory; it goes on working in the project.
    assert outcome.recorded_cwd == str(tmp_path)
    assert session.cwd == str(tmp_path / "project")


async def test_a_different_file_of_the_same_name_is_never_overwritten(tmp_path: Path) -> None:
    source = session_file(tmp_path / "elsewhere", tmp_path, "imported")
    occupied = tmp_path / "sessions" / source.name
    occupied.parent.mkdir(parents=True)
    occupied.write_text("keep me\n")
    session = await start(tmp_path)

    outcome = await session.import_session(str(source))

    assert occupied.read_text() == "keep me\n"
    assert outcome.file == str(occupied.with_name(f"{occupied.stem}-2.jsonl"))
    assert texts(session) == ["imported"]
    # The same file again is reused, not copied a third time.
    again = await session.import_session(str(source))
    assert again.file == outcome.file
    assert {p.name for p in occupied.parent.iterdir() if p.name.startswith(occupied.stem)} == {
        occupied.name,
        f"{occupied.stem}-2.jsonl",
    }


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "File not found"),
        ("", "is not a pi session file"),
        ('{"type": "message"}\n', "is not a pi session file"),
        ("not json at all\n", "is not a pi session file"),
    ],
)
async def test_what_cannot_be_imported_is_named_and_nothing_changes(
    tmp_path: Path, content: str | None, message: str
) -> None:
    session = await start(tmp_path)
    # A conversation to keep (not prompted: the faux provider's script is per process).
    await session.import_session(str(session_file(tmp_path / "elsewhere", tmp_path, "before the import")))
    before = session.session_manager.session_file
    path = tmp_path / "bad.jsonl"
    if content is not None:
        path.write_text(content)

    with pytest.raises(SessionError, match=message) as caught:
        await session.import_session(str(path))

    assert str(path) in str(caught.value)
    assert session.session_manager.session_file == before
    assert texts(session) == ["before the import"]
    assert not (tmp_path / "sessions" / "bad.jsonl").exists()
    if content is not None:
        assert path.read_text() == content


async def test_a_directory_is_not_a_session_file(tmp_path: Path) -> None:
    session = await start(tmp_path)
    with pytest.raises(SessionError, match="is a directory"):
        await session.import_session(str(tmp_path))


async def test_a_missing_working_directory_is_asked_about(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    source = session_file(tmp_path / "elsewhere", gone, "from a deleted checkout")
    gone.rmdir()
    session = await start(tmp_path)
    asked: list[tuple[str, str]] = []

    async def decline(recorded: str, current: str) -> bool:
        asked.append((recorded, current))
        return False

    outcome = await session.import_session(str(source), confirm_missing_cwd=decline)
    assert outcome.cancelled
    assert asked == [(str(gone), str(tmp_path / "project"))]
    assert not (tmp_path / "sessions" / source.name).exists()

    async def accept(recorded: str, current: str) -> bool:
        return True

    outcome = await session.import_session(str(source), confirm_missing_cwd=accept)
    assert not outcome.cancelled
    assert texts(session) == ["from a deleted checkout"]
    # Without anyone to ask, pi's refusal.
    with pytest.raises(SessionError, match="working directory does not exist"):
        await session.import_session(str(source))


async def test_a_plugin_can_cancel_the_switch(tmp_path: Path) -> None:
    seen: list[str | None] = []

    class Veto:
        @hookimpl
        def pi_session_before_switch(self, reason: str, target_session_file: str | None) -> Cancel:
            seen.append(target_session_file)
            return Cancel()

    source = session_file(tmp_path / "elsewhere", tmp_path, "vetoed")
    session = await start(tmp_path, Veto())
    outcome = await session.import_session(str(source))
    assert outcome.cancelled
    assert seen == [str(tmp_path / "sessions" / source.name)]
    assert not (tmp_path / "sessions" / source.name).exists()


async def test_an_unsaved_session_cannot_import(tmp_path: Path) -> None:
    source = session_file(tmp_path / "elsewhere", tmp_path, "x")
    host = Host.load(controls=PluginControls(allow=frozenset()))
    options = SessionOptions(
        cwd=str(tmp_path), agent_dir=str(tmp_path / "agent"), provider="faux", no_session=True
    )
    session = await create_session(options, host=host)
    with pytest.raises(SessionError, match="--no-session"):
        await session.import_session(str(source))


async def test_skipped_lines_are_reported(tmp_path: Path) -> None:
    source = session_file(tmp_path / "elsewhere", tmp_path, "kept")
    with open(source, "a") as handle:
        handle.write("{torn line\n")
    session = await start(tmp_path)
    outcome = await session.import_session(str(source))
    assert texts(session) == ["kept"]
    assert outcome.warnings
