"""``pi_host.testing.RpcClient``: a real ``pi-host --mode rpc`` on the faux provider."""

from __future__ import annotations

import signal

import pytest

from pi_host.testing import CliRunner, RpcClientError, tool_call

pytestmark = pytest.mark.timeout(120)


def test_a_prompt_round_trip(run_cli: CliRunner) -> None:
    (run_cli.cwd / "notes.txt").write_text("alpha\n")
    with run_cli.rpc(
        "--provider", "faux", "--no-session", replies=[tool_call("read", path="notes.txt"), "It says alpha."]
    ) as client:
        response = client.call({"type": "prompt", "message": "read notes.txt"})
        assert response == {"id": response["id"], "type": "response", "command": "prompt", "success": True}
        end = client.wait_for(lambda r: r.get("type") == "tool_execution_end")
        assert end["isError"] is False and "alpha" in end["result"]["content"][0]["text"]
        final = client.wait_for("agent_end")
        assert final["messages"][-1]["content"][0]["text"] == "It says alpha."
        state = client.call({"id": "s", "type": "get_state"})
        assert state["id"] == "s" and state["data"]["isStreaming"] is False
    assert client.returncode == 0
    kinds = [record["type"] for record in client.events]
    assert kinds[0] == "agent_start" and kinds[-1] == "agent_end" and "response" not in kinds
    assert [r["id"] for r in client.records if r["type"] == "response"] == [response["id"], "s"]
    assert client.close() == 0  # again: nothing more happens


def test_events_read_while_awaiting_a_response_stay_unread(run_cli: CliRunner) -> None:
    with run_cli.rpc("--provider", "faux", "--no-session", replies=["Hello"]) as client:
        client.send({"id": "p", "type": "prompt", "message": "hi"})
        assert client.call({"type": "get_state"})["success"] is True
        # Whatever the order the two answers came in, the prompt's response and all of
        # the run's events are still there to wait for.
        assert client.wait_for(lambda r: r.get("type") == "response" and r.get("id") == "p")["success"]
        assert client.wait_for("agent_start")
        assert client.wait_for("agent_end")["messages"][-1]["content"][0]["text"] == "Hello"


def test_an_error_response_is_returned_not_raised(run_cli: CliRunner) -> None:
    with run_cli.rpc("--provider", "faux", "--no-session") as client:
        export = client.call({"id": "x", "type": "export_html"})
        assert export["success"] is False and "in-memory" in export["error"]
        # pi answers an unknown command without its id: wait for the type instead.
        client.send({"id": "u", "type": "frobnicate"})
        unknown = client.wait_for("response")
        assert unknown["success"] is False and unknown["error"] == "Unknown command: frobnicate"
        client.send_raw(b"{not json\n")
        assert client.wait_for("response")["command"] == "parse"
    assert client.returncode == 0


def test_a_timeout_names_what_was_awaited_and_quotes_stderr(run_cli: CliRunner) -> None:
    (run_cli.agent_dir / "settings.json").write_text("{not json")  # pi-host warns on stderr
    with run_cli.rpc("--provider", "faux", "--no-session", timeout=30) as client:
        assert client.call({"type": "get_state"})["success"] is True  # it has started
        with pytest.raises(RpcClientError) as caught:
            client.wait_for("no_such_event", timeout=0.2)
        message = str(caught.value)
        assert "timed out waiting for a 'no_such_event' record" in message
        assert "--- stderr ---" in message and "settings.json: is not valid JSON" in message
        assert "response" in message  # the last records read
        assert "is not valid JSON" in caught.value.stderr and caught.value.returncode is None
        assert client.call({"type": "get_state"})["success"] is True  # the client goes on
    assert client.returncode == 0


def test_a_process_that_exits_early_fails_the_wait_with_its_status_and_stderr(run_cli: CliRunner) -> None:
    client = run_cli.rpc("--provider", "faux", "--no-such-option")
    with client, pytest.raises(RpcClientError) as caught:
        client.call({"type": "get_state"})
    message = str(caught.value)
    assert "the process exited with status 2 before" in message
    assert "Unknown option: --no-such-option" in message
    assert caught.value.returncode == 2 and client.returncode == 2
    with pytest.raises(RpcClientError, match="exited with status 2"):
        client.wait_for("agent_end")  # the end of output stays the end


def test_close_kills_a_process_that_does_not_exit(run_cli: CliRunner) -> None:
    client = run_cli.rpc("--provider", "faux", "--no-session")
    assert client.call({"type": "get_state"})["success"] is True
    client.process.send_signal(signal.SIGSTOP)  # it cannot see its stdin close any more
    assert client.close(timeout=0.5) == -signal.SIGKILL


def test_read_to_end_returns_what_is_left_once_the_process_has_ended(run_cli: CliRunner) -> None:
    with run_cli.rpc("--provider", "faux", "--no-session", replies=["Hello"]) as client:
        client.send({"id": "p", "type": "prompt", "message": "hi"})
        assert client.call({"id": "s", "type": "get_state"})["success"] is True
        end = client.wait_for("agent_end")
        client.send({"id": "m", "type": "get_messages"})  # answered before the exit
        assert client.close() == 0
        rest = client.read_to_end()
    # What the cursor never passed: the records call() left unread after agent_end, in order,
    # then the ones not read before the exit.
    passed = client.records.index(end) + 1
    assert rest == [r for r in client.records[passed:] if r.get("id") != "s"]
    assert rest[-1]["id"] == "m" and rest[-1]["data"]["messages"][-1] == end["messages"][-1]
    assert client.read_to_end() == []  # the output has ended: nothing more, no waiting
    with pytest.raises(RpcClientError, match="exited with status 0 before a 'agent_end' record"):
        client.wait_for("agent_end")


def test_read_to_end_starts_with_the_records_call_left_unread(run_cli: CliRunner) -> None:
    with run_cli.rpc("--provider", "faux", "--no-session", replies=["Hello"]) as client:
        client.send({"id": "p", "type": "prompt", "message": "hi"})
        assert client.call({"id": "s", "type": "get_state"})["success"] is True
        unread = [r for r in client.records if r.get("id") != "s"]  # all read so far, by call()
        client.close()
        rest = client.read_to_end()
    assert rest[: len(unread)] == unread
    assert rest == [r for r in client.records if r.get("id") != "s"]
    assert any(r.get("id") == "p" for r in rest)
