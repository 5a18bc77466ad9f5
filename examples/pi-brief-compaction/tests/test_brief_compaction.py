"""pi-brief-compaction through a real pi-host, with pi-compaction not installed."""

from __future__ import annotations

import json
import subprocess
from importlib.metadata import distributions
from typing import Any

import brief_compaction

from pi_host import UserMessage
from pi_host.testing import CliRunner, HostFactory, error, isolated_environ, script_json

OVERFLOW = "400 prompt is too long: 213462 tokens > 200000 maximum"
STEPS = ["Hello to you.", error(OVERFLOW), "The final answer."]


def test_pi_compaction_is_not_installed() -> None:
    names = {dist.metadata["Name"] for dist in distributions()}
    assert "pi-compaction" not in names and "pi-brief-compaction" in names


def test_the_summary_lists_the_requests() -> None:
    summary = brief_compaction.brief_summary([UserMessage(content="fix the parser " * 10)], max_line_chars=20)
    assert summary == f"{brief_compaction.SUMMARY_HEADING}\n- The user asked: fix the parser fix…"


async def test_an_overflow_is_compacted_with_the_plugin_summary_and_answered(make_host: HostFactory) -> None:
    host = make_host(load=["brief-compaction"], replies=STEPS)
    await host.run("hello")
    outcome = await host.run("what now?")
    outcome.assert_text("The final answer.")
    session = await host.session()
    (entry,) = [e for e in session.session_manager.get_entries() if e.type == "compaction"]
    assert entry.summary == f"{brief_compaction.SUMMARY_HEADING}\n- The user asked: hello"
    ends = [e for e in host.events if e.type == "compaction_end"]
    assert [(e.reason, e.will_retry, e.aborted) for e in ends] == [("overflow", True, False)]
    # The retried request starts from the summary and keeps the prompt.
    retried = host.provider.requests[-1]
    assert retried.last_user_text == "what now?"
    assert brief_compaction.SUMMARY_HEADING in json.dumps([m.to_json_dict() for m in retried.messages])


async def test_compact_uses_the_plugin(make_host: HostFactory) -> None:
    host = make_host(load=["brief-compaction"], replies=["one", "two"])
    await host.run("first")
    await host.run("second")
    session = await host.session()
    result = await session.compact()
    assert result is not None and result.summary.startswith(brief_compaction.SUMMARY_HEADING)
    assert "- The user asked: first" in result.summary


def test_print_mode_prints_the_answer_after_the_recovery(run_cli: CliRunner) -> None:
    result = run_cli("--provider", "faux", "--no-session", "-p", "hello", "what now?", replies=STEPS)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "The final answer."


def test_json_mode_shows_the_compaction_and_the_answer(run_cli: CliRunner) -> None:
    result = run_cli(
        "--provider", "faux", "--no-session", "--mode", "json", "hello", "what now?", replies=STEPS
    )
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    (end,) = [r for r in records if r["type"] == "compaction_end"]
    assert (end["reason"], end["willRetry"]) == ("overflow", True)
    assert end["result"]["summary"].startswith(brief_compaction.SUMMARY_HEADING)
    last = [r for r in records if r["type"] == "message_end" and r["message"]["role"] == "assistant"][-1]
    assert last["message"]["content"][0]["text"] == "The final answer."


def test_rpc_mode_answers_after_the_recovery_and_compacts_on_request(run_cli: CliRunner) -> None:
    script = run_cli.root / "steps.json"
    script.write_text(json.dumps(script_json([*STEPS, "More."])))
    env = isolated_environ(run_cli.home, run_cli.agent_dir)
    env["PI_HOST_FAUX_SCRIPT"] = str(script)
    records: list[dict[str, Any]] = []
    with subprocess.Popen(
        [run_cli.executable(), "--provider", "faux", "--no-session", "--mode", "rpc"],
        cwd=run_cli.cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None

        def send(command: dict[str, Any], done: Any) -> None:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(json.dumps(command) + "\n")
            proc.stdin.flush()
            for line in proc.stdout:
                records.append(json.loads(line))
                if done(records[-1]):
                    return

        def answered(record: dict[str, Any]) -> bool:
            message = record.get("message") or {}
            return record["type"] == "message_end" and message.get("stopReason") == "stop"

        send({"type": "prompt", "message": "hello"}, answered)
        send({"type": "prompt", "message": "what now?"}, answered)
        send({"type": "prompt", "message": "and then?"}, answered)
        send({"id": "c", "type": "compact"}, lambda r: r.get("id") == "c")
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    texts = [r["message"]["content"][0]["text"] for r in records if answered(r)]
    assert texts == ["Hello to you.", "The final answer.", "More."]
    compact = next(r for r in records if r.get("id") == "c")
    assert compact["success"] is True, compact
    assert compact["data"]["summary"].startswith(brief_compaction.SUMMARY_HEADING)
