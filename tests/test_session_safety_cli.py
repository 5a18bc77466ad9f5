"""The session-safety cases end to end: ``pi-host`` in print, JSON and RPC modes refuses a
file that is not a session and leaves it alone, and delivers the answer when the session file
cannot be written."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pi_host.testing import CliRunner, RpcClient
from tests.test_cli import PI_HOST, run

NOTES = b"# notes\n\nnot a session, and must stay exactly as it is\n"


def notes(tmp_path: Path) -> Path:
    path = tmp_path / "notes.md"
    path.write_bytes(NOTES)
    return path


def untouched(tmp_path: Path) -> None:
    assert (tmp_path / "notes.md").read_bytes() == NOTES
    assert not list(tmp_path.glob("notes.md.*"))


def rpc(tmp_path: Path, script: list[dict[str, Any]], *args: str) -> RpcClient:
    """``pi-host --mode rpc --provider faux`` run in ``tmp_path``, agent directory ``agent/``."""
    return CliRunner(tmp_path).rpc("--provider", "faux", *args, replies=script, cwd=tmp_path, timeout=20)


def one_clear_line(stderr: str, *words: str) -> None:
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    for word in words:
        assert word in lines[0], stderr


def test_print_mode_refuses_a_file_that_is_not_a_session(tmp_path: Path) -> None:
    path = notes(tmp_path)
    result = run(["--provider", "faux", "--session", str(path), "-p", "hi"], tmp_path, [{"text": "no"}])
    assert result.returncode == 1 and result.stdout == ""
    one_clear_line(result.stderr, str(path), "not a pi session file", "left unchanged")
    untouched(tmp_path)


def test_export_refuses_a_file_that_is_not_a_session(tmp_path: Path) -> None:
    path = notes(tmp_path)
    result = run(["--export", str(path), str(tmp_path / "out.html")], tmp_path)
    assert result.returncode == 1
    one_clear_line(result.stderr, str(path), "not a pi session file")
    untouched(tmp_path)
    assert not (tmp_path / "out.html").exists()


def test_export_reads_only_an_empty_file_is_not_turned_into_a_session(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"\n\n")
    result = run(["--export", str(empty), str(tmp_path / "out.html")], tmp_path)
    assert result.returncode == 1
    one_clear_line(result.stderr, str(empty), "is empty")
    assert empty.read_bytes() == b"\n\n"


def test_rpc_switch_session_refuses_a_file_that_is_not_a_session(tmp_path: Path) -> None:
    path = notes(tmp_path)
    with rpc(tmp_path, [{"text": "first reply"}], "--session-dir", str(tmp_path / "sessions")) as process:
        process.call({"id": "p", "type": "prompt", "message": "first"})
        process.wait_for("agent_end")
        before = process.call({"id": "s", "type": "get_state"})["data"]
        refused = process.call({"id": "sw", "type": "switch_session", "sessionPath": str(path)})
        assert refused["success"] is False
        assert str(path) in refused["error"] and "not a pi session file" in refused["error"]
        after = process.call({"id": "s2", "type": "get_state"})["data"]
        assert after["sessionFile"] == before["sessionFile"] and after["messageCount"] == 2
        assert process.close() == 0
    untouched(tmp_path)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--session", "{tmp}"], ["is a directory"]),
        (["--fork", "{notes}"], ["not a pi session file"]),
        (["--fork", "{tmp}"], ["is a directory"]),
        (["--session", "/dev/null"], ["/dev/null", "not a regular file"]),
        (["--session-id", "a" * 300], ["300 characters", "at most 200"]),
    ],
    ids=["session-dir", "fork-notes", "fork-dir", "session-device", "long-id"],
)
def test_session_mistakes_on_the_command_line_are_one_clear_line(
    tmp_path: Path, args: list[str], words: list[str]
) -> None:
    path = notes(tmp_path)
    argv = [a.replace("{tmp}", str(tmp_path)).replace("{notes}", str(path)) for a in args]
    result = run(["--provider", "faux", *argv, "-p", "hi"], tmp_path, [{"text": "no"}])
    assert result.returncode == 1 and result.stdout == ""
    one_clear_line(result.stderr, *words)
    untouched(tmp_path)


# -- a session file that cannot be written -----------------------------------------------------


def blocked_dir(tmp_path: Path) -> Path:
    """A session directory whose parent is a regular file: every write fails, even as root."""
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a directory\n")
    return blocker / "sessions"


def test_print_mode_answers_when_the_session_cannot_be_saved(tmp_path: Path) -> None:
    directory = blocked_dir(tmp_path)
    result = run(
        ["--provider", "faux", "--session-dir", str(directory), "-p", "hi"],
        tmp_path,
        [{"text": "the answer"}],
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "the answer\n"
    one_clear_line(result.stderr, str(directory), "could not save the session", "ENOTDIR")


def test_json_mode_ends_the_run_when_the_session_cannot_be_saved(tmp_path: Path) -> None:
    directory = blocked_dir(tmp_path)
    result = run(
        ["--provider", "faux", "--mode", "json", "--session-dir", str(directory), "hi"],
        tmp_path,
        [{"text": "one"}],
    )
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [e["type"] for e in events][-2:] == ["turn_end", "agent_end"]
    assert events[-1]["messages"][-1]["content"][0]["text"] == "one"
    one_clear_line(result.stderr, str(directory), "could not save the session", "Not a directory")


def test_rpc_mode_completes_every_turn_when_the_session_cannot_be_saved(tmp_path: Path) -> None:
    directory = blocked_dir(tmp_path)
    script: list[dict[str, Any]] = [{"text": "one"}, {"text": "two"}]
    with rpc(tmp_path, script, "--session-dir", str(directory)) as process:
        for index in range(2):
            assert process.call({"id": f"p{index}", "type": "prompt", "message": "go"})["success"]
            end = process.wait_for("agent_end")
            assert end["messages"][-1]["content"][0]["text"] == script[index]["text"]
        assert any(r.get("type") == "turn_end" for r in process.records)
        assert process.call({"id": "s", "type": "get_state"})["data"]["messageCount"] == 4
        assert process.close() == 0
        one_clear_line(process.stderr, str(directory), "could not save the session")


def test_a_full_disk_under_an_existing_session_loses_no_answer(tmp_path: Path) -> None:
    first = run(["--provider", "faux", "--session-dir", "s", "-p", "one"], tmp_path, [{"text": "first"}])
    assert first.returncode == 0, first.stderr
    (file,) = (tmp_path / "s").glob("*.jsonl")
    size = file.stat().st_size

    def full_disk() -> None:
        # Writes past the limit fail with EFBIG, as a full disk fails them with ENOSPC; root too.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size + 100, resource.RLIM_INFINITY))

    environ = {k: v for k, v in os.environ.items() if not k.startswith("PI_HOST")}
    environ.update(PI_HOST_DIR=str(tmp_path / "agent"), PI_HOST_FAUX_SCRIPT=str(tmp_path / "full.json"))
    (tmp_path / "full.json").write_text(json.dumps([{"text": "second " * 50}]))
    result = subprocess.run(
        [PI_HOST, "--provider", "faux", "--session", str(file), "-p", "two"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=environ,
        timeout=60,
        stdin=subprocess.DEVNULL,
        preexec_fn=full_disk,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "second " * 50 + "\n"
    one_clear_line(result.stderr, str(file), "could not save the session", "EFBIG")
