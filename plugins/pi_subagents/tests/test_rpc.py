"""RPC mode: the children's lines carry their id, ``abort`` stops every child, and the parent's
stats count what the children spent."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
from pathlib import Path
from typing import Any

from pi_host import SessionManager
from tests.pi_reference import PI_HOST

TIMEOUT = 60.0


class Rpc:
    """``pi-host --mode rpc`` with only pi-subagents loaded, on the faux script ``script``."""

    def __init__(self, tmp_path: Path, script: list[dict[str, Any]], plugins: str = "subagents") -> None:
        (tmp_path / "script.json").write_text(json.dumps(script))
        (tmp_path / "project").mkdir()
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("PI_HOST")},
            "HOME": str(tmp_path),
            "PI_HOST_DIR": str(tmp_path / "agent"),
            "PI_HOST_FAUX_SCRIPT": str(tmp_path / "script.json"),
            "PI_HOST_PLUGINS": plugins,
        }
        self.proc = subprocess.Popen(
            [PI_HOST, "--mode", "rpc", "--provider", "faux"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=tmp_path / "project",
            env=env,
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for raw in iter(self.proc.stdout.readline, b""):
            self.lines.put(raw)
        self.lines.put(None)

    def send(self, command: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(command).encode() + b"\n")
        self.proc.stdin.flush()

    def until(self, predicate: Any) -> dict[str, Any]:
        while True:
            raw = self.lines.get(timeout=TIMEOUT)
            if raw is None:
                stderr = self.proc.stderr.read().decode() if self.proc.stderr else ""
                raise AssertionError(f"pi-host closed stdout; stderr:\n{stderr}")
            record: dict[str, Any] = json.loads(raw)
            self.seen.append(record)
            if predicate(record):
                return record

    def call(self, command: dict[str, Any]) -> dict[str, Any]:
        self.send(command)
        return self.until(lambda r: r.get("type") == "response" and r.get("id") == command["id"])

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=TIMEOUT)
        finally:
            for stream in (self.proc.stdout, self.proc.stderr):
                if stream is not None:
                    stream.close()


def test_rpc_abort_stops_every_child_and_lines_carry_the_child_id(tmp_path: Path) -> None:
    # Each host replays the faux script from its start: the parent's first reply starts two
    # children; each child's first reply calls task too (a tool it lacks, so it gets an error
    # result), and its second streams slowly until the abort.
    usage = {"input": 10, "output": 5, "totalTokens": 15, "cost": {"total": 0.25}}
    calls = [
        {"name": "task", "arguments": {"description": f"job {n}", "prompt": f"Do job {n}."}} for n in range(2)
    ]
    slow = {"delayMs": 200, "text": " ".join(["word"] * 300)}
    rpc = Rpc(tmp_path, [{"toolCalls": calls, "usage": usage}, slow, {"text": "unused"}])
    try:
        rpc.send({"id": "p", "type": "prompt", "message": "Do both jobs."})
        starts: dict[str, dict[str, Any]] = {}
        turns: set[str] = set()
        while len(turns) < 2:
            record = rpc.until(lambda r: r["type"] in ("subagent_start", "subagent_event"))
            if record["type"] == "subagent_start":
                starts[record["subagentId"]] = record
            elif record["event"]["type"] == "tool_execution_end":
                turns.add(record["subagentId"])  # its first turn is done; the slow one streams
        assert set(starts) == turns
        assert rpc.call({"id": "a", "type": "abort"})["success"] is True
        ends = [r for r in rpc.seen if r["type"] == "subagent_end"]
        while len(ends) < 2:
            ends.append(rpc.until(lambda r: r["type"] == "subagent_end"))
        assert sorted(e["status"] for e in ends) == ["aborted", "aborted"]
        assert {e["subagentId"] for e in ends} == set(starts)
        forwarded = [r for r in rpc.seen if r["type"] == "subagent_event"]
        assert {r["subagentId"] for r in forwarded} == set(starts)
        assert any(r["type"] == "agent_end" for r in rpc.seen)  # pi answers abort once idle
        stats = rpc.call({"id": "s", "type": "get_session_stats"})["data"]
        # The parent's reply (0.25) and each child's first reply (0.25 each, in the task
        # results' details) count; the aborted replies reported no usage.
        assert stats["cost"] == 0.75
        state = rpc.call({"id": "g", "type": "get_state"})["data"]
        assert state["isStreaming"] is False
    finally:
        assert rpc.close() == 0
    for start in starts.values():
        opened = SessionManager.open(Path(start["sessionFile"]))
        assert opened.warnings == []
        last = opened.build_session_context().messages[-1]
        assert last.role == "assistant" and last.stop_reason == "aborted"


def test_rpc_abort_subagent_stops_one_child_and_the_others_and_the_parent_go_on(tmp_path: Path) -> None:
    # Every host replays the script: the parent starts two children; each child's first reply
    # calls task (which it lacks), its second a bash that waits for the file GO, its third
    # answers. One child is aborted while it waits; then GO appears and the other finishes.
    go = tmp_path / "GO"
    command = f"while [ ! -e {go} ]; do sleep 0.05; done; echo released"
    wait = {"name": "bash", "arguments": {"command": command}}
    calls = [
        {"name": "task", "arguments": {"description": f"job {n}", "prompt": f"Do job {n}."}} for n in range(2)
    ]
    script = [{"toolCalls": calls}, {"toolCalls": [wait]}, {"text": "child finished"}]
    rpc = Rpc(tmp_path, script, plugins="subagents,bash")
    try:
        rpc.send({"id": "p", "type": "prompt", "message": "Do both jobs."})
        waiting: dict[str, dict[str, Any]] = {}
        while len(waiting) < 2:
            record = rpc.until(lambda r: r["type"] == "subagent_event")
            event = record["event"]
            if event["type"] == "tool_execution_start" and event["toolName"] == "bash":
                waiting[record["subagentId"]] = record
        stopped, other = sorted(waiting)
        unknown = rpc.call({"id": "u", "type": "abort_subagent", "subagentId": "nope"})
        assert unknown["success"] is False
        assert "No running sub-agent has the id 'nope'" in unknown["error"]
        assert stopped in unknown["error"] and other in unknown["error"]  # it names the running ones
        answer = rpc.call({"id": "a", "type": "abort_subagent", "subagentId": stopped[:-4]})  # a prefix
        assert answer["success"] is True and answer["data"]["subagentId"] == stopped
        end = rpc.until(lambda r: r["type"] == "subagent_end")
        assert end["subagentId"] == stopped and end["status"] == "aborted"
        go.write_text("")
        done = rpc.until(lambda r: r["type"] == "subagent_end")
        assert done["subagentId"] == other and done["status"] == "done"
        rpc.until(lambda r: r["type"] == "agent_end")
    finally:
        assert rpc.close() == 0
    results = {
        r["toolCallId"]: r["result"]["content"][0]["text"]
        for r in rpc.seen
        if r["type"] == "tool_execution_end" and r["toolName"] == "task"
    }
    by_child = {r["subagentId"]: r["toolCallId"] for r in rpc.seen if r["type"] == "subagent_start"}
    assert "was aborted by the user" in results[by_child[stopped]]
    assert results[by_child[other]] == "child finished"
    # The parent went on after its children: its own bash ran and it answered.
    assert [r for r in rpc.seen if r["type"] == "tool_execution_end" and r["toolName"] == "bash"]
    opened = SessionManager.open(Path(_file(rpc, stopped)))
    assert opened.warnings == []
    last = opened.build_session_context().messages[-1]
    assert last.role == "assistant" and last.stop_reason == "aborted"


def _file(rpc: Rpc, subagent_id: str) -> str:
    return next(
        r["sessionFile"] for r in rpc.seen if r["type"] == "subagent_start" and r["subagentId"] == subagent_id
    )


def test_rpc_reports_a_malformed_definition_as_an_event_line(tmp_path: Path) -> None:
    agents = tmp_path / "agent" / "agents"
    agents.mkdir(parents=True)
    broken = agents / "broken.md"
    broken.write_text("---\nname: broken\ndescription: [unclosed\n---\nBody.\n")
    rpc = Rpc(tmp_path, [{"text": "hi"}])
    try:
        rpc.send({"id": "p", "type": "prompt", "message": "hello"})
        error = rpc.until(lambda r: r["type"] == "subagent_definition_error")
        assert error["path"] == str(broken) and error["line"] == 3
        assert "invalid YAML frontmatter" in error["message"]
        rpc.until(lambda r: r["type"] == "agent_end")
    finally:
        assert rpc.close() == 0
