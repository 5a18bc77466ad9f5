"""pi-store-postgres against a real PostgreSQL server: the conformance suite, the hook, the
command line, and a URI that names no reachable server."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pi_store_postgres
import pytest
from pi_store_postgres import PostgresStore

from pi_host import SessionOptions, SessionStore, SessionStoreError, create_session, hookimpl
from pi_host.testing import (
    SessionStoreConformance,
    assert_entry_point,
    assert_public_imports_only,
    check_crash_mid_tool,
    sample_session,
)


class TestPostgresStore(SessionStoreConformance):
    @pytest.fixture(autouse=True)
    def _database(self, postgres_server: object) -> None:
        self.uri = postgres_server.new_database()  # type: ignore[attr-defined]

    def store_factory(self) -> functools.partial[SessionStore]:
        return functools.partial(PostgresStore, self.uri)


def test_killed_mid_tool_resumes_from_postgres(tmp_path: Path, postgres_server: object) -> None:
    uri = postgres_server.new_database()  # type: ignore[attr-defined]
    check_crash_mid_tool(uri, tmp_path, open_store=functools.partial(PostgresStore, uri))


def test_the_hook_serves_postgresql_uris_only(postgres_server: object) -> None:
    uri = postgres_server.new_database()  # type: ignore[attr-defined]
    store = pi_store_postgres.pi_session_store(uri)
    assert isinstance(store, PostgresStore)
    store.close()
    assert pi_store_postgres.pi_session_store("sqlite:///x.db") is None


def test_the_password_is_not_shown(postgres_server: object) -> None:
    uri = postgres_server.new_database().replace("postgres@", "postgres:secret@")  # type: ignore[attr-defined]
    with PostgresStore(uri) as store:  # trust authentication ignores the password
        assert "secret" not in store.uri and "***" in store.uri


def test_an_unreachable_server_is_a_clear_error() -> None:
    with pytest.raises(
        SessionStoreError, match=r"cannot use the PostgreSQL session store .*Check that the server runs"
    ):
        PostgresStore("postgresql://nobody@127.0.0.1:1/none", timeout=2)


def test_the_plugin_surface() -> None:
    assert_entry_point("store_postgres", pi_store_postgres, distribution="pi-store-postgres")
    assert_public_imports_only(pi_store_postgres, top_level_only=True)


def test_sessions_move_between_postgres_and_files_through_the_cli(
    tmp_path: Path, postgres_server: object
) -> None:
    """Import a session file, resume it with the real pi-host, export it again."""
    uri = postgres_server.new_database()  # type: ignore[attr-defined]
    pi_host = str(Path(sys.executable).parent / "pi-host")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PI_HOST")}
    env["PI_HOST_DIR"] = str(tmp_path / "agent")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "from postgres"}]))
    env["PI_HOST_FAUX_SCRIPT"] = str(script)
    session_id, lines = sample_session(str(tmp_path))
    source = tmp_path / "s.jsonl"
    source.write_text("\n".join(lines) + "\n")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [pi_host, "--session-store", uri, *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    assert run("sessions", "import", str(source)).returncode == 0
    out = tmp_path / "out.jsonl"
    done = run("sessions", "export", session_id, str(out))
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == source.read_bytes()
    done = run("--provider", "faux", "--session", session_id[:8], "-p", "hello")
    assert done.returncode == 0 and done.stdout == "from postgres\n", done.stderr
    (info,) = json.loads(run("sessions", "list", "--json").stdout)
    assert info["entries"] == len(lines) - 1 + 3  # the prompt, the reply, and the model change


class _StoreThreads:
    """A plugin before this one in the call order: notes the thread each store is opened in."""

    def __init__(self) -> None:
        self.threads: list[int] = []

    @hookimpl
    def pi_session_store(self, uri: str) -> None:
        self.threads.append(threading.get_ident())


async def test_sessions_created_at_once_connect_off_the_loop(
    tmp_path: Path, postgres_server: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``create_session`` connects to the server in a worker thread: the loop, which the
    other sessions share, does not wait for connections (ten at once here)."""
    uri = postgres_server.new_database()  # type: ignore[attr-defined]
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "stored"}]))
    monkeypatch.setenv("PI_HOST_FAUX_SCRIPT", str(script))
    monkeypatch.setenv("PI_HOST_DIR", str(tmp_path / "agent"))
    loop_thread = threading.get_ident()
    probes = [_StoreThreads() for _ in range(10)]
    sessions: dict[int, Any] = {}

    async def one(number: int) -> None:
        project = tmp_path / f"project-{number}"
        project.mkdir()
        options = SessionOptions(
            cwd=str(project),
            provider="faux",
            no_tools=True,
            session_store=uri,
            extra_plugins=[probes[number]],
        )
        session = sessions[number] = await create_session(options)
        await session.prompt(f"session {number}")
        session.session_manager.wait_for_writes()
        await session.shutdown("quit")

    with anyio.fail_after(120):
        async with anyio.create_task_group() as tg:
            for number in range(len(probes)):
                tg.start_soon(one, number)
    for probe in probes:
        assert probe.threads and loop_thread not in probe.threads
    with PostgresStore(uri) as store:
        listed = {info.id: info for info in store.list()}
        assert sorted(listed) == sorted(session.session_manager.session_id for session in sessions.values())
        for number, session in sessions.items():
            lines = store.load(session.session_manager.session_id) or []
            assert any(f"session {number}" in line for line in lines)
            assert not any(
                f'session {other}"' in line for line in lines for other in sessions if other != number
            )
