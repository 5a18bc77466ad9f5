"""``pi-host sessions list|export|import`` and ``--session-store`` (issue 21): sessions move
between stores byte for byte, an exported session opens in pi 0.73, a session resumes from
its store, and a process killed mid-tool resumes from the store with the call repaired."""

from __future__ import annotations

import functools
import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pi_host.session import JsonlStore, SessionManager, SqliteStore
from pi_host.testing import check_crash_mid_tool
from tests.test_runtime_crash import PI_HOST, environment
from tests.test_session_pi_compat import _build_rich_session, _comparable, _our_view, _pi_view

DATA = Path(__file__).parent / "data" / "session"


def pi_host(
    tmp_path: Path, *args: str, script: list[dict[str, Any]] | None = None
) -> subprocess.CompletedProcess[str]:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    return subprocess.run(
        [PI_HOST, *args],
        cwd=project,
        env=environment(tmp_path, script or [{"text": "unused"}]),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_import_then_export_is_byte_identical_and_opens_in_pi(tmp_path: Path) -> None:
    source = _build_rich_session(tmp_path / "files").session_file
    assert source is not None
    uri = f"sqlite:///{tmp_path}/store.db"
    done = pi_host(tmp_path, "--session-store", uri, "sessions", "import", str(source))
    assert done.returncode == 0, done.stderr
    listed = pi_host(tmp_path, "sessions", "list", "--json", "--session-store", uri)
    (info,) = json.loads(listed.stdout)
    assert info["cwd"] == "/home/user/project"
    assert info["entries"] == len(source.read_bytes().splitlines()) - 1

    out = tmp_path / "exported.jsonl"
    done = pi_host(tmp_path, "--session-store", uri, "sessions", "export", info["id"][:8], str(out))
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == source.read_bytes()
    # Export never overwrites a file.
    again = pi_host(tmp_path, "--session-store", uri, "sessions", "export", info["id"], str(out))
    assert again.returncode == 1 and "exists" in again.stderr
    # To stdout, too.
    shown = pi_host(tmp_path, "--session-store", uri, "sessions", "export", info["id"])
    assert shown.stdout.encode() == source.read_bytes()
    pi = _pi_view(out)
    assert _comparable(_our_view(SessionManager.open(out))) == _comparable(pi)


def test_import_migrates_an_old_file_and_leaves_it_alone(tmp_path: Path) -> None:
    (v1,) = sorted(DATA.glob("*v1*.jsonl"))[:1]
    copy = tmp_path / "old.jsonl"
    copy.write_bytes(v1.read_bytes() + b'{"torn": \n')
    uri = f"sqlite:///{tmp_path}/store.db"
    done = pi_host(tmp_path, "--session-store", uri, "sessions", "import", str(copy))
    assert done.returncode == 0, done.stderr
    assert "migrated from session format version 1" in done.stderr
    assert "skipped line" in done.stderr
    assert copy.read_bytes() == v1.read_bytes() + b'{"torn": \n'
    store = SqliteStore(tmp_path / "store.db")
    (info,) = store.list()
    manager = SessionManager.open_stored(store, info.id)
    assert manager.header.version == 3 and manager.warnings == []
    expected = SessionManager.open(_copied(v1, tmp_path / "migrated.jsonl"))
    assert [m.role for m in manager.build_session_context().messages] == [
        m.role for m in expected.build_session_context().messages
    ]


def _copied(source: Path, target: Path) -> Path:
    target.write_bytes(source.read_bytes())
    return target


def test_import_refuses_a_file_that_is_not_a_session(tmp_path: Path) -> None:
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"hello": 1}\n')
    done = pi_host(
        tmp_path, "--session-store", f"sqlite:///{tmp_path}/s.db", "sessions", "import", str(notes)
    )
    assert done.returncode == 1
    assert "is not a pi session file" in done.stderr and str(notes) in done.stderr


def test_an_unknown_store_scheme_names_the_remedy(tmp_path: Path) -> None:
    done = pi_host(tmp_path, "--session-store", "mongodb://x/y", "--provider", "faux", "-p", "hi")
    assert done.returncode != 0
    assert "no session store serves mongodb: URIs" in done.stderr


@pytest.mark.parametrize("kind", ["sqlite", "jsonl"])
def test_a_session_continues_from_its_store(tmp_path: Path, kind: str) -> None:
    uri = f"sqlite:///{tmp_path}/s.db" if kind == "sqlite" else f"jsonl:{tmp_path}/elsewhere"
    first = pi_host(
        tmp_path, "--session-store", uri, "--provider", "faux", "-p", "one", script=[{"text": "A"}]
    )
    assert first.returncode == 0 and first.stdout == "A\n", first.stderr
    second = pi_host(
        tmp_path, "--session-store", uri, "--provider", "faux", "-c", "-p", "two", script=[{"text": "B"}]
    )
    assert second.returncode == 0 and second.stdout == "B\n", second.stderr
    assert not (tmp_path / "agent" / "sessions").exists()  # nothing went to the default files
    listed = json.loads(pi_host(tmp_path, "--session-store", uri, "sessions", "list", "--json").stdout)
    assert [info["entries"] for info in listed] == [6]  # model, thinking level, 2 x (user, assistant)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
@pytest.mark.parametrize("kind", ["sqlite", "jsonl"])
def test_killed_mid_tool_resumes_from_the_store_with_the_call_repaired(tmp_path: Path, kind: str) -> None:
    """The JSONL path's crash repair (tests/test_runtime_crash.py), from a store."""
    if kind == "sqlite":
        uri, factory = f"sqlite:///{tmp_path}/s.db", functools.partial(SqliteStore, tmp_path / "s.db")
    else:
        uri, factory = f"jsonl:{tmp_path}/files", functools.partial(JsonlStore, tmp_path / "files")
    check_crash_mid_tool(uri, tmp_path / "work", open_store=factory)
