"""End to end through the ``pi-host`` command: a parent on a fake Anthropic server starts a child;
JSON lines carry the child's id, and the child's session file is continued by ``pi-host
--session`` and by pi 0.73 with the same context."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pi_host import SessionManager
from tests.fakeservers import AnthropicServer, anthropic_reply
from tests.pi_reference import PI_HOST, clean_env, require_pi_cli

MODEL = ["--provider", "fake", "--model", "fake-1"]


def _models(server: AnthropicServer) -> dict[str, Any]:
    return {
        "providers": {
            "fake": {
                "baseUrl": server.base_url,
                "api": "anthropic-messages",
                "apiKey": "test-key",
                "models": [{"id": "fake-1", "name": "Fake", "contextWindow": 200000, "maxTokens": 8192}],
            }
        }
    }


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [*argv, *MODEL],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"{argv[:2]} failed:\n{done.stderr}"
    return done


def test_child_session_is_linked_tagged_and_resumable_by_pi_host_and_pi(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    host_dir, pi_dir = tmp_path / "pi-host-agent", tmp_path / "pi-agent"
    server = AnthropicServer()
    with server:
        for directory in (host_dir, pi_dir):
            directory.mkdir()
            (directory / "models.json").write_text(json.dumps(_models(server)), "utf-8")
        server.enqueue(
            anthropic_reply(
                [
                    {
                        "type": "tool_use",
                        "id": "toolu_01",
                        "name": "task",
                        "input": {"description": "count", "prompt": "Count to three."},
                    }
                ],
                stop_reason="tool_use",
            ),
            anthropic_reply("one two three"),
            anthropic_reply("The child counted."),
        )
        env = {**clean_env(), "PI_HOST_DIR": str(host_dir), "PI_HOST_PLUGINS": "subagents,tools_fs,bash"}
        del env["PI_HOST_DISABLE_PLUGINS"]  # clean_env leaves pi-subagents out of pi comparisons
        done = _run([PI_HOST, "--mode", "json", "Please count."], project, env)
        events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        start = next(e for e in events if e["type"] == "subagent_start")
        child_events = [e for e in events if e["type"] == "subagent_event"]
        assert child_events and all(e["subagentId"] == start["subagentId"] for e in child_events)
        assert {"message_end", "agent_end"} <= {e["event"]["type"] for e in child_events}
        end = next(e for e in events if e["type"] == "subagent_end")
        assert end["status"] == "done" and end["subagentId"] == start["subagentId"]
        # The child's request had its own context: the task prompt only, and no task tool.
        child_body = server.requests[1].json()
        assert [m["role"] for m in child_body["messages"]] == ["user"]
        assert "task" not in [tool["name"] for tool in child_body.get("tools", [])]

        child_file = Path(start["sessionFile"])
        header = json.loads(child_file.read_text("utf-8").splitlines()[0])
        parent_files = [p for p in child_file.parent.glob("*.jsonl") if p != child_file]
        assert header["parentSession"] == str(parent_files[0])

        for_host = tmp_path / "child-for-pi-host.jsonl"
        for_pi = tmp_path / "child-for-pi.jsonl"
        shutil.copyfile(child_file, for_host)
        shutil.copyfile(child_file, for_pi)
        server.enqueue(anthropic_reply("pi-host continues."), anthropic_reply("pi continues."))
        before = len(server.requests)
        resumed = _run([PI_HOST, "--session", str(for_host), "-p", "And four?"], project, env)
        assert resumed.stdout == "pi-host continues.\n"
        try:
            pi_cli = require_pi_cli()
        except pytest.skip.Exception:
            pi_cli = None
        if pi_cli is not None:
            pi_env = {**clean_env(), "PI_CODING_AGENT_DIR": str(pi_dir), "PI_OFFLINE": "1"}
            by_pi = _run(["node", str(pi_cli), "--session", str(for_pi), "-p", "And four?"], project, pi_env)
            assert by_pi.stdout == "pi continues.\n"
            host_body, pi_body = (request.json() for request in server.requests[before:])
            assert host_body["messages"] == pi_body["messages"]
            assert SessionManager.open(for_pi).warnings == []
        else:
            (host_body,) = (request.json() for request in server.requests[before:])
        texts = [m["content"] for m in host_body["messages"]]
        assert [m["role"] for m in host_body["messages"]] == ["user", "assistant", "user"]
        assert "Count to three." in json.dumps(texts[0])
        assert SessionManager.open(for_host).warnings == []
    if pi_cli is None:
        pytest.skip("pi 0.73 is unavailable: the child session was resumed by pi-host only")
