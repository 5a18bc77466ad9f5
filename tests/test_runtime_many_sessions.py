"""Many sessions in one process (issue 21): ``create_session`` serves 20 concurrent sessions on
one event loop, each replaying the faux script on its own, their transcripts unmixed."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from pi_host.messages import AssistantMessage, TextContent, UserMessage
from pi_host.plugin import PluginControls
from pi_host.runtime import Host, SessionOptions, create_session
from pi_host.runtime._config import SessionHostConfig
from pi_host.session import SessionManager, SqliteStore


@pytest.mark.parametrize("store", [False, True], ids=["files", "sqlite"])
async def test_twenty_concurrent_sessions_keep_their_own_transcripts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store: bool
) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "A", "delayMs": 1}, {"text": "B", "delayMs": 1}, {"text": "C"}]))
    monkeypatch.setenv("PI_HOST_FAUX_SCRIPT", str(script))
    monkeypatch.setenv("PI_HOST_DIR", str(tmp_path / "agent"))
    uri = f"sqlite:///{tmp_path}/sessions.db" if store else None
    count = 20
    transcripts: dict[int, list[tuple[str, str]]] = {}
    ids: dict[int, str] = {}

    async def one(number: int) -> None:
        project = tmp_path / f"project-{number}"
        project.mkdir()
        session = await create_session(
            SessionOptions(cwd=str(project), provider="faux", no_tools=True, session_store=uri)
        )
        try:
            for turn in range(3):
                await session.prompt(f"session {number} turn {turn}")
                await anyio.sleep(0)  # let the other sessions interleave
            transcripts[number] = [(m.role, _text(m)) for m in session.messages]
            ids[number] = session.session_manager.session_id
        finally:
            await session.shutdown("quit")

    with anyio.fail_after(120):
        async with anyio.create_task_group() as tg:
            for number in range(count):
                tg.start_soon(one, number)

    for number in range(count):
        assert transcripts[number] == [
            ("user", f"session {number} turn 0"),
            ("assistant", "A"),
            ("user", f"session {number} turn 1"),
            ("assistant", "B"),
            ("user", f"session {number} turn 2"),
            ("assistant", "C"),
        ]
    if store:
        sqlite = SqliteStore(tmp_path / "sessions.db")
        assert len(sqlite.list()) == count
        for number in range(count):
            stored = SessionManager.open_stored(sqlite, ids[number])
            assert [(m.role, _text(m)) for m in stored.build_session_context().messages] == transcripts[
                number
            ]


async def test_a_session_knows_its_own_projects_plugins_not_the_processs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Disabling a project's own plugin is no typo, whatever directory the process is in:
    # the project's .pi/plugins names were looked up in the process's working directory.
    monkeypatch.setenv("PI_HOST_DIR", str(tmp_path / "agent"))
    project = tmp_path / "project"
    (project / ".pi" / "plugins").mkdir(parents=True)
    (project / ".pi" / "plugins" / "mine.py").write_text("")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    session = await create_session(
        SessionOptions(
            cwd=str(project), provider="faux", no_tools=True, no_session=True, disabled_plugins=["mine"]
        )
    )
    await session.shutdown("quit")
    assert not [record for record in caplog.records if 'cannot disable plugin "mine"' in record.getMessage()]


def _text(message: object) -> str:
    if isinstance(message, UserMessage):
        content = message.content
        if isinstance(content, str):
            return content
        return "".join(part.text for part in content if isinstance(part, TextContent))
    if isinstance(message, AssistantMessage):
        return "".join(part.text for part in message.content if isinstance(part, TextContent))
    return ""


def _bash_timeout_text(host: Host) -> str:
    schema = host.tools["bash"].spec().parameters
    return str(schema["properties"]["timeout"]["description"])


def test_each_host_re_collects_its_tools_with_its_own_settings(tmp_path: Path) -> None:
    """A host re-collects its registrations (a hand-built session's ``/reload``) with the
    configuration it was given, not with the one of the host configured last: pi-bash kept
    the settings ``pi_configure`` saw in module state, so the first host's ``bash`` tool got
    the second host's default timeout."""
    hosts = []
    for timeout in (7, 9):
        host = Host.load(controls=PluginControls(allow=frozenset({"bash"})))
        host.configure(
            SessionHostConfig(cwd=str(tmp_path), mode="print", settings={"bash": {"defaultTimeout": timeout}})
        )
        hosts.append(host)
    first, second = hosts
    first.collect_registrations()
    assert "default 7 seconds" in _bash_timeout_text(first)
    assert "default 9 seconds" in _bash_timeout_text(second)
    assert first.config is not None and first.config.settings["bash"]["defaultTimeout"] == 7
