"""pi-mcp through the real ``pi-host`` command: print, JSON and RPC modes on the faux model."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pi_host.testing import RpcClient

PI_HOST = shutil.which("pi-host") or str(Path(sys.executable).parent / "pi-host")
TIMEOUT = 60.0


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"toolCalls": [{"name": name, "arguments": arguments}]}


def processes_named(marker: str) -> list[int]:
    """Live processes whose command line holds *marker* (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(") ", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


class Setup:
    """An agent directory with servers, a project, a faux script; servers carry a unique name."""

    def __init__(
        self, tmp_path: Path, demo: Any, script: list[dict[str, Any]], settings: dict[str, Any]
    ) -> None:
        self.root = tmp_path
        self.agent, self.project, self.home = tmp_path / "agent", tmp_path / "project", tmp_path / "home"
        for directory in (self.agent, self.project, self.home):
            directory.mkdir(exist_ok=True)
        self.marker = f"srv-{uuid.uuid4().hex[:10]}"
        self.demo = demo
        (self.agent / "settings.json").write_text(json.dumps(settings))
        self.script = tmp_path / "faux.json"
        self.script.write_text(json.dumps(script))
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("PI_HOST", "MCP_"))},
            "HOME": str(self.home),
            "PI_HOST_DIR": str(self.agent),
            "PI_HOST_FAUX_SCRIPT": str(self.script),
            "ANTHROPIC_API_KEY": "",
            "OPENAI_API_KEY": "",
            "NO_COLOR": "1",
        }

    def server(self, *args: str, **extra: Any) -> dict[str, Any]:
        entry: dict[str, Any] = self.demo.stdio(self.marker, *args, **extra)
        return entry

    def servers(self, path: Path, servers: dict[str, Any]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"mcpServers": servers}))

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [PI_HOST, "--provider", "faux", *args],
            cwd=self.project,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            stdin=subprocess.DEVNULL,
        )


@pytest.fixture
def setup(tmp_path: Path, demo: Any) -> Iterator[Any]:
    made: list[Setup] = []

    def make(script: list[dict[str, Any]], settings: dict[str, Any] | None = None) -> Setup:
        made.append(Setup(tmp_path, demo, script, settings or {}))
        return made[-1]

    yield make
    for each in made:
        assert processes_named(each.marker) == [], "an MCP server process outlived pi-host"


def test_json_mode_calls_tools_names_a_broken_server_in_an_event_and_leaves_nothing_behind(
    setup: Any,
) -> None:
    s = setup([call("mcp__demo__echo", text="one"), call("mcp__noisy__add", a=1, b=2), {"text": "done"}])
    s.servers(
        s.agent / "mcp.json",
        {"demo": s.server(), "noisy": s.server("--garbage"), "ghost": {"command": str(s.root / "nothing")}},
    )
    result = s.run("-p", "go", "--mode", "json")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    ends = {e["toolName"]: e for e in events if e["type"] == "tool_execution_end"}
    assert ends["mcp__demo__echo"]["result"]["content"][0]["text"] == f"{s.marker} says: one"
    # A banner line on stdout is noise, not a failure: the server still answers.
    assert ends["mcp__noisy__add"]["result"]["details"]["structuredContent"]["total"] == 3
    failed = [e for e in events if e["type"] == "mcp_server_failed"]
    assert [e["server"] for e in failed] == ["ghost"]
    assert failed[0]["error"].startswith('MCP server "ghost" could not start')
    assert "/mcp restart ghost" in failed[0]["error"]
    # Before the first request: the model was offered the tools of the servers that work.
    first_request = next(i for i, e in enumerate(events) if e["type"] == "turn_start")
    assert events.index(failed[0]) < first_request

    assert 'MCP server "ghost"' not in result.stderr  # the event, not stderr, tells a JSON client


def test_print_mode_names_a_broken_server_on_stderr_and_the_others_work(setup: Any) -> None:
    s = setup([call("mcp__demo__echo", text="two"), {"text": "done"}])
    s.servers(s.agent / "mcp.json", {"demo": s.server(), "ghost": {"command": str(s.root / "nothing")}})
    printed = s.run("-p", "go")
    assert printed.returncode == 0 and printed.stdout.strip() == "done"
    (line,) = [text for text in printed.stderr.splitlines() if "ghost" in text]
    assert line.startswith('pi-mcp: MCP server "ghost" could not start') and "/mcp restart ghost" in line
    assert "mcp_server_failed" not in printed.stdout


def test_an_untrusted_projects_servers_do_not_start(setup: Any) -> None:
    s = setup([call("mcp__proj__echo", text="x"), {"text": "done"}])
    s.servers(s.project / ".mcp.json", {"proj": s.server()})
    result = s.run("-p", "go", "--mode", "json")
    assert f"ignored {s.project / '.mcp.json'}: the project is not trusted" in result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    (end,) = [e for e in events if e["type"] == "tool_execution_end"]
    assert end["isError"] and "not found" in end["result"]["content"][0]["text"]
    assert processes_named(s.marker) == []

    approved = s.run("-p", "go", "--mode", "json", "--approve")
    events = [json.loads(line) for line in approved.stdout.splitlines() if line.startswith("{")]
    (end,) = [e for e in events if e["type"] == "tool_execution_end"]
    assert end["result"]["content"][0]["text"] == f"{s.marker} says: x"


def test_a_server_that_only_prints_garbage_is_named_with_the_cause(setup: Any) -> None:
    s = setup([{"text": "done"}], {"mcp": {"startupTimeoutMs": 3000}})
    s.servers(s.agent / "mcp.json", {"junk": s.demo.garbage(s.marker)})
    result = s.run("-p", "go")
    assert result.returncode == 0 and result.stdout.strip() == "done"
    # One line naming the server, the cause and the remedy; not the SDK's parse traceback.
    (line,) = [text for text in result.stderr.splitlines() if text.strip()]
    assert line.startswith('pi-mcp: MCP server "junk" did not finish starting within 3s')
    assert "not JSON-RPC on stdout ('garbage instead of JSON-RPC'" in line
    assert "check that `" in line


def test_garbage_that_arrives_after_the_start_timeout_is_still_the_named_cause(setup: Any) -> None:
    # The line comes only once pi-host gives up and closes the server's stdin: what a server
    # slower than the start timeout does on a loaded machine, without depending on timing.
    s = setup([{"text": "done"}], {"mcp": {"startupTimeoutMs": 1000}})
    s.servers(s.agent / "mcp.json", {"late": s.demo.garbage(s.marker, "--at-exit")})
    result = s.run("-p", "go")
    assert result.returncode == 0 and result.stdout.strip() == "done"
    (line,) = [text for text in result.stderr.splitlines() if text.strip()]
    assert line.startswith('pi-mcp: MCP server "late" did not finish starting within 1s')
    assert "not JSON-RPC on stdout ('garbage instead of JSON-RPC'" in line


def rpc(setup: Setup) -> RpcClient:
    """``pi-host --mode rpc`` in ``setup``'s environment (which keeps no ``MCP_*`` variables)."""
    argv = [PI_HOST, "--mode", "rpc", "--provider", "faux"]
    return RpcClient(argv, cwd=setup.project, env=setup.env, timeout=TIMEOUT)


def test_rpc_abort_cancels_a_hung_call_and_the_session_goes_on(setup: Any) -> None:
    s = setup(
        [call("mcp__demo__hang"), call("mcp__demo__echo", text="after"), {"text": "done"}],
        {"mcp": {"toolTimeoutMs": 50_000}},
    )
    s.servers(s.agent / "mcp.json", {"demo": s.server()})
    with rpc(s) as client:
        client.send({"id": "1", "type": "prompt", "message": "hang"})
        client.wait_for("tool_execution_start")
        aborted_at = time.monotonic()
        client.send({"id": "2", "type": "abort"})
        end = client.wait_for("tool_execution_end")
        assert end["isError"] and time.monotonic() - aborted_at < 20  # well under the 50 s timeout
        client.wait_for("agent_end")
        client.send({"id": "3", "type": "prompt", "message": "again"})
        end = client.wait_for("tool_execution_end")
        assert end["result"]["content"][0]["text"] == f"{s.marker} says: after"
        client.wait_for("agent_end")


def test_rpc_mode_names_a_server_that_cannot_start_in_an_event_each_try(setup: Any) -> None:
    s = setup(
        [call("mcp__demo__echo", text="one"), {"text": "done"}, {"text": "again"}],
        {"mcp": {"restartBackoffMs": 0}},
    )
    s.servers(s.agent / "mcp.json", {"demo": s.server(), "ghost": {"command": str(s.root / "nothing")}})
    with rpc(s) as client:
        client.send({"id": "1", "type": "prompt", "message": "go"})
        failed = client.wait_for("mcp_server_failed")
        assert failed["server"] == "ghost"
        assert failed["error"].startswith('MCP server "ghost" could not start')
        assert str(s.root / "nothing") in failed["error"] and "/mcp restart ghost" in failed["error"]
        end = client.wait_for("tool_execution_end")
        assert end["result"]["content"][0]["text"] == f"{s.marker} says: one"  # the others work
        client.wait_for("agent_end")
        # The next prompt is a use: the server is tried again, and the failure named again.
        client.send({"id": "2", "type": "prompt", "message": "again"})
        assert client.wait_for(lambda r: r.get("type") in ("mcp_server_failed", "agent_end")) == failed
        client.wait_for("agent_end")


def test_json_mode_end_to_end_over_http_and_stdio_images_errors_a_crash_and_a_timeout(
    setup: Any, http_server: str
) -> None:
    s = setup(
        [
            call("mcp__web__picture"),
            call("mcp__demo__fail", reason="no"),
            call("mcp__demo__crash"),
            call("mcp__demo__echo", text="back"),
            call("mcp__demo__hang"),
            {"text": "done"},
        ]
    )
    s.servers(s.agent / "mcp.json", {"demo": s.server(), "web": {"type": "http", "url": http_server}})
    s.env["MCP_TOOL_TIMEOUT"] = "1500"  # milliseconds, as in Claude Code
    result = s.run("-p", "go", "--mode", "json")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    picture, fail, crash, echo, hang = [e for e in events if e["type"] == "tool_execution_end"]
    # Over streamable HTTP: the caption and the image.
    assert [block["type"] for block in picture["result"]["content"]] == ["text", "image"]
    assert picture["result"]["content"][1]["mimeType"] == "image/png"
    assert fail["isError"] and "refused: no" in fail["result"]["content"][0]["text"]
    assert crash["isError"]
    assert crash["result"]["content"][0]["text"].startswith('MCP server "demo" closed the connection')
    assert echo["result"]["content"][0]["text"] == f"{s.marker} says: back"  # restarted on next use
    assert hang["isError"]
    assert (
        'MCP server "demo" did not answer the call of tool "hang" within 1.5s'
        in (hang["result"]["content"][0]["text"])
    )
    assert "MCP_TOOL_TIMEOUT" in hang["result"]["content"][0]["text"]
    assert events[-1]["type"] == "agent_end"
