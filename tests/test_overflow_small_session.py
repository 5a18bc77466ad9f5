"""#17: a provider overflow on a small session is compacted and retried, and the answer
arrives, in print, JSON and RPC modes against the local Anthropic server.

The session holds one short exchange; the next prompt is answered ``400 prompt is too
long``. By the local estimate everything fits ``keepRecentTokens``, but the provider's word
wins: the exchange before the prompt is summarised, the prompt is kept and retried once.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from pi_host.testing import RpcClient
from tests.fakeservers import AnthropicServer, anthropic_error, anthropic_reply
from tests.pi_reference import PI_HOST, clean_env

TOO_LONG = "prompt is too long: 213462 tokens > 200000 maximum"
ANSWER = "The answer, after compacting."
MODEL = {"id": "fake-1", "name": "Fake", "contextWindow": 200000, "maxTokens": 8192}


def replies() -> list[Any]:
    return [
        anthropic_reply("First answer."),
        anthropic_error(400, TOO_LONG),
        anthropic_reply("## Goal\nThe user said hello."),
        anthropic_reply(ANSWER),
    ]


def setup(agent: Path, server: AnthropicServer) -> dict[str, str]:
    agent.mkdir(exist_ok=True)
    provider = {"baseUrl": server.base_url, "api": "anthropic-messages", "apiKey": "test-key"}
    (agent / "models.json").write_text(json.dumps({"providers": {"fake": {**provider, "models": [MODEL]}}}))
    (agent / "settings.json").write_text(
        json.dumps({"retry": {"enabled": False, "provider": {"maxRetries": 0}}})
    )
    env = clean_env()
    env["PI_HOST_DIR"] = str(agent)
    return env


def run(tmp_path: Path, *args: str, stdin: str | None = None) -> tuple[subprocess.CompletedProcess[str], int]:
    with AnthropicServer(replies()) as server:
        env = setup(tmp_path / "agent", server)
        done = subprocess.run(
            [PI_HOST, "--model", "fake/fake-1", "--no-session", *args],
            cwd=tmp_path,
            env=env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return done, len(server.requests)


def test_print_mode_prints_the_answer_after_the_recovery(tmp_path: Path) -> None:
    done, requests = run(tmp_path, "-p", "hello", "what now?")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == ANSWER
    assert TOO_LONG not in done.stdout
    assert requests == 4  # reply, overflow, summary, retried prompt


def test_json_mode_streams_the_compaction_and_the_answer(tmp_path: Path) -> None:
    done, requests = run(tmp_path, "--mode", "json", "hello", "what now?")
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    kinds = [r["type"] for r in records]
    start = kinds.index("compaction_start")
    end = records[kinds.index("compaction_end")]
    assert records[start]["reason"] == "overflow"
    assert (end["reason"], end["willRetry"], end["aborted"]) == ("overflow", True, False)
    assert "errorMessage" not in end
    last = [r for r in records if r["type"] == "message_end" and r["message"]["role"] == "assistant"][-1]
    assert last["message"]["content"][0]["text"] == ANSWER
    assert requests == 4


def test_rpc_mode_answers_after_the_recovery(tmp_path: Path) -> None:
    with AnthropicServer(replies()) as server:
        env = setup(tmp_path / "agent", server)
        argv = [PI_HOST, "--model", "fake/fake-1", "--no-session", "--mode", "rpc"]
        with RpcClient(argv, cwd=tmp_path, env=env) as client:
            records = client.records
            for message in ("hello", "what now?"):
                client.send({"type": "prompt", "message": message})
                client.wait_for(lambda r: r["type"] == "agent_end" and not _retrying(records))
            assert client.close(timeout=30) == 0
        assert len(server.requests) == 4
    ends = [r for r in records if r["type"] == "compaction_end"]
    assert [(e["reason"], e["willRetry"]) for e in ends] == [("overflow", True)]
    last = [r for r in records if r["type"] == "message_end" and r["message"]["role"] == "assistant"][-1]
    assert last["message"]["content"][0]["text"] == ANSWER


def _retrying(records: list[dict[str, Any]]) -> bool:
    """The overflow's agent_end: a compaction (and a retried run) follows it."""
    overflowed = [
        r for r in records if r["type"] == "message_end" and r["message"].get("stopReason") == "error"
    ]
    return bool(overflowed) and not any(r["type"] == "compaction_end" for r in records)
