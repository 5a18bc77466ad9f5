"""SIGKILL a real ``pi-host`` process mid-run: the session file loads, losing at most the
message in flight, and the session can be continued (issue 4, crash safety).

The process runs in JSON mode on the scripted faux provider (``PI_HOST_FAUX_SCRIPT``); the
test reads its event stream and kills it at a known point: while a reply streams slowly
(``delayMs``) or while the ``bash`` tool runs ``sleep``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pi_host.messages import AssistantMessage, TextContent, ToolResultMessage, UserMessage
from pi_host.session import SessionManager

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")

PI_HOST = shutil.which("pi-host") or str(Path(sys.executable).parent / "pi-host")


def environment(tmp_path: Path, script: list[dict[str, Any]]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PI_HOST")}
    env.pop("ANTHROPIC_API_KEY", None)
    env.pop("OPENAI_API_KEY", None)
    env["PI_HOST_DIR"] = str(tmp_path / "agent")
    path = tmp_path / f"script-{len(list(tmp_path.glob('script-*')))}.json"
    path.write_text(json.dumps(script))
    env["PI_HOST_FAUX_SCRIPT"] = str(path)
    return env


def session_files(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "agent" / "sessions").glob("*/*.jsonl"))


def run_until(
    tmp_path: Path, script: list[dict[str, Any]], prompt: str, stop: Callable[[dict[str, Any]], bool]
) -> list[dict[str, Any]]:
    """Start ``pi-host --mode json``, read events until ``stop(event)``, then SIGKILL it."""
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    process = subprocess.Popen(
        [PI_HOST, "--provider", "faux", "--mode", "json", prompt],
        cwd=project,
        env=environment(tmp_path, script),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # the kill reaches the bash tool's `sleep` too
    )
    events: list[dict[str, Any]] = []
    try:
        assert process.stdout is not None
        for line in _lines(process.stdout):
            event = json.loads(line)
            events.append(event)
            if stop(event):
                os.killpg(process.pid, signal.SIGKILL)
                break
        else:
            stderr = process.stderr.read().decode() if process.stderr else ""
            pytest.fail(f"pi-host ended before the kill point; stderr:\n{stderr}")
        assert process.wait(timeout=10) == -signal.SIGKILL
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
    return events


def _lines(stream: Any) -> Iterator[bytes]:
    while line := stream.readline():
        if line.strip():
            yield line


def loaded(tmp_path: Path) -> SessionManager:
    (file,) = session_files(tmp_path)
    manager = SessionManager.open(file)
    assert manager.warnings == []
    return manager


def roles(manager: SessionManager) -> list[str]:
    return [m.role for m in manager.build_session_context().messages]


def continue_session(tmp_path: Path, file: Path, reply: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PI_HOST, "--provider", "faux", "--session", str(file), "-p", "go on"],
        cwd=tmp_path / "project",
        env=environment(tmp_path, [{"text": reply}]),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_killed_while_a_reply_streams(tmp_path: Path) -> None:
    script: list[dict[str, Any]] = [
        {"toolCalls": [{"name": "bash", "arguments": {"command": "echo ready"}, "id": "call_1"}]},
        {"text": "a long answer " * 200, "delayMs": 20},
    ]

    tool_done = False

    def stop(event: dict[str, Any]) -> bool:
        """The second reply is streaming text (the first one's tool has finished)."""
        nonlocal tool_done
        tool_done = tool_done or event.get("type") == "tool_execution_end"
        update = event.get("assistantMessageEvent", {}).get("type")
        return tool_done and event.get("type") == "message_update" and update == "text_delta"

    run_until(tmp_path, script, "run echo", stop)
    manager = loaded(tmp_path)
    # Everything up to the reply in flight is on disk; that reply is lost.
    assert roles(manager) == ["user", "assistant", "toolResult"]
    result = manager.build_session_context().messages[2]
    assert isinstance(result, ToolResultMessage)
    assert "ready" in result.content[0].text  # type: ignore[union-attr]

    (file,) = session_files(tmp_path)
    done = continue_session(tmp_path, file, "resumed fine")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "resumed fine\n"
    assert roles(loaded(tmp_path)) == ["user", "assistant", "toolResult", "user", "assistant"]


def test_killed_while_a_tool_runs(tmp_path: Path) -> None:
    script = [
        {
            "text": "Sleeping.",
            "toolCalls": [{"name": "bash", "arguments": {"command": "sleep 30"}, "id": "call_1"}],
        }
    ]

    def tool_running(event: dict[str, Any]) -> bool:
        return event.get("type") == "tool_execution_start"

    run_until(tmp_path, script, "sleep please", tool_running)
    manager = loaded(tmp_path)
    # The reply that asked for the tool is on disk; the tool result in flight is lost.
    assert roles(manager) == ["user", "assistant"]
    user, reply = manager.build_session_context().messages
    assert isinstance(user, UserMessage) and isinstance(reply, AssistantMessage)
    assert reply.content[0] == TextContent(text="Sleeping.")

    # The dangling tool call does not block continuing the session.
    (file,) = session_files(tmp_path)
    done = continue_session(tmp_path, file, "after the crash")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "after the crash\n"
    assert roles(loaded(tmp_path)) == ["user", "assistant", "user", "assistant"]


def test_killed_during_the_first_reply_leaves_no_file(tmp_path: Path) -> None:
    # pi creates the session file lazily, with the first assistant message (issue 4, notes
    # §3.11): a crash before that leaves nothing to load, and nothing half-written.
    script = [{"text": "a slow first answer " * 100, "delayMs": 20}]

    def first_text_delta(event: dict[str, Any]) -> bool:
        return event.get("type") == "message_update"

    run_until(tmp_path, script, "hello", first_text_delta)
    assert session_files(tmp_path) == []
