"""``pi-host batch``: real ``pi-host`` subprocesses against a scripted Anthropic server on 127.0.0.1.

The server picks each reply from the request (the task id is in the prompt), since 50 agents
at once ask in no particular order.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pi_host import BatchAttempt, BatchResult, BatchTask
from pi_host.batch._files import ResultsLog
from pi_host.modes._cli import main
from tests.batch_support import (
    MODEL,
    PI_HOST,
    SETTINGS,
    Script,
    processes_mentioning,
    results,
    wait_for,
    write_tasks,
)
from tests.fakeservers import AnthropicServer

# $/M tokens: a reply of 10 input and 5 output tokens costs $0.02.
COST = {"input": 1000, "output": 2000, "cacheRead": 0, "cacheWrite": 0}


@pytest.fixture
def script() -> Script:
    return Script()


@pytest.fixture
def server(script: Script) -> Iterator[AnthropicServer]:
    with AnthropicServer(respond=script) as server:
        yield server


@pytest.fixture
def environment(tmp_path: Path, server: AnthropicServer) -> dict[str, str]:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "settings.json").write_text(json.dumps(SETTINGS))
    model = {"id": "claude-local", "contextWindow": 100000, "maxTokens": 4096, "cost": COST}
    models = {
        "providers": {
            "local": {
                "baseUrl": server.url,
                "api": "anthropic-messages",
                "apiKey": "test-key",
                "models": [model],
            }
        }
    }
    (agent / "models.json").write_text(json.dumps(models))
    return {**os.environ, "PI_HOST_DIR": str(agent), "ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": ""}


def batch(
    tasks: Path, out: Path, environment: dict[str, str], *extra: str
) -> subprocess.CompletedProcess[str]:
    command = [PI_HOST, "batch", str(tasks), "--out", str(out), "--model", MODEL, *extra]
    return subprocess.run(command, env=environment, capture_output=True, text=True, timeout=120)


def test_fifty_tasks_with_overloads_and_one_failure_then_a_rerun_of_the_failed_one(
    tmp_path: Path, script: Script, environment: dict[str, str]
) -> None:
    ids = [f"t{n:02d}" for n in range(50)]
    tasks = write_tasks(tmp_path / "tasks.jsonl", ids)
    out = tmp_path / "out"
    for task in ids[:10]:
        script.overloaded_first[task] = 1  # absorbed by the agent's own retry
    script.overloaded_first["t10"] = 2  # outlasts it: an infrastructure failure, tried again
    script.refused.add("t20")

    first = batch(tasks, out, environment, "--concurrency", "8")

    assert first.returncode == 1, first.stderr
    lines = results(out)
    last = {result.id: result for result in lines}
    assert sorted(last) == ids
    assert sorted(result.id for result in lines if result.status == "failed") == ["t10", "t20"]
    failed = last["t20"]
    assert (failed.status, failed.infrastructure, failed.attempt, failed.stop_reason) == (
        "failed",
        False,
        1,
        "error",
    )
    assert "refused" in (failed.error or "")
    assert script.asked["t20"] == 1  # a task's own failure is not retried, by anyone
    retried = [result for result in lines if result.id == "t10"]
    assert [(r.attempt, r.status, r.infrastructure) for r in retried] == [
        (1, "failed", True),
        (2, "ok", False),
    ]
    for task in ids:
        if task == "t20":
            continue
        result = last[task]
        assert (result.status, result.exit_code, result.stop_reason, result.text) == (
            "ok",
            0,
            "stop",
            f"done {task}",
        )
        assert result.usage["input"] == 10 and result.usage["output"] == 5
        assert result.cost == pytest.approx(0.02)
        assert result.session is not None and Path(result.session).is_file()
        assert result.events is not None and Path(result.events).is_file()
        assert result.attempt == (2 if task == "t10" else 1)
    assert Path(last["t10"].events or "").name == "t10.2.jsonl"
    assert (out / "events" / "t10.1.jsonl").is_file()
    assert "Failed: t20" in first.stderr and "50 tasks: 49 ok, 1 failed" in first.stderr
    # Not a terminal: a plain line per attempt, the last one with the totals.
    assert "failed t10 (attempt 1): " in first.stderr and "; retrying" in first.stderr
    assert "[50/50] " in first.stderr and "49 ok, 1 failed, 0 running · $0.9800" in first.stderr

    asked_before = Counter(script.asked)
    script.refused.clear()
    second = batch(tasks, out, environment, "--concurrency", "8")

    assert second.returncode == 0, second.stderr
    new = results(out)[len(lines) :]
    assert [(r.id, r.attempt, r.status) for r in new] == [("t20", 2, "ok")]
    assert script.asked - asked_before == Counter({"t20": 1})
    assert "Running 1 of 50 tasks, 49 already ok" in second.stderr

    third = batch(tasks, out, environment)
    assert third.returncode == 0 and "Nothing to do" in third.stderr
    assert len(results(out)) == len(lines) + 1


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message["content"]
    return content if isinstance(content, list) else []


def test_ctrl_c_stops_the_running_tasks_and_a_rerun_resumes_the_rest(
    tmp_path: Path, script: Script, server: AnthropicServer, environment: dict[str, str]
) -> None:
    # Three at once: h0's reply never ends, h1 runs `sleep 600` in its bash tool, the third
    # slot runs q0..q3 one after another.
    ids = ["q0", "h0", "h1", "q1", "q2", "q3"]
    tasks = write_tasks(tmp_path / "tasks.jsonl", ids)
    out = tmp_path / "out"
    script.hang.add("h0")
    script.sleep.add("h1")
    command = [
        PI_HOST,
        "batch",
        str(tasks),
        "--out",
        str(out),
        "--model",
        "local/claude-local",
        "--concurrency",
        "3",
    ]
    coordinator = subprocess.Popen(
        command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    results_file = out / "results.jsonl"
    try:
        wait_for(
            lambda: results_file.is_file() and len(results_file.read_text().splitlines()) == 4, "4 results"
        )
        wait_for(lambda: script.asked["h0"] == 1, "the hanging reply")
        wait_for(lambda: len(processes_mentioning("h1-slept")) > 0, "the sleeping tool")
        assert len(processes_mentioning(str(out / "sessions"))) == 2
        coordinator.send_signal(signal.SIGINT)
        _, stderr = coordinator.communicate(timeout=60)
    finally:
        if coordinator.poll() is None:
            coordinator.kill()
    assert coordinator.returncode == 130, stderr
    assert "Interrupted" in stderr
    assert processes_mentioning(str(out / "sessions")) == []  # no orphaned pi-host
    assert processes_mentioning("h1-slept") == []  # nor the tool's process
    done = results(out)
    assert sorted(r.id for r in done) == ["q0", "q1", "q2", "q3"]
    assert all(r.status == "ok" for r in done)

    script.hang.clear()
    script.sleep.clear()
    # h1 was stopped in its tool call: its session resumes with the dangling call answered.
    (stopped,) = [path for path in (out / "sessions").glob("*.jsonl") if "toolu_h1" in path.read_text()]
    resumed = subprocess.run(
        [PI_HOST, "--session", str(stopped), "--model", MODEL, "-p", "task h1: go on"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert resumed.returncode == 0 and resumed.stdout.strip() == "done h1", resumed.stderr
    sent = [block for message in server.requests[-1].json()["messages"] for block in _blocks(message)]
    assert [block["tool_use_id"] for block in sent if block.get("type") == "tool_result"] == ["toolu_h1"]

    rerun = batch(tasks, out, environment, "--concurrency", "3")

    assert rerun.returncode == 0, rerun.stderr
    new = results(out)[4:]
    assert sorted((r.id, r.attempt) for r in new) == [("h0", 2), ("h1", 2)]  # the stopped logs are kept
    assert (out / "events" / "h0.1.jsonl").is_file()
    assert {r.id: r.text for r in new} == {"h0": "done h0", "h1": "done h1"}


def test_a_malformed_tasks_file_names_every_bad_line_and_runs_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        '{"id": "a", "prompt": "one"}\n'
        '{"id": "b", "prompt": "two"\n'
        '{"id": "c"}\n'
        "\n"
        '{"id": "a", "prompt": "again"}\n'
        '{"id": "d", "promt": "typo"}\n'
        '["e", "array"]\n'
        '{"id": "f", "prompt": "fine", "args": "--oops"}\n'
    )
    out = tmp_path / "out"

    status = main(["batch", str(tasks), "--out", str(out)])

    err = capsys.readouterr().err
    assert status == 2
    assert f"{tasks}:2: not valid JSON" in err
    assert f'{tasks}:3: "prompt" is missing' in err
    assert f"{tasks}:5: id 'a' is already the id of line 1" in err
    assert f'{tasks}:6: "prompt" is missing; "promt" is not a task key' in err
    assert f"{tasks}:7: a task is a JSON object" in err
    assert f'{tasks}:8: "args" must be a list of strings' in err
    assert f"{tasks}:1:" not in err and f"{tasks}:4:" not in err
    assert "Nothing was run" in err
    assert not out.exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["--out", "o"], "give one tasks file", id="no-file"),
        pytest.param(["t.jsonl"], "--out DIR is required", id="no-out"),
        pytest.param(
            ["t.jsonl", "--out", "o", "--concurrency", "0"], "--concurrency takes", id="concurrency"
        ),
        pytest.param(["t.jsonl", "--out", "o", "--provider", "x"], "unknown option --provider", id="unknown"),
    ],
)
def test_a_bad_command_line_is_refused(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["batch", *argv]) == 2
    assert message in capsys.readouterr().err


def test_an_unknown_executor_names_the_plugin_to_install(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_HOST_DIR", str(tmp_path / "agent"))
    # As without pi-batch-ray (the dev environment has it: it would start a real Ray here).
    monkeypatch.setenv("PI_HOST_DISABLE_PLUGINS", "batch_ray")
    tasks = write_tasks(tmp_path / "tasks.jsonl", ["a"])

    assert main(["batch", str(tasks), "--out", str(tmp_path / "out"), "--executor", "ray"]) == 1
    assert "pip install pi-batch-ray" in capsys.readouterr().err
    assert main(["batch", str(tasks), "--out", str(tmp_path / "out"), "--address", "ray://h:1"]) == 1
    assert "takes no --address" in capsys.readouterr().err


def test_a_torn_last_result_line_is_skipped_and_closed_off(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    good: dict[str, Any] = {
        "id": "a",
        "status": "ok",
        "exit_code": 0,
        "stop_reason": "stop",
        "usage": {},
        "cost": 0.0,
        "text": "",
        "session": None,
        "seconds": 1.0,
        "attempt": 1,
    }
    path.write_text(json.dumps(good) + "\n" + '{"id": "b", "sta')

    log = ResultsLog.open(path)
    assert log.skipped_lines == [2] and log.finished("a") and not log.finished("b")
    log.append(BatchResult.model_validate({**good, "id": "b", "attempt": 3}))
    log.close()

    again = ResultsLog.open(path)
    again.close()
    assert again.skipped_lines == [2] and again.finished("b") and again.attempts["b"] == 3


def test_an_attempt_past_the_timeout_is_killed_and_retried(
    tmp_path: Path, script: Script, environment: dict[str, str]
) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", ["slow"])
    out = tmp_path / "out"
    script.hang.add("slow")

    finished = batch(tasks, out, environment, "--timeout", "1.5", "--retries", "1")

    assert finished.returncode == 1, finished.stderr
    timed_out = "timed out after 1.5 s"
    expected = [(1, "failed", True, timed_out), (2, "failed", True, timed_out)]
    assert [(r.attempt, r.status, r.infrastructure, r.error) for r in results(out)] == expected
    assert processes_mentioning(str(out / "sessions")) == []


def test_sessions_can_go_to_a_store_and_redo_runs_ok_tasks_again(
    tmp_path: Path, environment: dict[str, str]
) -> None:
    from pi_host.session import SqliteStore

    tasks = write_tasks(tmp_path / "tasks.jsonl", ["s0", "s1"])
    out = tmp_path / "out"
    store = f"sqlite:///{tmp_path / 'sessions.db'}"
    command = [PI_HOST, "--session-store", store, "batch", str(tasks), "--out", str(out)]
    command += ["--model", MODEL]

    finished = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=120)

    assert finished.returncode == 0, finished.stderr
    first = results(out)
    assert sorted(r.id for r in first if r.status == "ok") == ["s0", "s1"]
    stored = SqliteStore(tmp_path / "sessions.db")
    try:
        in_store = {info.id for info in stored.list()}
    finally:
        stored.close()
    for result in first:
        uri, _, session_id = (result.session or "").partition("#")
        assert uri == store and session_id in in_store
    assert not (out / "sessions").exists()

    redo = subprocess.run([*command, "--redo"], env=environment, capture_output=True, text=True, timeout=120)

    assert redo.returncode == 0, redo.stderr
    again = sorted((r.id, r.attempt, r.status) for r in results(out)[len(first) :])
    assert again == [("s0", 2, "ok"), ("s1", 2, "ok")]


def test_a_terminal_gets_a_progress_bar_with_the_counts_and_the_cost(
    tmp_path: Path, script: Script, environment: dict[str, str]
) -> None:
    from tests.interactive_support.terminal import Terminal

    tasks = write_tasks(tmp_path / "tasks.jsonl", ["p0", "p1", "p2"])
    script.refused.add("p2")
    argv = [PI_HOST, "batch", str(tasks), "--out", str(tmp_path / "out"), "--model", MODEL]
    term = Terminal(argv, cwd=tmp_path, env=environment, columns=120)
    try:
        term.wait_for("3/3", timeout=60)
        assert term.wait_exit(timeout=60) == 1
        text = term.screen.text()
        assert "2 ok, 1 failed, 0 running · $0.0400" in text, term.dump()
        assert re.search(r"failed p2: 400 .*prompt of p2 is refused", text), term.dump()
        assert "━" in text  # the bar itself, not plain lines
        assert "[3/3]" not in text
    finally:
        term.close()


def test_the_local_executor_passes_the_executor_checks(tmp_path: Path) -> None:
    from pi_host import LocalExecutor
    from pi_host.testing import check_batch_executor

    check_batch_executor(LocalExecutor(), tmp_path, concurrency=2)


def test_a_second_batch_on_the_same_out_dir_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import fcntl

    monkeypatch.setenv("PI_HOST_DIR", str(tmp_path / "agent"))
    tasks = write_tasks(tmp_path / "tasks.jsonl", ["a"])
    out = tmp_path / "out"
    out.mkdir()
    with open(out / "batch.lock", "wb") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as the running batch holds it

        assert main(["batch", str(tasks), "--out", str(out)]) == 1

    assert "another pi-host batch is running on" in capsys.readouterr().err
    assert not (out / "results.jsonl").exists()


def test_relative_store_paths_are_made_absolute_for_the_tasks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pi_host.modes._batch_cmd import absolute_store_uri

    monkeypatch.chdir(tmp_path)
    assert absolute_store_uri("sqlite:///s.db") == f"sqlite:///{tmp_path}/s.db"
    assert absolute_store_uri("jsonl:sessions") == f"jsonl:{tmp_path}/sessions"
    assert absolute_store_uri("sessions") == str(tmp_path / "sessions")
    for unchanged in ("jsonl:", "sqlite:////abs/s.db", "file:///abs", "postgresql://u@db/agents"):
        assert absolute_store_uri(unchanged) == unchanged


def test_an_executor_that_breaks_down_mid_run_is_reported_and_what_finished_is_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from collections.abc import AsyncIterator, Sequence

    from pi_host import BatchExecutor, BatchExecutorError, BatchRun, BatchTask, LocalExecutor
    from pi_host.modes._batch_cmd import _Options, _run

    class LosesTheCluster(BatchExecutor):
        closed = False

        async def map(
            self, attempts: Sequence[BatchAttempt], run: BatchRun, *, concurrency: int
        ) -> AsyncIterator[BatchResult]:
            async for result in LocalExecutor().map(attempts[:1], run, concurrency=1):
                yield result
            raise BatchExecutorError("the cluster at ray://head:10001 went away")

        async def aclose(self) -> None:
            self.closed = True

    script = tmp_path / "faux.json"
    script.write_text(json.dumps([{"text": "first done"}]))
    env = {"PI_HOST_DIR": str(tmp_path / "agent"), "PI_HOST_FAUX_SCRIPT": str(script)}
    tasks = [BatchTask(id=f"b{n}", prompt="go", env=env) for n in range(3)]
    out = tmp_path / "out"
    run = BatchRun(
        out_dir=str(out),
        command=(sys.executable, "-m", "pi_host"),
        base_dir=str(tmp_path),
        extra_args=("--provider", "faux"),
    )
    executor = LosesTheCluster()
    out.mkdir()
    log = ResultsLog.open(out / "results.jsonl")
    try:
        status = _run(tasks, tasks, run, executor, log, _Options(tasks=tmp_path / "t.jsonl", out=out))
    finally:
        log.close()

    err = capsys.readouterr().err
    assert status == 1
    assert "Error: the local executor failed: the cluster at ray://head:10001 went away" in err
    assert "1 of 3 tasks finished" in err
    assert [(r.id, r.status, r.text) for r in results(out)] == [("b0", "ok", "first done")]
    assert executor.closed


def test_a_tasks_file_saved_with_a_byte_order_mark_reads(tmp_path: Path) -> None:
    from pi_host.batch._files import read_tasks

    tasks = tmp_path / "tasks.jsonl"
    lines = b'{"id": "a", "prompt": "one"}\r\n{"id": "b", "prompt": "two", "cwd": "x"}\r\n'
    tasks.write_bytes(b"\xef\xbb\xbf" + lines)
    read = [(task.id, task.prompt, task.cwd) for task in read_tasks(tasks)]
    assert read == [("a", "one", None), ("b", "two", "x")]


def test_a_result_for_an_attempt_that_never_measured_anything() -> None:
    attempt = BatchAttempt(task=BatchTask(id="t7", prompt="fix it"), attempt=2)
    result = BatchResult.failed(attempt, "worker lost", infrastructure=True, seconds=1.5)
    assert result.model_dump(mode="json") == {
        "id": "t7",
        "status": "failed",
        "exit_code": None,
        "stop_reason": None,
        "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0},
        "cost": 0.0,
        "text": "",
        "session": None,
        "seconds": 1.5,
        "attempt": 2,
        "error": "worker lost",
        "infrastructure": True,
        "events": None,
    }


def test_agents_of_a_coordinator_killed_with_sigkill_stop_and_leave_valid_sessions(
    tmp_path: Path, script: Script, environment: dict[str, str]
) -> None:
    # h0 ran a tool and is mid-way through its second reply, which never ends; h1 sits in
    # `sleep 600` in its bash tool. SIGKILL gives the coordinator no chance to stop them:
    # their lifelines end with it, and each shuts down as on SIGTERM.
    from pi_host.session import SessionManager

    ids = ["h0", "h1"]
    tasks = write_tasks(tmp_path / "tasks.jsonl", ids)
    out = tmp_path / "out"
    script.hang_after_tool.add("h0")
    script.sleep.add("h1")
    command = [PI_HOST, "batch", str(tasks), "--out", str(out), "--model", MODEL, "--concurrency", "2"]
    quiet = subprocess.DEVNULL
    coordinator = subprocess.Popen(command, env=environment, stdout=quiet, stderr=quiet)
    try:
        wait_for(lambda: script.asked["h0"] == 2, "h0's hanging second reply", timeout=20)
        wait_for(lambda: len(processes_mentioning("h1-slept")) > 0, "h1's sleeping tool")
        assert len(processes_mentioning(str(out / "sessions"))) == 2
        coordinator.kill()
        assert coordinator.wait(timeout=10) == -signal.SIGKILL
        wait_for(lambda: processes_mentioning(str(out / "sessions")) == [], "the agents to stop", timeout=10)
    finally:
        if coordinator.poll() is None:
            coordinator.kill()
        for orphan in processes_mentioning(str(out / "sessions")):  # a failed run leaves none behind
            with contextlib.suppress(ProcessLookupError):
                os.killpg(orphan, signal.SIGKILL)
    assert processes_mentioning("h1-slept") == []  # the tool's process went with its agent
    assert results(out) == []  # nobody was there to record them
    for task in ids:
        assert (out / "events" / f"{task}.1.stderr").read_text() == ""  # no traceback, no warning
    h1_events = (out / "events" / "h1.1.jsonl").read_text().splitlines()
    assert json.loads(h1_events[-1])["type"] == "agent_end"  # aborted and ended, not killed
    # h0 keeps its tool call and result (the reply in flight is not saved, as on SIGTERM);
    # h1's interrupted call has its result and the aborted reply after it.
    expected = {
        "h0": ["user", "assistant", "toolResult"],
        "h1": ["user", "assistant", "toolResult", "assistant"],
    }
    for task, roles in expected.items():
        (file,) = [f for f in (out / "sessions").glob("*.jsonl") if f"toolu_{task}" in f.read_text()]
        manager = SessionManager.open(file, cache_dir=False)
        assert manager.warnings == []
        assert [message.role for message in manager.build_session_context().messages] == roles, task
