"""The guard in every mode, through the real ``pi-host`` command on the faux provider.

Print and JSON modes run to completion; RPC mode is driven by a scripted client answering
``extension_ui_request`` dialogs; the interactive mode runs in a pseudo-terminal and is
answered with the keyboard.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pi_guard
import pytest

from pi_host.testing import CliResult, CliRunner, RpcClient, isolated_environ
from tests.interactive_support.screen import Screen

PI_HOST = shutil.which("pi-host") or str(Path(sys.executable).parent / "pi-host")
TIMEOUT = 30.0


def write_call(content: str, path: str = "out.txt") -> dict[str, Any]:
    return {"toolCalls": [{"name": "write", "arguments": {"path": path, "content": content}}]}


class Setup:
    """An agent directory with settings, a project directory and a faux script."""

    def __init__(self, tmp_path: Path, settings: dict[str, Any], script: list[dict[str, Any]]) -> None:
        self.cli = CliRunner(tmp_path)
        self.agent, self.project, self.home = self.cli.agent_dir, self.cli.cwd, self.cli.home
        (self.agent / "settings.json").write_text(json.dumps(settings))
        self.script = tmp_path / "faux.json"
        self.script.write_text(json.dumps(script))
        self.faux = {"PI_HOST_FAUX_SCRIPT": str(self.script)}
        self.env = {**isolated_environ(self.home, self.agent), **self.faux}

    def run(self, *args: str) -> CliResult:
        return self.cli("--provider", "faux", *args, env=self.faux, timeout=60)

    def audit(self) -> list[dict[str, Any]]:
        entries = []
        for file in (self.agent / "sessions").rglob("*.jsonl"):
            for line in file.read_text().splitlines():
                entry = json.loads(line)
                if entry.get("type") == "custom" and entry.get("customType") == pi_guard.AUDIT_ENTRY_TYPE:
                    entries.append(entry["data"])
        return entries


# -- print and JSON ---------------------------------------------------------------------------


def test_print_mode_denies_an_unapproved_write_and_finishes(tmp_path: Path) -> None:
    setup = Setup(tmp_path, {"permissions": {}}, [write_call("x"), {"text": "carried on"}])
    result = setup.run("-p", "write it")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "carried on\n"
    assert not (setup.project / "out.txt").exists()
    (entry,) = setup.audit()
    assert entry["decision"] == "deny" and entry["basis"] == "nonInteractive" and entry["toolName"] == "write"


def test_print_mode_with_an_allow_rule_and_a_deny_rule(tmp_path: Path) -> None:
    settings = {"permissions": {"allow": ["write(out.txt)"], "deny": ["read(**/.env)"]}}
    script = [
        {
            "toolCalls": [
                {"name": "write", "arguments": {"path": "out.txt", "content": "allowed"}},
                {"name": "read", "arguments": {"path": "sub/../.env"}},
            ]
        },
        {"text": "done"},
    ]
    setup = Setup(tmp_path, settings, script)
    (setup.project / ".env").write_text("SECRET=1")
    result = setup.run("--mode", "json", "go")
    assert result.returncode == 0, result.stderr
    ends = [json.loads(line) for line in result.stdout.splitlines() if '"tool_execution_end"' in line]
    by_tool = {e["toolName"]: e for e in ends}  # a blocked call ends first: it never runs
    assert {name: e["isError"] for name, e in by_tool.items()} == {"write": False, "read": True}
    reason = by_tool["read"]["result"]["content"][0]["text"]
    assert reason.startswith("pi-guard: read on") and 'deny rule "read(**/.env)"' in reason
    assert "SECRET" not in result.stdout
    assert (setup.project / "out.txt").read_text() == "allowed"
    assert json.loads(result.stdout.splitlines()[-1])["type"] == "agent_end"


def test_permission_mode_flag_read_only_and_yolo(tmp_path: Path) -> None:
    script = [write_call("x"), {"text": "done"}]
    setup = Setup(tmp_path, {}, script)
    result = setup.run("--permission-mode", "read-only", "--mode", "json", "go")
    assert result.returncode == 0, result.stderr
    end = next(json.loads(line) for line in result.stdout.splitlines() if '"tool_execution_end"' in line)
    assert end["isError"] and "read-only mode" in end["result"]["content"][0]["text"]
    assert not (setup.project / "out.txt").exists()
    yolo = setup.run("--permission-mode", "yolo", "-p", "go")
    assert yolo.returncode == 0, yolo.stderr
    assert (setup.project / "out.txt").read_text() == "x"


def test_non_interactive_allow_setting_in_json_mode(tmp_path: Path) -> None:
    setup = Setup(tmp_path, {"permissions": {"nonInteractive": "allow"}}, [write_call("y"), {"text": "done"}])
    assert setup.run("--mode", "json", "go").returncode == 0
    assert (setup.project / "out.txt").read_text() == "y"
    assert setup.audit()[0]["basis"] == "nonInteractive"


# -- RPC ----------------------------------------------------------------------------------------


def dialog(client: RpcClient) -> dict[str, Any]:
    """The next dialog the guard opens (status updates are requests too, and skipped)."""
    return client.wait_for(
        lambda r: r.get("type") == "extension_ui_request" and r.get("method") in ("select", "input")
    )


@pytest.fixture
def rpc(tmp_path: Path) -> Any:
    clients: list[RpcClient] = []

    def start(settings: dict[str, Any], script: list[dict[str, Any]], *args: str) -> tuple[Setup, RpcClient]:
        setup = Setup(tmp_path, settings, script)
        client = setup.cli.rpc("--provider", "faux", *args, env=setup.faux, timeout=TIMEOUT)
        clients.append(client)
        return setup, client

    yield start
    for client in clients:
        client.close()


def test_rpc_ask_then_always_allow_this_session(rpc: Any) -> None:
    script = [write_call("first"), write_call("second"), {"text": "done"}]
    setup, client = rpc({"permissions": {}}, script)
    client.send({"id": "1", "type": "prompt", "message": "write twice"})
    request = dialog(client)
    assert request["method"] == "select"
    assert request["options"] == [
        pi_guard.ALLOW_ONCE,
        pi_guard.ALLOW_SESSION,
        pi_guard.ALLOW_PROJECT,
        pi_guard.DENY,
        pi_guard.DENY_WITH_REASON,
    ]
    assert "write on" in request["title"] and "out.txt" in request["title"]
    client.send({"type": "extension_ui_response", "id": request["id"], "value": pi_guard.ALLOW_SESSION})
    # the second write to the same file is granted: no second dialog before the run ends
    ended = client.wait_for(
        lambda r: r.get("type") in ("agent_end", "extension_ui_request") and r.get("method") != "setStatus"
    )
    assert ended["type"] == "agent_end"
    assert (setup.project / "out.txt").read_text() == "second"


def test_rpc_deny_with_a_reason(rpc: Any) -> None:
    setup, client = rpc({"permissions": {}}, [write_call("x"), {"text": "done"}])
    client.send({"id": "1", "type": "prompt", "message": "go"})
    select = dialog(client)
    client.send({"type": "extension_ui_response", "id": select["id"], "value": pi_guard.DENY_WITH_REASON})
    asked = dialog(client)
    assert asked["method"] == "input"
    client.send({"type": "extension_ui_response", "id": asked["id"], "value": "not in this repo"})
    end = client.wait_for("tool_execution_end")
    assert end["isError"] is True
    assert "the user denied write on" in end["result"]["content"][0]["text"]
    assert "not in this repo" in end["result"]["content"][0]["text"]
    client.wait_for("agent_end")
    assert not (setup.project / "out.txt").exists()


def test_rpc_read_only_via_the_command(rpc: Any) -> None:
    setup, client = rpc({}, [write_call("x"), {"text": "done"}])
    client.call({"id": "1", "type": "prompt", "message": "/permissions read-only"})
    client.send({"id": "2", "type": "prompt", "message": "go"})
    end = client.wait_for("tool_execution_end")
    assert end["isError"] and "read-only mode" in end["result"]["content"][0]["text"]
    client.wait_for("agent_end")
    assert not (setup.project / "out.txt").exists()


# -- interactive, in a pseudo-terminal ------------------------------------------------------------

pexpect = pytest.importorskip("pexpect")


class Pty:
    """``pi-host`` in a pseudo-terminal, its output fed to a screen model.

    prompt_toolkit redraws only the cells that changed and moves the cursor over the others,
    so the raw byte stream, even with its escape sequences removed, does not hold the words
    on the screen: which of a dialog's spaces get skipped depends on what the frame before
    showed there, that is on timing. Waits read the modelled screen and its scrollback.
    """

    def __init__(self, setup: Setup, *args: str) -> None:
        env = {**setup.env, "TERM": "xterm-256color", "PROMPT_TOOLKIT_NO_CPR": "1"}
        env.pop("NO_COLOR", None)
        self.screen = Screen(40, 140)
        self.child = pexpect.spawn(
            PI_HOST,
            ["--provider", "faux", *args],
            cwd=str(setup.project),
            env=env,
            dimensions=(40, 140),
            encoding="utf-8",
            codec_errors="replace",
        )

    @property
    def text(self) -> str:
        """The scrollback and the screen, as they are now."""
        return self.screen.text()

    def wait_for(self, condition: str | Callable[[], bool], *, timeout: float = TIMEOUT) -> None:
        """Read until ``condition`` holds: a string shown in the scrollback or on the screen,
        or a predicate."""
        check = (lambda: condition in self.text) if isinstance(condition, str) else condition
        deadline = time.monotonic() + timeout
        while not check():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {condition!r}; screen:\n{self.text[-3000:]}")
            try:
                self.screen.feed(self.child.read_nonblocking(65536, timeout=0.1))
            except pexpect.TIMEOUT:
                continue

    def wait_idle(self) -> None:
        """Until the run is over: keys typed then start a new prompt, not a steering message."""
        self.wait_for(lambda: "Working..." not in self.screen.screen_text())

    def send(self, keys: str) -> None:
        self.child.send(keys)

    def close(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a POSIX pseudo-terminal")
def test_interactive_prompt_in_a_pseudo_terminal(tmp_path: Path) -> None:
    script = [write_call("first"), {"text": "wrote first"}, write_call("second"), {"text": "wrote second"}]
    setup = Setup(tmp_path, {"permissions": {}}, script)
    term = Pty(setup)
    try:
        term.wait_for("(auto)")  # the footer: the app is up
        term.send("please write\r")
        term.wait_for(pi_guard.ALLOW_SESSION)
        term.send("\x1b[B")  # down: "Always allow this session"
        term.send("\r")
        term.wait_for("wrote first")
        assert (setup.project / "out.txt").read_text() == "first"
        term.wait_idle()
        term.send("again\r")
        term.wait_for("wrote second")  # no dialog: the session grant applies
        assert (setup.project / "out.txt").read_text() == "second"
    finally:
        term.close()
    decisions = [e for e in setup.audit() if e.get("event") == "decision"]
    assert [e["answer"] for e in decisions] == [pi_guard.ALLOW_SESSION]


def test_rpc_allow_and_deny_rules_need_no_dialog(rpc: Any) -> None:
    settings = {"permissions": {"allow": ["write(ok.txt)"], "deny": ["write(no.txt)"]}}
    script = [write_call("yes", "ok.txt"), write_call("no", "no.txt"), {"text": "done"}]
    setup, client = rpc(settings, script)
    client.send({"id": "1", "type": "prompt", "message": "go"})
    ends = []
    while len(ends) < 2:
        record = client.wait_for(lambda r: r.get("type") in ("tool_execution_end", "extension_ui_request"))
        assert record["type"] == "tool_execution_end" or record.get("method") not in ("select", "input")
        if record["type"] == "tool_execution_end":
            ends.append(record)
    assert [e["isError"] for e in ends] == [False, True]
    assert 'deny rule "write(no.txt)"' in ends[1]["result"]["content"][0]["text"]
    client.wait_for("agent_end")
    assert (setup.project / "ok.txt").read_text() == "yes" and not (setup.project / "no.txt").exists()


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a POSIX pseudo-terminal")
def test_interactive_allow_deny_and_read_only(tmp_path: Path) -> None:
    settings = {"permissions": {"allow": ["write(ok.txt)"], "deny": ["write(no.txt)"]}}
    script = [
        write_call("one", "ok.txt"),
        write_call("x", "no.txt"),
        {"text": "first run over"},
        write_call("two", "ok.txt"),
        {"text": "second run over"},
    ]
    setup = Setup(tmp_path, settings, script)
    term = Pty(setup)
    try:
        term.wait_for("(auto)")
        term.send("go\r")
        term.wait_for("first run over")
        assert "is blocked by the deny rule" in term.text  # the error result is shown
        assert (setup.project / "ok.txt").read_text() == "one" and not (setup.project / "no.txt").exists()
        term.wait_idle()
        term.send("/permissions read-only\r")
        term.wait_for("pi-guard mode: read-only")
        term.send("again\r")
        term.wait_for("second run over")
        assert (setup.project / "ok.txt").read_text() == "one"  # refused in read-only mode
    finally:
        term.close()
    decisions = [(e.get("event"), e.get("decision"), e.get("basis")) for e in setup.audit()]
    assert decisions == [("decision", "deny", "rule"), ("mode", None, None), ("decision", "deny", "mode")]
