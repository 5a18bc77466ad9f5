"""End to end through the ``pi-host`` command: a parent on a fake Anthropic server starts three
children in one turn; JSON lines carry each child's id, and each child's session file is
continued by ``pi-host --session`` and by pi 0.73 with the same context."""

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


def test_three_children_are_linked_tagged_and_each_resumable_by_pi_host_and_pi(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    host_dir, pi_dir = tmp_path / "pi-host-agent", tmp_path / "pi-agent"
    try:
        pi_cli: Path | None = require_pi_cli()
    except pytest.skip.Exception:
        pi_cli = None
    server = AnthropicServer()
    with server:
        for directory in (host_dir, pi_dir):
            directory.mkdir()
            (directory / "models.json").write_text(json.dumps(_models(server)), "utf-8")
        calls = [
            {
                "type": "tool_use",
                "id": f"toolu_0{n}",
                "name": "task",
                "input": {"description": f"count {n}", "prompt": f"Count to {n}."},
            }
            for n in (1, 2, 3)
        ]
        # The three children ask concurrently, in no set order: they get the same answer.
        server.enqueue(
            anthropic_reply(calls, stop_reason="tool_use"),
            *(anthropic_reply("counted") for _ in range(3)),
            anthropic_reply("The children counted."),
        )
        env = {**clean_env(), "PI_HOST_DIR": str(host_dir), "PI_HOST_PLUGINS": "subagents,tools_fs,bash"}
        del env["PI_HOST_DISABLE_PLUGINS"]  # clean_env leaves pi-subagents out of pi comparisons
        done = _run([PI_HOST, "--mode", "json", "Please count."], project, env)
        events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        starts = {e["subagentId"]: e for e in events if e["type"] == "subagent_start"}
        assert len(starts) == 3
        child_events = [e for e in events if e["type"] == "subagent_event"]
        assert {e["subagentId"] for e in child_events} == set(starts)
        assert {"message_end", "agent_end"} <= {e["event"]["type"] for e in child_events}
        ends = [e for e in events if e["type"] == "subagent_end"]
        assert sorted(e["status"] for e in ends) == ["done"] * 3
        # Each child's request had its own context: its task prompt only, and no task tool.
        child_bodies = [request.json() for request in server.requests[1:4]]
        prompts = sorted(json.dumps(body["messages"]) for body in child_bodies)
        assert all(len(body["messages"]) == 1 for body in child_bodies)
        assert [f"Count to {n}." in prompt for n, prompt in zip((1, 2, 3), prompts, strict=True)] == [
            True
        ] * 3
        assert all("task" not in [tool["name"] for tool in body.get("tools", [])] for body in child_bodies)
        # The parent's second request holds its prompt, its calls and the three answers only.
        parent_body = server.requests[4].json()
        assert [m["role"] for m in parent_body["messages"]] == ["user", "assistant", "user"]
        assert "Count to" not in json.dumps(parent_body["messages"][2])

        for number, start in enumerate(starts.values()):
            child_file = Path(start["sessionFile"])
            header = json.loads(child_file.read_text("utf-8").splitlines()[0])
            parents = {p for p in child_file.parent.glob("*.jsonl") if p.name not in _files(starts)}
            assert {Path(header["parentSession"])} == parents
            for_host = tmp_path / f"child-{number}-for-pi-host.jsonl"
            for_pi = tmp_path / f"child-{number}-for-pi.jsonl"
            shutil.copyfile(child_file, for_host)
            shutil.copyfile(child_file, for_pi)
            before = len(server.requests)
            server.enqueue(anthropic_reply("pi-host continues."))
            resumed = _run([PI_HOST, "--session", str(for_host), "-p", "And four?"], project, env)
            assert resumed.stdout == "pi-host continues.\n"
            assert SessionManager.open(for_host).warnings == []
            (host_body,) = (request.json() for request in server.requests[before:])
            assert [m["role"] for m in host_body["messages"]] == ["user", "assistant", "user"]
            if pi_cli is not None:
                server.enqueue(anthropic_reply("pi continues."))
                pi_env = {**clean_env(), "PI_CODING_AGENT_DIR": str(pi_dir), "PI_OFFLINE": "1"}
                by_pi = _run(
                    ["node", str(pi_cli), "--session", str(for_pi), "-p", "And four?"], project, pi_env
                )
                assert by_pi.stdout == "pi continues.\n"
                pi_body = server.requests[-1].json()
                assert host_body["messages"] == pi_body["messages"]
                assert SessionManager.open(for_pi).warnings == []
    if pi_cli is None:
        pytest.skip("pi 0.73 is unavailable: the children's sessions were resumed by pi-host only")


def _files(starts: dict[str, dict[str, Any]]) -> set[str]:
    return {Path(start["sessionFile"]).name for start in starts.values()}


def test_in_a_sqlite_store_a_child_names_its_parent_by_store_uri_and_id(tmp_path: Path) -> None:
    # Every host replays the faux script: the parent calls task; the child calls task too (it
    # lacks the tool) and then answers; the parent answers.
    project = tmp_path / "project"
    project.mkdir()
    script, again = tmp_path / "script.json", tmp_path / "again.json"
    task = {"name": "task", "arguments": {"description": "look", "prompt": "Look around."}}
    script.write_text(json.dumps([{"toolCalls": [task]}, {"text": "looked"}]))
    again.write_text(json.dumps([{"text": "resumed"}]))
    database = tmp_path / "db" / "s.db"
    env = {
        **clean_env(),
        "PI_HOST_DIR": str(tmp_path / "agent"),
        "PI_HOST_PLUGINS": "subagents",
        "PI_HOST_FAUX_SCRIPT": str(script),
    }
    env.pop("PI_HOST_DISABLE_PLUGINS", None)

    def pi_host(*argv: str, faux: Path = script) -> str:
        done = subprocess.run(
            [PI_HOST, *argv],
            cwd=project,
            env={**env, "PI_HOST_FAUX_SCRIPT": str(faux)},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"{argv} failed:\n{done.stderr}"
        return done.stdout

    # A relative URI: the reference must hold from any directory, so it names the file absolutely.
    store = "sqlite:///../db/s.db"
    out = pi_host("--session-store", store, "--provider", "faux", "--mode", "json", "Look.")
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    (start,) = (e for e in events if e["type"] == "subagent_start")
    parent_id = next(e for e in events if e["type"] == "session")["id"]
    child_id = start["subagentId"]
    absolute = f"sqlite:///{database}"
    assert start["sessionFile"] == f"{absolute}#{child_id}"

    listed = {s["id"]: s for s in json.loads(pi_host("--session-store", store, "sessions", "list", "--json"))}
    assert listed[child_id]["parent_session"] == f"{absolute}#{parent_id}"
    assert listed[parent_id]["parent_session"] is None
    text = pi_host("--session-store", store, "sessions", "list")
    (line,) = (line for line in text.splitlines() if line.startswith(child_id))
    assert line.endswith(f"(parent {parent_id})")

    # The reference alone resumes the child, from another directory, and exports it.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    resumed = subprocess.run(
        [PI_HOST, "--session", start["sessionFile"], "--provider", "faux", "-p", "And then?"],
        cwd=elsewhere,
        env={**env, "PI_HOST_FAUX_SCRIPT": str(again)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout == "resumed\n"
    exported = tmp_path / "child.jsonl"
    pi_host("sessions", "export", start["sessionFile"], str(exported))
    opened = SessionManager.open(exported)
    assert opened.header.parent_session == f"{absolute}#{parent_id}"
    roles = [m.role for m in opened.build_session_context().messages]
    assert roles[-2:] == ["user", "assistant"] and len(roles) > 3  # the child's run, then the resumed turn
