"""RPC mode: the children's lines carry their id, ``abort`` stops every child, and the parent's
stats count what the children spent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pi_host import SessionManager
from pi_host.testing import CliRunner, RpcClient

TIMEOUT = 60.0


def rpc_mode(tmp_path: Path, script: list[dict[str, Any]], plugins: str = "subagents") -> RpcClient:
    """``pi-host --mode rpc`` with only ``plugins`` loaded, on the faux script ``script``."""
    runner = CliRunner(tmp_path)
    return runner.rpc("--provider", "faux", replies=script, env={"PI_HOST_PLUGINS": plugins}, timeout=TIMEOUT)


def test_rpc_abort_stops_every_child_and_lines_carry_the_child_id(tmp_path: Path) -> None:
    # Each host replays the faux script from its start: the parent's first reply starts two
    # children; each child's first reply calls task too (a tool it lacks, so it gets an error
    # result), and its second streams slowly until the abort.
    usage = {"input": 10, "output": 5, "totalTokens": 15, "cost": {"total": 0.25}}
    calls = [
        {"name": "task", "arguments": {"description": f"job {n}", "prompt": f"Do job {n}."}} for n in range(2)
    ]
    slow = {"delayMs": 200, "text": " ".join(["word"] * 300)}
    rpc = rpc_mode(tmp_path, [{"toolCalls": calls, "usage": usage}, slow, {"text": "unused"}])
    try:
        rpc.send({"id": "p", "type": "prompt", "message": "Do both jobs."})
        starts: dict[str, dict[str, Any]] = {}
        turns: set[str] = set()
        while len(turns) < 2:
            record = rpc.wait_for(lambda r: r["type"] in ("subagent_start", "subagent_event"))
            if record["type"] == "subagent_start":
                starts[record["subagentId"]] = record
            elif record["event"]["type"] == "tool_execution_end":
                turns.add(record["subagentId"])  # its first turn is done; the slow one streams
        assert set(starts) == turns
        assert rpc.call({"id": "a", "type": "abort"})["success"] is True
        # The ends read while awaiting the response are in records, and still unread.
        while len([r for r in rpc.records if r["type"] == "subagent_end"]) < 2:
            rpc.wait_for("subagent_end")
        ends = [r for r in rpc.records if r["type"] == "subagent_end"]
        assert sorted(e["status"] for e in ends) == ["aborted", "aborted"]
        assert {e["subagentId"] for e in ends} == set(starts)
        forwarded = [r for r in rpc.records if r["type"] == "subagent_event"]
        assert {r["subagentId"] for r in forwarded} == set(starts)
        assert any(r["type"] == "agent_end" for r in rpc.records)  # pi answers abort once idle
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
    rpc = rpc_mode(tmp_path, script, plugins="subagents,bash")
    try:
        rpc.send({"id": "p", "type": "prompt", "message": "Do both jobs."})
        waiting: dict[str, dict[str, Any]] = {}
        while len(waiting) < 2:
            record = rpc.wait_for("subagent_event")
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
        end = rpc.wait_for("subagent_end")
        assert end["subagentId"] == stopped and end["status"] == "aborted"
        go.write_text("")
        done = rpc.wait_for("subagent_end")
        assert done["subagentId"] == other and done["status"] == "done"
        rpc.wait_for("agent_end")
    finally:
        assert rpc.close() == 0
    results = {
        r["toolCallId"]: r["result"]["content"][0]["text"]
        for r in rpc.records
        if r["type"] == "tool_execution_end" and r["toolName"] == "task"
    }
    by_child = {r["subagentId"]: r["toolCallId"] for r in rpc.records if r["type"] == "subagent_start"}
    assert "was aborted by the user" in results[by_child[stopped]]
    assert results[by_child[other]] == "child finished"
    # The parent went on after its children: its own bash ran and it answered.
    assert [r for r in rpc.records if r["type"] == "tool_execution_end" and r["toolName"] == "bash"]
    opened = SessionManager.open(Path(_file(rpc, stopped)))
    assert opened.warnings == []
    last = opened.build_session_context().messages[-1]
    assert last.role == "assistant" and last.stop_reason == "aborted"


def _file(rpc: RpcClient, subagent_id: str) -> str:
    return next(
        r["sessionFile"]
        for r in rpc.records
        if r["type"] == "subagent_start" and r["subagentId"] == subagent_id
    )


def test_rpc_reports_a_malformed_definition_as_an_event_line(tmp_path: Path) -> None:
    agents = tmp_path / "agent" / "agents"
    agents.mkdir(parents=True)
    broken = agents / "broken.md"
    broken.write_text("---\nname: broken\ndescription: [unclosed\n---\nBody.\n")
    rpc = rpc_mode(tmp_path, [{"text": "hi"}])
    try:
        rpc.send({"id": "p", "type": "prompt", "message": "hello"})
        error = rpc.wait_for("subagent_definition_error")
        assert error["path"] == str(broken) and error["line"] == 3
        assert "invalid YAML frontmatter" in error["message"]
        rpc.wait_for("agent_end")
    finally:
        assert rpc.close() == 0
