"""RPC mode (``pi-host --mode rpc``) driven as a real subprocess, plus the UI bridge in-process."""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, BinaryIO

import anyio
import pytest

from pi_host.modes._rpc_io import JsonlWriter, RpcUI, decode_line
from pi_host.testing import CliRunner, RpcClient

TIMEOUT = 20.0


@pytest.fixture
def rpc(tmp_path: Path) -> Iterator[Callable[..., RpcClient]]:
    """Start ``pi-host --mode rpc --provider faux`` in ``tmp_path``, agent directory ``agent/``.

    ``script`` is the faux script; ``extra`` more arguments (``--no-session`` unless a
    ``--session-dir`` is given); ``env`` variables beyond the isolated environment.
    """
    runner = CliRunner(tmp_path)
    started: list[RpcClient] = []

    def start(
        script: list[dict[str, Any]] | None = None, *extra: str, env: dict[str, str] | None = None
    ) -> RpcClient:
        args = ["--provider", "faux", *extra]
        if "--session-dir" not in extra:
            args.append("--no-session")
        client = runner.rpc(*args, replies=script or [], env=env, cwd=tmp_path, timeout=TIMEOUT)
        started.append(client)
        return client

    yield start
    for client in started:
        client.close()


# -- framing and errors ----------------------------------------------------------------------


def test_malformed_line_gets_parse_error_and_serving_continues(rpc: Callable[..., RpcClient]) -> None:
    p = rpc()
    p.send_raw(b"{not json\n")
    error = p.wait_for(lambda record: True)
    assert error["type"] == "response" and error["command"] == "parse" and error["success"] is False
    assert error["error"].startswith("Failed to parse command: ")
    assert "id" not in error
    assert p.call({"id": "s", "type": "get_state"})["success"] is True
    assert p.close() == 0


def test_unknown_command_answered_with_pis_error(rpc: Callable[..., RpcClient]) -> None:
    p = rpc()
    p.send({"id": "u", "type": "frobnicate"})
    error = p.wait_for(lambda record: True)
    assert error == {
        "type": "response",
        "command": "frobnicate",
        "success": False,
        "error": "Unknown command: frobnicate",
    }
    assert p.close() == 0


def test_crlf_and_unicode_separators_are_not_record_breaks(rpc: Callable[..., RpcClient]) -> None:
    p = rpc([{"text": "ok"}])
    text = "a\u2028b\u2029c"
    command = {"id": "p", "type": "prompt", "message": text}
    p.send_raw(json.dumps(command, ensure_ascii=False).encode() + b"\r\n")
    assert p.wait_for(lambda r: r.get("type") == "response" and r.get("id") == "p")["success"] is True
    p.wait_for("agent_end")
    messages = p.call({"id": "m", "type": "get_messages"})["data"]["messages"]
    assert messages[0]["content"][0]["text"] == text
    assert p.close() == 0


def test_eof_ends_cleanly_during_a_run(rpc: Callable[..., RpcClient]) -> None:
    p = rpc([{"delayMs": 200, "text": "one two three four five six seven"}])
    p.call({"id": "p", "type": "prompt", "message": "go"})
    p.wait_for("message_update")
    assert p.close() == 0


# -- prompting -------------------------------------------------------------------------------


def test_prompt_streams_pi_event_sequence(rpc: Callable[..., RpcClient]) -> None:
    p = rpc([{"text": "Hello there"}])
    assert p.call({"id": "p1", "type": "prompt", "message": "hi"}) == {
        "id": "p1",
        "type": "response",
        "command": "prompt",
        "success": True,
    }
    end = p.wait_for("agent_end")
    kinds = [r["type"] for r in p.records if r["type"] != "response"]
    assert kinds[:4] == ["agent_start", "turn_start", "message_start", "message_end"]
    assert kinds[-2:] == ["turn_end", "agent_end"]
    assert all("id" not in r for r in p.records if r["type"] != "response")
    assert end["messages"][-1]["content"][0]["text"] == "Hello there"
    text = p.call({"id": "t", "type": "get_last_assistant_text"})
    assert text["data"] == {"text": "Hello there"}
    assert p.close() == 0


def test_prompt_with_tool_call_runs_tool(rpc: Callable[..., RpcClient]) -> None:
    p = rpc([{"toolCalls": [{"name": "bash", "arguments": {"command": "echo hi"}}]}, {"text": "done"}])
    p.call({"id": "p", "type": "prompt", "message": "run it"})
    start = p.wait_for("tool_execution_start")
    assert start["toolName"] == "bash" and start["args"] == {"command": "echo hi"}
    end = p.wait_for("tool_execution_end")
    assert end["isError"] is False and "hi" in end["result"]["content"][0]["text"]
    p.wait_for("agent_end")
    stats = p.call({"id": "st", "type": "get_session_stats"})["data"]
    assert stats["toolCalls"] == 1 and stats["toolResults"] == 1
    assert stats["userMessages"] == 1 and stats["assistantMessages"] == 2
    assert stats["tokens"]["total"] == sum(v for k, v in stats["tokens"].items() if k != "total")
    assert stats["contextUsage"]["contextWindow"] > 0
    assert p.close() == 0


def test_prompt_while_streaming_needs_behavior(rpc: Callable[..., RpcClient]) -> None:
    p = rpc([{"delayMs": 50, "text": "a b c d e f g h i j k l"}, {"text": "queued reply"}])
    p.call({"id": "p", "type": "prompt", "message": "first"})
    p.wait_for("message_update")
    rejected = p.call({"id": "p2", "type": "prompt", "message": "second"})
    assert rejected["success"] is False
    assert "streamingBehavior" in rejected["error"]
    queued = p.call({"id": "p3", "type": "prompt", "message": "later", "streamingBehavior": "followUp"})
    assert queued["success"] is True
    # The queue update is written before the response that accepted the message.
    assert {"type": "queue_update", "steering": [], "followUp": ["later"]} in p.records
    p.wait_for(
        lambda r: (
            r["type"] == "message_start"
            and r["message"]["role"] == "user"
            and r["message"]["content"][0]["text"] == "later"
        )
    )
    p.wait_for("agent_end")
    assert p.close() == 0


def test_get_state_steer_and_follow_up_answered_while_streaming(rpc: Callable[..., RpcClient]) -> None:
    p = rpc(
        [
            {"delayMs": 40, "text": "one two three four five six seven eight"},
            {"text": "after steer"},
            {"text": "after follow-up"},
        ]
    )
    p.call({"id": "p", "type": "prompt", "message": "go"})
    p.wait_for("message_update")
    state = p.call({"id": "s", "type": "get_state"})["data"]
    assert state["isStreaming"] is True
    assert p.call({"id": "st", "type": "steer", "message": "change course"})["success"] is True
    assert p.call({"id": "fu", "type": "follow_up", "message": "then this"})["success"] is True
    state = p.call({"id": "s2", "type": "get_state"})["data"]
    assert state["pendingMessageCount"] == 2
    # The steer reaches the model before the follow-up.
    users: list[str] = []
    while len(users) < 2:
        record = p.wait_for(lambda r: r["type"] == "message_start" and r["message"]["role"] == "user")
        users.append(record["message"]["content"][0]["text"])
    assert users == ["change course", "then this"]
    p.wait_for("agent_end")
    assert p.call({"id": "s3", "type": "get_state"})["data"]["isStreaming"] is False
    assert p.close() == 0


def test_abort_while_streaming(rpc: Callable[..., RpcClient]) -> None:
    p = rpc([{"delayMs": 100, "text": " ".join(["word"] * 200)}])
    p.call({"id": "p", "type": "prompt", "message": "go"})
    p.wait_for("message_update")
    assert p.call({"id": "a", "type": "abort"}) == {
        "id": "a",
        "type": "response",
        "command": "abort",
        "success": True,
    }
    # pi answers abort once the agent is idle, so the run's last events precede the response.
    ends = [r for r in p.records if r["type"] == "message_end" and r["message"]["role"] == "assistant"]
    assert ends and ends[-1]["message"]["stopReason"] == "aborted"
    assert any(r["type"] == "agent_end" for r in p.records)
    assert p.call({"id": "s", "type": "get_state"})["data"]["isStreaming"] is False
    assert p.close() == 0


def test_steer_and_follow_up_rejected_for_unknown_shape(rpc: Callable[..., RpcClient]) -> None:
    p = rpc()
    missing = p.call({"id": "x", "type": "steer"})
    assert missing["success"] is False and "message" in missing["error"]
    assert p.close() == 0


# -- state, models, thinking, queues ---------------------------------------------------------


def test_get_state_shape(rpc: Callable[..., RpcClient]) -> None:
    p = rpc()
    data = p.call({"id": "s", "type": "get_state"})["data"]
    assert data["model"]["provider"] == "faux"
    assert {
        "thinkingLevel",
        "isStreaming",
        "isCompacting",
        "steeringMode",
        "followUpMode",
        "sessionId",
        "autoCompactionEnabled",
        "messageCount",
        "pendingMessageCount",
    } <= set(data)
    assert "sessionFile" not in data and "sessionName" not in data
    assert p.close() == 0


def test_get_messages(rpc: Callable[..., RpcClient]) -> None:
    p = rpc([{"text": "reply"}])
    assert p.call({"id": "m0", "type": "get_messages"})["data"] == {"messages": []}
    p.call({"id": "p", "type": "prompt", "message": "hi"})
    p.wait_for("agent_end")
    messages = p.call({"id": "m", "type": "get_messages"})["data"]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert p.close() == 0


def test_models(rpc: Callable[..., RpcClient]) -> None:
    p = rpc()
    models = p.call({"id": "l", "type": "get_available_models"})["data"]["models"]
    faux = next(m for m in models if m["provider"] == "faux")
    chosen = p.call({"id": "m", "type": "set_model", "provider": "faux", "modelId": faux["id"]})
    assert chosen["success"] is True and chosen["data"]["id"] == faux["id"]
    missing = p.call({"id": "x", "type": "set_model", "provider": "nope", "modelId": "nada"})
    assert missing == {
        "id": "x",
        "type": "response",
        "command": "set_model",
        "success": False,
        "error": "Model not found: nope/nada",
    }
    cycled = p.call({"id": "c", "type": "cycle_model"})
    assert cycled["success"] is True
    if len(models) <= 1:
        assert cycled["data"] is None
    else:
        assert set(cycled["data"]) == {"model", "thinkingLevel", "isScoped"}
    assert p.close() == 0


def test_thinking_level(rpc: Callable[..., RpcClient]) -> None:
    p = rpc()
    assert p.call({"id": "t", "type": "set_thinking_level", "level": "high"})["success"] is True
    # faux-1 does not reason: the level clamps to off and cycling has nothing to cycle.
    assert p.call({"id": "s", "type": "get_state"})["data"]["thinkingLevel"] == "off"
    assert p.call({"id": "c", "type": "cycle_thinking_level"})["data"] is None
    bad = p.call({"id": "b", "type": "set_thinking_level", "level": "extreme"})
    assert bad["success"] is False and "extreme" in bad["error"]
    assert p.close() == 0


def test_queue_modes(rpc: Callable[..., RpcClient]) -> None:
    p = rpc()
    assert p.call({"id": "a", "type": "set_steering_mode", "mode": "all"})["success"] is True
    assert p.call({"id": "b", "type": "set_follow_up_mode", "mode": "all"})["success"] is True
    state = p.call({"id": "s", "type": "get_state"})["data"]
    assert state["steeringMode"] == "all" and state["followUpMode"] == "all"
    assert p.call({"id": "c", "type": "set_steering_mode", "mode": "sometimes"})["success"] is False
    assert p.close() == 0


def test_auto_compaction_and_retry_switches(rpc: Callable[..., RpcClient]) -> None:
    p = rpc()
    assert p.call({"id": "a", "type": "set_auto_compaction", "enabled": False})["success"] is True
    assert p.call({"id": "s", "type": "get_state"})["data"]["autoCompactionEnabled"] is False
    assert p.call({"id": "r", "type": "set_auto_retry", "enabled": False})["success"] is True
    assert p.call({"id": "ar", "type": "abort_retry"})["success"] is True
    assert p.close() == 0


def test_abort_retry_reaches_the_retry_wait_and_undeclared_scopes_are_unknown(
    rpc: Callable[..., RpcClient], tmp_path: Path
) -> None:
    """RPC ``abort_<name>`` goes to the abort scope a plugin declared (pi-retry's ``retry``);
    a name no plugin declared is an unknown command, as in pi."""
    (tmp_path / "agent").mkdir(exist_ok=True)
    (tmp_path / "agent" / "settings.json").write_text(json.dumps({"retry": {"baseDelayMs": 60000}}))
    p = rpc([{"error": "529 overloaded_error: Overloaded", "stopReason": "error"}, {"text": "never"}])
    p.call({"id": "p", "type": "prompt", "message": "hi"})
    p.wait_for("auto_retry_start")
    assert p.call({"id": "ar", "type": "abort_retry"})["success"] is True
    end = p.wait_for("auto_retry_end")
    assert (end["success"], end["finalError"]) == (False, "Retry cancelled")
    p.send({"id": "x", "type": "abort_everything"})
    unknown = p.wait_for(lambda r: r.get("type") == "response")
    assert (unknown["success"], unknown["error"]) == (False, "Unknown command: abort_everything")
    assert p.close() == 0


def test_compact_reports_result_or_error(rpc: Callable[..., RpcClient]) -> None:
    p = rpc([{"text": "reply"}, {"text": "summary of it all"}])
    p.call({"id": "p", "type": "prompt", "message": "hi"})
    p.wait_for("agent_end")
    response = p.call({"id": "c", "type": "compact", "customInstructions": "be brief"})
    if response["success"]:
        assert {"summary", "firstKeptEntryId", "tokensBefore"} <= set(response["data"])
    else:
        assert response["error"]
    assert p.close() == 0


# -- bash ------------------------------------------------------------------------------------


def test_bash_and_abort_bash(rpc: Callable[..., RpcClient]) -> None:
    p = rpc()
    result = p.call({"id": "b", "type": "bash", "command": "echo hello"})
    assert result["success"] is True
    assert result["data"]["output"].strip() == "hello"
    assert result["data"]["exitCode"] == 0 and result["data"]["cancelled"] is False
    messages = p.call({"id": "m", "type": "get_messages"})["data"]["messages"]
    assert messages[-1]["role"] == "bashExecution"
    p.send({"id": "long", "type": "bash", "command": "sleep 30"})
    assert p.call({"id": "ab", "type": "abort_bash"})["success"] is True
    cancelled = p.wait_for(lambda r: r.get("type") == "response" and r.get("id") == "long")
    assert cancelled["success"] is True and cancelled["data"]["cancelled"] is True
    assert p.close() == 0


# -- sessions --------------------------------------------------------------------------------


def test_session_name(rpc: Callable[..., RpcClient]) -> None:
    p = rpc()
    empty = p.call({"id": "e", "type": "set_session_name", "name": "   "})
    assert empty["error"] == "Session name cannot be empty"
    assert p.call({"id": "n", "type": "set_session_name", "name": " work "})["success"] is True
    assert p.call({"id": "s", "type": "get_state"})["data"]["sessionName"] == "work"
    assert p.close() == 0


def test_new_session_fork_clone_switch_and_export(rpc: Callable[..., RpcClient], tmp_path: Path) -> None:
    p = rpc([{"text": "first reply"}, {"text": "second reply"}], "--session-dir", str(tmp_path / "sessions"))
    p.call({"id": "p", "type": "prompt", "message": "first"})
    p.wait_for("agent_end")
    p.call({"id": "p2", "type": "prompt", "message": "second"})
    p.wait_for("agent_end")
    first_file = p.call({"id": "s", "type": "get_state"})["data"]["sessionFile"]
    forks = p.call({"id": "f", "type": "get_fork_messages"})["data"]["messages"]
    assert [m["text"] for m in forks] == ["first", "second"]

    exported = p.call({"id": "x", "type": "export_html", "outputPath": str(tmp_path / "out.html")})
    assert exported["data"] == {"path": str(tmp_path / "out.html")}
    assert "first reply" in (tmp_path / "out.html").read_text()

    fork = p.call({"id": "fk", "type": "fork", "entryId": forks[1]["entryId"]})
    assert fork["data"] == {"text": "second", "cancelled": False}
    assert p.call({"id": "m", "type": "get_messages"})["data"]["messages"][-1]["role"] == "assistant"
    assert len(p.call({"id": "m2", "type": "get_messages"})["data"]["messages"]) == 2
    bad = p.call({"id": "bf", "type": "fork", "entryId": "nope"})
    assert bad["success"] is False

    assert p.call({"id": "c", "type": "clone"})["data"] == {"cancelled": False}
    new = p.call({"id": "n", "type": "new_session"})
    assert new["data"] == {"cancelled": False}
    assert p.call({"id": "s2", "type": "get_state"})["data"]["messageCount"] == 0

    switched = p.call({"id": "sw", "type": "switch_session", "sessionPath": first_file})
    assert switched["data"] == {"cancelled": False}
    assert p.call({"id": "s3", "type": "get_state"})["data"]["messageCount"] == 4
    missing = p.call({"id": "sw2", "type": "switch_session", "sessionPath": str(tmp_path / "none.jsonl")})
    assert missing["success"] is False and "not found" in missing["error"]
    assert p.close() == 0


def test_clone_and_export_errors_without_entries_or_file(rpc: Callable[..., RpcClient]) -> None:
    p = rpc()
    export = p.call({"id": "x", "type": "export_html"})
    assert export["success"] is False and "in-memory" in export["error"]
    assert p.close() == 0


def test_get_commands(rpc: Callable[..., RpcClient], tmp_path: Path) -> None:
    prompts = tmp_path / ".pi" / "prompts"
    prompts.mkdir(parents=True)
    (prompts / "fix.md").write_text("---\ndescription: Fix things\n---\nFix $1\n")
    p = rpc([], "--prompt-template", str(prompts / "fix.md"))
    commands = p.call({"id": "c", "type": "get_commands"})["data"]["commands"]
    fix = next(c for c in commands if c["name"] == "fix")
    assert fix["source"] == "prompt" and fix["description"] == "Fix things"
    assert fix["sourceInfo"]["path"].endswith("fix.md")
    assert p.close() == 0


# -- the extension UI bridge (in-process) ----------------------------------------------------


def test_decode_line_strips_only_lf_and_cr() -> None:
    assert decode_line("x\u2028y\r\n".encode()) == "x\u2028y"
    assert decode_line(b"abc") == "abc"


async def test_ui_bridge_round_trip() -> None:
    records: list[dict[str, Any]] = []
    ui = RpcUI(records.append)
    results: dict[str, Any] = {}

    async def ask() -> None:
        results["select"] = await ui.select("Pick", ["a", "b"])
        results["confirm"] = await ui.confirm("Sure?", "Really")
        results["input"] = await ui.input("Name", "type")
        results["editor"] = await ui.editor("Edit", "x")

    async def answer(response: dict[str, Any]) -> None:
        while not ui.pending_ids:
            await anyio.sleep(0)
        assert ui.resolve({"id": ui.pending_ids[0], **response})

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask)
        await answer({"value": "b"})
        await answer({"confirmed": True})
        await answer({"cancelled": True})
        await answer({"value": "edited"})
    assert results == {"select": "b", "confirm": True, "input": None, "editor": "edited"}
    assert [r["method"] for r in records] == ["select", "confirm", "input", "editor"]
    assert records[0]["options"] == ["a", "b"] and "timeout" not in records[0]
    assert records[2]["placeholder"] == "type" and records[3]["prefill"] == "x"
    assert len({r["id"] for r in records}) == 4
    assert not ui.resolve({"id": "unknown", "value": "x"})


async def test_ui_dialog_timeout_resolves_default_and_is_sent_in_ms() -> None:
    records: list[dict[str, Any]] = []
    ui = RpcUI(records.append)
    assert await ui.confirm("Sure?", "Really", timeout=0.01) is False
    assert records[0]["timeout"] == 10
    assert ui.pending_ids == []


def test_ui_fire_and_forget_requests() -> None:
    records: list[dict[str, Any]] = []
    ui = RpcUI(records.append)
    ui.notify("careful", "warning")
    ui.set_status("k", "busy")
    ui.set_status("k", None)
    ui.set_widget("w", ["l1"], placement="belowEditor")
    ui.set_title("t")
    ui.set_editor_text("draft")
    assert ui.get_editor_text() == ""
    stripped = [{k: v for k, v in r.items() if k not in ("id", "type")} for r in records]
    assert stripped == [
        {"method": "notify", "message": "careful", "notifyType": "warning"},
        {"method": "setStatus", "statusKey": "k", "statusText": "busy"},
        {"method": "setStatus", "statusKey": "k"},
        {"method": "setWidget", "widgetKey": "w", "widgetLines": ["l1"], "widgetPlacement": "belowEditor"},
        {"method": "setTitle", "title": "t"},
        {"method": "set_editor_text", "text": "draft"},
    ]
    assert all(r["type"] == "extension_ui_request" for r in records)


def test_writer_keeps_lines_whole() -> None:
    import io

    buffer = io.BytesIO()
    writer = JsonlWriter(buffer)
    writer.write({"a": "x\u2028y"})
    writer.write({"b": "\ud800"})
    lines = buffer.getvalue().split(b"\n")
    assert lines[-1] == b"" and len(lines) == 3
    assert json.loads(lines[0]) == {"a": "x\u2028y"}
    assert json.loads(lines[1]) == {"b": "\ud800"}


# -- the UI sub-protocol through a session (in-process, over real pipes) ---------------------


class _AskPlugin:
    """A test plugin whose ``/ask`` command asks the client, then reports the answer."""

    @staticmethod
    def pi_register_commands(register: Callable[[Any], None]) -> None:
        from pi_host.hookspecs import Command

        async def ask(args: str, ctx: Any) -> None:
            choice = await ctx.ui.select("Pick one", ["red", "blue"])
            ctx.ui.notify(f"picked {choice}", "info")

        register(Command(name="ask", description="Ask the client", handler=ask))


@asynccontextmanager
async def _rpc_server_over_pipes(
    tmp_path: Path, plugin: object
) -> AsyncIterator[tuple[Any, BinaryIO, BinaryIO]]:
    """An RPC server for a faux session with ``plugin``, and the client's ends of its pipes."""
    from pi_host.modes._rpc import RpcServer
    from pi_host.runtime import SessionOptions, create_session

    session = await create_session(
        SessionOptions(
            cwd=str(tmp_path),
            agent_dir=str(tmp_path / "agent"),
            mode="rpc",
            provider="faux",
            no_session=True,
            extra_plugins=[plugin],
        )
    )
    in_read, in_write = os.pipe()
    out_read, out_write = os.pipe()
    with (
        os.fdopen(in_read, "rb") as stdin,
        os.fdopen(in_write, "wb", buffering=0) as client_in,
        os.fdopen(out_write, "wb") as stdout,
        os.fdopen(out_read, "rb") as client_out,
    ):
        server = RpcServer(session, stdin, stdout)
        yield server, client_in, client_out


async def test_plugin_dialog_round_trip_through_rpc_server(tmp_path: Path) -> None:
    from pi_host.hookspecs import hookimpl

    plugin = _AskPlugin()
    plugin.pi_register_commands = hookimpl(_AskPlugin.pi_register_commands)  # type: ignore[method-assign]
    async with _rpc_server_over_pipes(tmp_path, plugin) as (server, client_in, client_out):

        async def record() -> dict[str, Any]:
            line = await anyio.to_thread.run_sync(client_out.readline)
            parsed: dict[str, Any] = json.loads(line)
            return parsed

        async with anyio.create_task_group() as tg:
            results: list[int] = []

            async def serve() -> None:
                results.append(await server.serve())

            tg.start_soon(serve)
            with anyio.fail_after(TIMEOUT):
                client_in.write(b'{"id":"1","type":"prompt","message":"/ask"}\n')
                request = await record()
                while request.get("type") != "extension_ui_request":
                    request = await record()
                assert request["method"] == "select" and request["options"] == ["red", "blue"]
                answer = {"type": "extension_ui_response", "id": request["id"], "value": "blue"}
                client_in.write(json.dumps(answer).encode() + b"\n")
                seen = [await record(), await record()]
                notify = next(r for r in seen if r.get("method") == "notify")
                assert notify["message"] == "picked blue"
                assert {"id": "1", "type": "response", "command": "prompt", "success": True} in seen
                client_in.close()
        assert results == [0]


HUNG_HOOK = """\
import pathlib

import anyio

from pi_host import hookimpl


@hookimpl
async def pi_agent_start(ctx):
    pathlib.Path("hook-started").write_text("yes")
    await anyio.sleep_forever()
"""


def test_abort_ends_a_hung_hook_and_names_it(rpc: Callable[..., RpcClient], tmp_path: Path) -> None:
    (tmp_path / "hangs.py").write_text(HUNG_HOOK, encoding="utf-8")
    # No hook time limit: only the abort can end it.
    p = rpc([{"text": "never reached"}], "-e", "hangs.py", env={"PI_HOST_HOOK_TIMEOUT": "0"})
    p.call({"id": "p", "type": "prompt", "message": "go"})
    marker, deadline = tmp_path / "hook-started", time.monotonic() + TIMEOUT
    while not marker.exists():  # synchronised on the hook's own marker
        assert time.monotonic() < deadline, "the hook never started"
        time.sleep(0.02)
    assert p.call({"id": "a", "type": "abort"})["success"] is True
    assert any(r["type"] == "agent_end" for r in p.records)
    errors = [r for r in p.records if r["type"] == "extension_error"]
    assert [(e["extensionPath"], e["event"]) for e in errors] == [("hangs", "pi_agent_start")]
    assert "was still running pi_agent_start when the run was aborted" in errors[0]["error"]
    assert p.call({"id": "s", "type": "get_state"})["data"]["isStreaming"] is False
    assert p.close() == 0


class _RpcCommandsPlugin:
    """Adds ``echo_twice`` and tries to replace pi's ``get_state``, which must not work."""

    @staticmethod
    def pi_register_rpc_commands(register: Callable[[Any], None]) -> None:
        from pi_host.hookspecs import RpcCommand

        async def echo_twice(command: Any, ctx: Any) -> Any:
            if "text" not in command:
                raise ValueError("echo_twice: text is required")
            return {"text": command["text"] * 2, "cwd": ctx.cwd}

        async def nothing(command: Any, ctx: Any) -> None:
            return None

        async def hijack(command: Any, ctx: Any) -> Any:
            return {"hijacked": True}

        register(RpcCommand("echo_twice", echo_twice, "Say it twice"))
        register(RpcCommand("quiet_one", nothing))
        register(RpcCommand("get_state", hijack))


async def test_plugin_rpc_commands_sit_beside_pis_own(tmp_path: Path) -> None:
    from pi_host.hookspecs import hookimpl

    plugin = _RpcCommandsPlugin()
    plugin.pi_register_rpc_commands = hookimpl(_RpcCommandsPlugin.pi_register_rpc_commands)  # type: ignore[method-assign]
    async with _rpc_server_over_pipes(tmp_path, plugin) as (server, client_in, client_out):

        async def call(record: dict[str, Any]) -> dict[str, Any]:
            client_in.write(json.dumps(record).encode() + b"\n")
            while True:
                line = await anyio.to_thread.run_sync(client_out.readline)
                parsed: dict[str, Any] = json.loads(line)
                if parsed.get("type") == "response":
                    return parsed

        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve)
            with anyio.fail_after(TIMEOUT):
                assert await call({"id": "1", "type": "echo_twice", "text": "ab"}) == {
                    "id": "1",
                    "type": "response",
                    "command": "echo_twice",
                    "success": True,
                    "data": {"text": "abab", "cwd": str(tmp_path)},
                }
                assert await call({"id": "2", "type": "quiet_one"}) == {
                    "id": "2",
                    "type": "response",
                    "command": "quiet_one",
                    "success": True,
                }
                failed = await call({"id": "3", "type": "echo_twice"})
                assert failed["success"] is False and failed["error"] == "echo_twice: text is required"
                state = await call({"id": "4", "type": "get_state"})
                assert state["success"] is True and "hijacked" not in state["data"]
                client_in.close()
