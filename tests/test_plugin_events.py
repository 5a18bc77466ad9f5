"""Regression (#14): what a plugin emits through ``ctx.emit`` reaches JSON and RPC clients as
pi's event lines, and an event that cannot be written never breaks a mode.

Before, a plain pydantic event was dropped silently in JSON mode and raised ``TypeError: ...
not JSON serializable`` in RPC mode (which ended the emitting hook). The plugin here is a
project-local one, as a third party would write it, importing the public API only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pi_host.testing import CliRunner

PLUGIN = """
from typing import Literal

from pydantic import BaseModel

from pi_host import AutoRetryEndEvent, PluginEvent, hookimpl


class MyRetryStart(BaseModel):  # a plain model: pi's auto_retry_start, the plugin's own class
    type: str = "auto_retry_start"
    attempt: int
    max_attempts: int
    delay_ms: int
    error_message: str


class CacheWarmed(PluginEvent):
    type: Literal["cache_warmed"] = "cache_warmed"
    entry_count: int


class NotJson(BaseModel):
    type: str = "not_json"
    value: object


@hookimpl
def pi_agent_end(messages, ctx):
    ctx.emit(MyRetryStart(attempt=1, max_attempts=3, delay_ms=5, error_message="529 overloaded"))
    ctx.emit(CacheWarmed(entry_count=2))
    ctx.emit(NotJson(value=object()))
    ctx.emit(AutoRetryEndEvent(success=True, attempt=1))
"""


def runner(tmp_path: Path) -> CliRunner:
    cli = CliRunner(tmp_path)
    (cli.agent_dir / "settings.json").write_text(json.dumps({"defaultProjectTrust": "always"}))
    plugins = cli.cwd / ".pi" / "plugins"
    plugins.mkdir(parents=True)
    (plugins / "emitter.py").write_text(PLUGIN)
    return cli


def plugin_lines(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    kinds = {"auto_retry_start", "auto_retry_end", "cache_warmed", "extension_error"}
    return [r for r in records if r.get("type") in kinds]


EXPECTED = [
    {
        "type": "auto_retry_start",
        "attempt": 1,
        "maxAttempts": 3,
        "delayMs": 5,
        "errorMessage": "529 overloaded",
    },
    {"type": "cache_warmed", "entryCount": 2},
]


def check(lines: list[dict[str, Any]]) -> None:
    assert lines[:2] == EXPECTED
    error = lines[2]
    assert (error["type"], error["event"]) == ("extension_error", "ctx.emit")
    assert "NotJson" in error["error"] and "JSON" in error["error"]
    # The mode went on: the event after the broken one was written too.
    assert lines[3] == {"type": "auto_retry_end", "success": True, "attempt": 1}


def test_json_mode_writes_plugin_events_as_pi_lines(tmp_path: Path) -> None:
    cli = runner(tmp_path)
    result = cli("--provider", "faux", "--no-session", "--mode", "json", "hi", replies=["hello"])
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    check(plugin_lines(records))
    assert any(r["type"] == "agent_end" for r in records)


def test_rpc_mode_writes_plugin_events_and_keeps_serving(tmp_path: Path) -> None:
    cli = runner(tmp_path)
    commands = [{"id": "1", "type": "prompt", "message": "hi"}, {"id": "2", "type": "get_state"}]
    with cli.rpc("--provider", "faux", "--no-session", replies=["hello"]) as client:
        client.send(commands[0])
        client.wait_for("agent_end")
        client.send(commands[1])
        assert client.close(timeout=30) == 0, client.stderr
        client.read_to_end()  # what came after agent_end, the get_state response too
    records = client.records
    check(plugin_lines(records))
    state = next(r for r in records if r.get("id") == "2")
    assert state["success"] is True
