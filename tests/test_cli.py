"""The pi-host command as a black box: print and JSON modes on the faux provider, flags, export."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pi_host.modes._args import parse_args

PI_HOST = shutil.which("pi-host") or str(Path(sys.executable).parent / "pi-host")


def run(args: list[str], tmp_path: Path, script: list[dict[str, object]] | None = None, **env: str):
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PI_HOST")}
    environ.pop("ANTHROPIC_API_KEY", None)
    environ.pop("OPENAI_API_KEY", None)
    environ["PI_HOST_DIR"] = str(tmp_path / "agent")
    if script is not None:
        path = tmp_path / "script.json"
        path.write_text(json.dumps(script))
        environ["PI_HOST_FAUX_SCRIPT"] = str(path)
    environ.update(env)
    return subprocess.run(
        [PI_HOST, *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=environ,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_version_prints_version(tmp_path: Path) -> None:
    result = run(["--version"], tmp_path)
    assert result.returncode == 0
    assert result.stdout.strip() == "0.1.0"


def test_print_mode_writes_final_reply(tmp_path: Path) -> None:
    result = run(["--provider", "faux", "-p", "hi"], tmp_path, [{"text": "Hello offline"}])
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Hello offline\n"


def test_print_mode_error_reply_goes_to_stderr_with_status_1(tmp_path: Path) -> None:
    result = run(["--provider", "faux", "-p", "hi"], tmp_path, [{"error": "upstream exploded"}])
    assert result.returncode == 1
    assert "upstream exploded" in result.stderr
    assert result.stdout == ""


def test_print_mode_runs_a_tool_call(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    script = [
        {"toolCalls": [{"name": "read", "arguments": {"path": "notes.txt"}}]},
        {"text": "done"},
    ]
    result = run(["--provider", "faux", "--mode", "json", "-p", "read it"], tmp_path, script)
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert events[0]["type"] == "session"
    types = [event["type"] for event in events[1:]]
    assert types[:2] == ["agent_start", "turn_start"]
    assert types[-1] == "agent_end"
    end = next(event for event in events if event["type"] == "tool_execution_end")
    assert end["toolName"] == "read" and end["isError"] is False
    assert "alpha" in end["result"]["content"][0]["text"]


def test_json_mode_event_order_for_a_plain_reply(tmp_path: Path) -> None:
    result = run(["--provider", "faux", "--mode", "json", "--no-session", "hi"], tmp_path, [{"text": "ok"}])
    assert result.returncode == 0, result.stderr
    types = [json.loads(line)["type"] for line in result.stdout.splitlines()][1:]
    collapsed = [t for i, t in enumerate(types) if t != "message_update" or types[i - 1] != "message_update"]
    assert collapsed == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_update",
        "message_end",
        "turn_end",
        "agent_end",
    ]


def test_session_file_is_written_and_exports_to_html(tmp_path: Path) -> None:
    result = run(["--provider", "faux", "-p", "hi"], tmp_path, [{"text": "Hello <world>"}])
    assert result.returncode == 0, result.stderr
    files = list((tmp_path / "agent" / "sessions").rglob("*.jsonl"))
    assert len(files) == 1
    lines = [json.loads(line) for line in files[0].read_text().splitlines()]
    assert lines[0]["type"] == "session" and lines[0]["version"] == 3
    assert [line["message"]["role"] for line in lines if line["type"] == "message"] == ["user", "assistant"]
    out = tmp_path / "out.html"
    exported = run(["--export", str(files[0]), str(out)], tmp_path)
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout.strip() == f"Exported to: {out}"
    page = out.read_text()
    assert "Hello &lt;world&gt;" in page and "<script" not in page
    # Without an output path, as pi: into the working directory, named after the session.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    exported = run(["--export", str(files[0])], elsewhere)
    assert exported.returncode == 0, exported.stderr
    default = f"pi-host-session-{files[0].stem}.html"
    assert exported.stdout.strip() == f"Exported to: {default}"
    assert "Hello &lt;world&gt;" in (elsewhere / default).read_text()


def test_unknown_flag_names_the_closest_match(tmp_path: Path) -> None:
    result = run(["--thinkng", "high"], tmp_path)
    assert result.returncode == 2
    assert "Unknown option: --thinkng" in result.stderr
    assert "Did you mean --thinking?" in result.stderr


def test_unknown_model_is_a_clear_error(tmp_path: Path) -> None:
    result = run(["--model", "nosuch/model-x", "-p", "hi"], tmp_path)
    assert result.returncode == 1
    assert "nosuch" in result.stderr


def test_missing_file_argument_is_a_clear_error(tmp_path: Path) -> None:
    result = run(["--provider", "faux", "-p", "@missing.txt", "hi"], tmp_path, [{"text": "x"}])
    assert result.returncode == 1
    assert "File not found" in result.stderr


def test_file_argument_is_inlined_into_the_prompt(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("CONTENT-A")
    result = run(["--provider", "faux", "--mode", "json", "@a.txt", "summarise"], tmp_path, [{"text": "x"}])
    assert result.returncode == 0, result.stderr
    user = next(
        json.loads(line)
        for line in result.stdout.splitlines()
        if '"message_start"' in line and '"role":"user"' in line
    )
    text = user["message"]["content"][0]["text"]
    assert text.startswith('<file name="') and "CONTENT-A" in text and text.endswith("summarise")


def test_disabled_plugin_removes_its_tool(tmp_path: Path) -> None:
    script = [{"toolCalls": [{"name": "bash", "arguments": {"command": "echo hi"}}]}, {"text": "ok"}]
    result = run(
        ["--provider", "faux", "--mode", "json", "--no-plugin", "bash", "-p", "go"], tmp_path, script
    )
    assert result.returncode == 0, result.stderr
    end = next(json.loads(line) for line in result.stdout.splitlines() if '"tool_execution_end"' in line)
    assert end["isError"] is True
    assert end["result"]["content"][0]["text"] == "Tool bash not found"


def test_plugins_list_shows_first_party_plugins(tmp_path: Path) -> None:
    result = run(["plugins", "list", "--json"], tmp_path)
    assert result.returncode == 0, result.stderr
    names = {info["name"] for info in json.loads(result.stdout)}
    assert {"bash", "tools_fs"} <= names


@pytest.mark.parametrize(
    ("argv", "field", "value"),
    [
        (["--no-plugin", "bash", "--no-plugin", "retry"], "disabled_plugins", ["bash", "retry"]),
        (["-pno:bash"], "disabled_plugins", ["bash"]),
        (["-p", "no:bash"], "messages", ["no:bash"]),
        (["-p", "no:bash"], "disabled_plugins", []),
        (["-p", "no:idea what this means"], "messages", ["no:idea what this means"]),
        (["-p", "hello"], "messages", ["hello"]),
        (["-xt", "bash,edit"], "exclude_tools", ["bash", "edit"]),
        (["--plan"], "unknown_flags", {"plan": True}),
        (["--mode", "rpc"], "mode", "rpc"),
        (["@a.md", "x"], "file_args", ["a.md"]),
    ],
)
def test_argument_grammar(argv: list[str], field: str, value: object) -> None:
    assert getattr(parse_args(argv), field) == value


def test_models_json_custom_provider_end_to_end(tmp_path: Path) -> None:
    """A models.json provider pointing at a local Anthropic-speaking server, driven from the CLI."""
    from tests.fakeservers import AnthropicServer, anthropic_reply

    with AnthropicServer([anthropic_reply("Hello from the local server")]) as server:
        agent = tmp_path / "agent"
        agent.mkdir()
        models = {
            "providers": {
                "local-claude": {
                    "baseUrl": server.url,
                    "api": "anthropic-messages",
                    "apiKey": "$LOCAL_TEST_KEY",
                    "models": [{"id": "claude-local", "contextWindow": 100000, "maxTokens": 4096}],
                }
            }
        }
        (agent / "models.json").write_text(json.dumps(models))
        secret = "sk-local-test-secret-123"
        result = run(["--model", "local-claude/claude-local", "-p", "hi"], tmp_path, LOCAL_TEST_KEY=secret)
        assert result.returncode == 0, result.stderr
        assert result.stdout == "Hello from the local server\n"
        (request,) = server.requests
        body = request.json()
        assert body["model"] == "claude-local"
        assert body["messages"][-1]["content"][0]["text"] == "hi"
        assert request.headers.get("x-api-key") == secret
    session_files = list((agent / "sessions").rglob("*.jsonl"))
    assert session_files and secret not in session_files[0].read_text()
    assert secret not in result.stdout + result.stderr


def test_settings_can_disable_a_plugin(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "settings.json").write_text(json.dumps({"plugins": {"disable": ["bash"]}}))
    listing = run(["plugins", "list", "--json"], tmp_path)
    assert listing.returncode == 0, listing.stderr
    status = {info["name"]: info["status"] for info in json.loads(listing.stdout)}
    assert status["bash"] == "disabled"
    script = [{"toolCalls": [{"name": "bash", "arguments": {"command": "echo hi"}}]}, {"text": "ok"}]
    result = run(["--provider", "faux", "--mode", "json", "go"], tmp_path, script)
    end = next(json.loads(line) for line in result.stdout.splitlines() if '"tool_execution_end"' in line)
    assert end["result"]["content"][0]["text"] == "Tool bash not found"


def test_a_session_whose_working_directory_is_gone_is_refused(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "first"}]))
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PI_HOST")}
    environ.update(PI_HOST_DIR=str(tmp_path / "agent"), PI_HOST_FAUX_SCRIPT=str(script))
    first = subprocess.run(
        [PI_HOST, "--provider", "faux", "-p", "hi"], cwd=project, env=environ, capture_output=True, text=True
    )
    assert first.returncode == 0, first.stderr
    (session_file,) = (tmp_path / "agent" / "sessions").rglob("*.jsonl")
    project.rmdir()
    result = run(
        ["--provider", "faux", "--session", str(session_file), "-p", "again"], tmp_path, [{"text": "x"}]
    )
    assert result.returncode == 1
    assert f"Stored session working directory does not exist: {project}" in result.stderr


def test_a_missing_session_file_is_a_clear_error(tmp_path: Path) -> None:
    result = run(["--provider", "faux", "--session", str(tmp_path / "nope.jsonl"), "-p", "hi"], tmp_path, [])
    assert result.returncode == 1
    assert "Session file not found" in result.stderr and "nope.jsonl" in result.stderr


def test_an_unreadable_file_argument_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "folder").mkdir()
    result = run(["--provider", "faux", "-p", "@folder", "hi"], tmp_path, [{"text": "x"}])
    assert result.returncode == 1
    assert "Could not read file" in result.stderr and "folder" in result.stderr
