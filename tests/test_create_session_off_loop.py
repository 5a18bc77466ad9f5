"""``create_session`` keeps the event loop free: what blocks (loading plugins, reading settings,
opening and reading back the session) runs in worker threads when it loads its own host.

Fifty sessions created at once used to hold a 5 ms timer on the loop back by seconds
(``bench/bench_concurrent_sessions.py``). Nothing here is timed: each test records the thread
that runs a step (from a plugin's hooks and a session store) and checks it against the loop's,
then checks that sessions created at once, with the real plugins and a real SQLite store,
are each their own.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from pi_host import Tool, hookimpl
from pi_host.hookspecs import HostConfig, ProjectTrustDecision
from pi_host.runtime import AgentSession, Host, SessionOptions, create_session
from pi_host.session import SessionStore, SqliteStore

COUNT = 12


class _RecordingStore(SqliteStore):
    """A real SQLite store that notes the thread each session is read back in."""

    def __init__(self, path: Path, threads: list[int]) -> None:
        super().__init__(path)
        self._threads = threads

    def load(self, session_id: str) -> list[str] | None:
        self._threads.append(threading.get_ident())
        return super().load(session_id)


class _Probe:
    """A plugin noting the thread its set-up hooks run in, by hook (one instance per host)."""

    def __init__(self, store_path: Path | None = None) -> None:
        self.threads: dict[str, list[int]] = {}
        self.configured_cwd: list[str] = []
        self.store_path = store_path

    def _note(self, hook: str) -> None:
        self.threads.setdefault(hook, []).append(threading.get_ident())

    @hookimpl
    def pi_addhooks(self, pluginmanager: Any) -> None:
        self._note("pi_addhooks")  # while the host loads: registered there

    @hookimpl
    def pi_configure(self, config: HostConfig) -> None:
        self._note("pi_configure")
        self.configured_cwd.append(config.cwd)

    @hookimpl
    def pi_register_tools(self, register: Callable[[Tool[Any]], None]) -> None:
        self._note("pi_register_tools")

    @hookimpl
    def pi_session_store(self, uri: str) -> SessionStore | None:
        self._note("pi_session_store")
        if self.store_path is None or uri != f"sqlite:///{self.store_path}":
            return None
        return _RecordingStore(self.store_path, self.threads.setdefault("store.load", []))

    @hookimpl
    async def pi_project_trust(self, cwd: str, ctx: Any) -> ProjectTrustDecision | None:
        # A lifecycle hook: awaited on the loop, as ever.
        self._note("pi_project_trust")
        return ProjectTrustDecision(trusted=True)


@pytest.fixture
def faux_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An agent directory of the test's own, the faux model answering every prompt."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "A"}, {"text": "B"}]))
    monkeypatch.setenv("PI_HOST_FAUX_SCRIPT", str(script))
    monkeypatch.setenv("PI_HOST_DIR", str(tmp_path / "agent"))
    return tmp_path / "agent"


def _project(tmp_path: Path, number: int, *, local_plugin: bool = False) -> Path:
    project = tmp_path / f"project-{number}"
    project.mkdir()
    (project / "note.txt").write_text(f"note {number}\n")
    if local_plugin:
        # Project resources: trust is asked (pi_project_trust), then the project's plugin loads.
        plugins = project / ".pi" / "plugins"
        plugins.mkdir(parents=True)
        (plugins / "local_probe.py").write_text(
            "import threading\n"
            "from pi_host import hookimpl\n"
            "THREADS = []\n"
            "@hookimpl\n"
            "def pi_configure(config):\n"
            "    THREADS.append(threading.get_ident())\n"
        )
    return project


async def _create_many(
    tmp_path: Path, probes: Sequence[_Probe], *, store: str | None, local_plugin: bool = False
) -> list[AgentSession]:
    sessions: list[AgentSession | None] = [None] * len(probes)

    async def one(number: int) -> None:
        options = SessionOptions(
            cwd=str(_project(tmp_path, number, local_plugin=local_plugin)),
            provider="faux",
            tools=["read", "bash"],
            session_store=store,
            extra_plugins=[probes[number]],
        )
        sessions[number] = await create_session(options)

    with anyio.fail_after(120):
        async with anyio.create_task_group() as tg:
            for number in range(len(probes)):
                tg.start_soon(one, number)
    return [session for session in sessions if session is not None]


async def test_sessions_created_at_once_load_plugins_and_open_stores_off_the_loop(
    tmp_path: Path, faux_agent: Path
) -> None:
    loop_thread = threading.get_ident()
    database = tmp_path / "sessions.db"
    probes = [_Probe(database) for _ in range(COUNT)]
    sessions = await _create_many(tmp_path, probes, store=f"sqlite:///{database}", local_plugin=True)
    assert len(sessions) == COUNT
    for number, (probe, session) in enumerate(zip(probes, sessions, strict=True)):
        # Loading the host, configuring it and opening its store: worker threads.
        for hook in ("pi_addhooks", "pi_configure", "pi_register_tools", "pi_session_store"):
            assert probe.threads[hook], hook
            assert loop_thread not in probe.threads[hook], hook
        # The async lifecycle hook: on the loop.
        assert probe.threads["pi_project_trust"] == [loop_thread]
        # The trusted project's own plugin was loaded and configured off the loop too.
        local = session.host.plugin_manager.get_plugin("local_probe")
        assert local is not None
        assert local.THREADS and loop_thread not in local.THREADS
        # Each host is its session's own, configured for its own project.
        assert probe.configured_cwd and set(probe.configured_cwd) == {str(tmp_path / f"project-{number}")}
        assert session.cwd == str(tmp_path / f"project-{number}")
        assert {"read", "bash"} <= set(session.host.tools)  # the real pi_tools_fs and pi_bash
    assert len({id(session.host) for session in sessions}) == COUNT
    assert len({id(session.host.plugin_manager.get_plugin("local_probe")) for session in sessions}) == COUNT
    ids = [session.session_manager.session_id for session in sessions]
    assert len(set(ids)) == COUNT

    for number, session in enumerate(sessions):
        await session.prompt(f"session {number}")
    for session in sessions:
        await session.shutdown("quit")

    # Resumed at once from the store: each reads back its own conversation, off the loop.
    reopened: list[AgentSession | None] = [None] * COUNT
    again = [_Probe(database) for _ in range(COUNT)]

    async def resume(number: int) -> None:
        options = SessionOptions(
            cwd=str(tmp_path / f"project-{number}"),
            provider="faux",
            no_tools=True,
            session=ids[number],
            session_store=f"sqlite:///{database}",
            extra_plugins=[again[number]],
        )
        reopened[number] = await create_session(options)

    with anyio.fail_after(120):
        async with anyio.create_task_group() as tg:
            for number in range(COUNT):
                tg.start_soon(resume, number)
    for number, resumed in enumerate(reopened):
        assert resumed is not None
        assert resumed.session_manager.session_id == ids[number]
        assert [_text(message) for message in resumed.messages] == [f"session {number}", "A"]
        assert again[number].threads["store.load"]
        assert loop_thread not in again[number].threads["store.load"]
        await resumed.shutdown("quit")
    stored = SqliteStore(database)
    try:
        assert sorted(info.id for info in stored.list()) == sorted(ids)
    finally:
        stored.close()


async def test_sessions_in_files_created_at_once_are_each_their_own(tmp_path: Path, faux_agent: Path) -> None:
    loop_thread = threading.get_ident()
    probes = [_Probe() for _ in range(COUNT)]
    sessions = await _create_many(tmp_path, probes, store=None)
    for number, session in enumerate(sessions):
        assert loop_thread not in probes[number].threads["pi_configure"]
        await session.prompt(f"session {number}")
    files = {str(session.session_manager.session_file) for session in sessions}
    assert len(files) == COUNT
    for number, session in enumerate(sessions):
        lines = Path(str(session.session_manager.session_file)).read_text().splitlines()
        header = json.loads(lines[0])
        assert header["cwd"] == str(tmp_path / f"project-{number}")
        assert [_text(m) for m in session.messages] == [f"session {number}", "A"]
        await session.shutdown("quit")


async def test_a_host_passed_in_is_configured_on_the_loop(tmp_path: Path, faux_agent: Path) -> None:
    # The command line's path (it loads the host itself): no thread hop, as before.
    loop_thread = threading.get_ident()
    probe = _Probe()
    host = Host.load(extra_plugins=[probe])
    session = await create_session(
        SessionOptions(cwd=str(_project(tmp_path, 0)), provider="faux", no_tools=True), host=host
    )
    assert probe.threads["pi_configure"] == [loop_thread]
    await session.shutdown("quit")


async def test_a_child_session_loads_its_host_off_the_loop(tmp_path: Path, faux_agent: Path) -> None:
    loop_thread = threading.get_ident()
    probe = _Probe()
    parent = await create_session(
        SessionOptions(cwd=str(_project(tmp_path, 0)), provider="faux", no_tools=True, extra_plugins=[probe])
    )
    probe.threads.clear()
    child = await parent.ctx.create_child_session(SessionOptions(cwd=parent.cwd, no_tools=True))
    assert child.host is not parent.host
    # The parent's plugin objects again, in the child's fresh host: configured in a thread.
    assert probe.threads["pi_configure"] and loop_thread not in probe.threads["pi_configure"]
    assert probe.threads["pi_addhooks"] and loop_thread not in probe.threads["pi_addhooks"]
    await child.shutdown("quit")
    await parent.shutdown("quit")


def _text(message: Any) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(getattr(block, "text", "") for block in content)
