"""Each first-party plugin can be disabled and leaves a working host (issue 5's acceptance).

Every test runs the installed ``pi-host`` command as a subprocess with
``PI_HOST_DISABLE_PLUGINS=<name>``: a prompt still gets its reply, and the model (or the user)
simply lacks what the plugin adds — its tools in the provider request, ``/compact``, retries.
The tool checks read the real request bodies of a local Anthropic-speaking server.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fakeservers import AnthropicServer, anthropic_reply

TIMEOUT = 30

TOOL_PLUGINS = {"tools_fs": {"read", "edit", "write"}, "bash": {"bash"}}
"""The default-active tools each plugin registers."""


def pi_host_command() -> str:
    found = shutil.which("pi-host") or str(Path(sys.executable).parent / "pi-host")
    if not os.path.exists(found):
        pytest.skip("the pi-host command is not installed")
    return found


def run(
    tmp_path: Path,
    args: list[str],
    *,
    disable: str = "",
    script: list[dict[str, Any]] | None = None,
    settings: dict[str, Any] | None = None,
    models: dict[str, Any] | None = None,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``pi-host`` with a fresh agent directory under ``tmp_path``."""
    agent_dir = tmp_path / "agent"
    agent_dir.mkdir(exist_ok=True)
    (agent_dir / "settings.json").write_text(json.dumps(settings or {}))
    if models is not None:
        (agent_dir / "models.json").write_text(json.dumps(models))
    env = {**os.environ, "PI_HOST_DIR": str(agent_dir), "PI_HOST_DISABLE_PLUGINS": disable}
    env.pop("PI_HOST_PLUGINS", None)
    if script is not None:
        script_file = tmp_path / "script.json"
        script_file.write_text(json.dumps(script))
        env["PI_HOST_FAUX_SCRIPT"] = str(script_file)
    return subprocess.run(
        [pi_host_command(), *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=TIMEOUT,
    )


def json_events(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


@pytest.mark.parametrize("plugin", ["tools_fs", "bash", "compaction", "retry"])
def test_a_prompt_still_gets_its_reply(tmp_path: Path, plugin: str) -> None:
    done = run(
        tmp_path,
        ["--provider", "faux", "--no-session", "-p", "hello?"],
        disable=plugin,
        script=[{"text": "Hello from the faux model."}],
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Hello from the faux model."
    assert "Traceback" not in done.stderr


def anthropic_models(server: AnthropicServer) -> dict[str, Any]:
    return {
        "providers": {
            "fake": {
                "baseUrl": server.base_url,
                "api": "anthropic-messages",
                "apiKey": "test",
                "models": [{"id": "fake-claude", "contextWindow": 200_000, "maxTokens": 4096}],
            }
        }
    }


def requested_tools(tmp_path: Path, disable: str) -> set[str]:
    server = AnthropicServer([anthropic_reply("Done.")])
    with server:
        done = run(
            tmp_path,
            ["--provider", "fake", "--model", "fake-claude", "--no-session", "-p", "hello?"],
            disable=disable,
            models=anthropic_models(server),
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "Done."
        (request,) = server.requests
    return {tool["name"] for tool in request.json().get("tools", [])}


@pytest.mark.parametrize("plugin", sorted(TOOL_PLUGINS))
def test_a_disabled_tool_plugin_takes_its_tools_out_of_the_request(tmp_path: Path, plugin: str) -> None:
    everything = requested_tools(tmp_path, disable="")
    assert set().union(*TOOL_PLUGINS.values()) <= everything
    without = requested_tools(tmp_path, disable=plugin)
    assert without == everything - TOOL_PLUGINS[plugin]


def test_a_call_to_a_disabled_tool_is_answered_as_unknown(tmp_path: Path) -> None:
    done = run(
        tmp_path,
        ["--provider", "faux", "--no-session", "--mode", "json", "-p", "list files"],
        disable="bash",
        script=[
            {"toolCalls": [{"name": "bash", "arguments": {"command": "ls"}, "id": "b1"}]},
            {"text": "No shell here."},
        ],
    )
    assert done.returncode == 0, done.stderr
    events = json_events(done.stdout)
    (end,) = [e for e in events if e["type"] == "tool_execution_end"]
    assert end["toolName"] == "bash" and end["isError"] is True
    assert "not found" in json.dumps(end["result"])
    assert [e for e in events if e["type"] == "agent_end"]


def rpc_compact(tmp_path: Path, disable: str) -> dict[str, Any]:
    done = run(
        tmp_path,
        ["--provider", "faux", "--no-session", "--mode", "rpc"],
        disable=disable,
        script=[],
        stdin=json.dumps({"id": "c1", "type": "compact"}) + "\n",
    )
    (response,) = [r for r in json_events(done.stdout) if r.get("type") == "response" and r.get("id") == "c1"]
    return response


def test_without_compaction_compact_reports_it_unavailable(tmp_path: Path) -> None:
    response = rpc_compact(tmp_path, disable="compaction")
    assert response["success"] is False
    assert "no installed plugin registers the compact command" in response["error"]
    # With the plugin, the same empty session simply has nothing to compact.
    installed = rpc_compact(tmp_path, disable="")
    assert "Nothing to compact" in installed.get("error", "")


def test_without_compaction_slash_compact_is_an_ordinary_prompt(tmp_path: Path) -> None:
    done = run(
        tmp_path,
        ["--provider", "faux", "--no-session", "--mode", "json", "-p", "/compact"],
        disable="compaction",
        script=[{"text": "I cannot compact anything."}],
    )
    assert done.returncode == 0, done.stderr
    events = json_events(done.stdout)
    assert not [e for e in events if e["type"].startswith("compaction_")]
    (end,) = [e for e in events if e["type"] == "agent_end"]
    assert end["messages"][-1]["content"][0]["text"] == "I cannot compact anything."


@pytest.mark.parametrize("disable", ["", "retry"])
def test_without_retry_a_transient_error_ends_the_run(tmp_path: Path, disable: str) -> None:
    done = run(
        tmp_path,
        ["--provider", "faux", "--no-session", "--mode", "json", "-p", "hello?"],
        disable=disable,
        script=[{"error": "529 overloaded_error: Overloaded"}, {"text": "Recovered."}],
        settings={"retry": {"baseDelayMs": 1}},
    )
    events = json_events(done.stdout)
    retries = [e for e in events if e["type"].startswith("auto_retry")]
    replies = [
        e["message"] for e in events if e["type"] == "message_end" and e["message"]["role"] == "assistant"
    ]
    if disable:
        assert retries == []
        assert [r["stopReason"] for r in replies] == ["error"]
    else:
        assert [e["type"] for e in retries] == ["auto_retry_start", "auto_retry_end"]
        assert [r["stopReason"] for r in replies] == ["error", "stop"]
