"""``pi-host batch --executor ray`` on a real local Ray instance (2 CPUs), against a scripted
Anthropic server on 127.0.0.1; the agents are real ``pi-host`` subprocesses on Ray workers.

The coordinator is a ``pi-host batch`` subprocess joining the test's instance with
``--address``, as it joins a cluster; the executor's own tests drive :class:`RayExecutor`
in this process on the same instance.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from pi_batch_ray import RayExecutor

from pi_host import BatchAttempt, BatchResult, BatchRun, BatchTask
from pi_host.testing import check_batch_executor
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

from .conftest import RayInstance


@pytest.fixture
def script() -> Script:
    return Script()


@pytest.fixture
def server(script: Script) -> Iterator[AnthropicServer]:
    with AnthropicServer(respond=script) as server:
        yield server


@pytest.fixture
def agent_dir(tmp_path: Path, server: AnthropicServer) -> Path:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "settings.json").write_text(json.dumps(SETTINGS))
    model = {"id": "claude-local", "contextWindow": 100000, "maxTokens": 4096}
    provider = {"baseUrl": server.url, "api": "anthropic-messages", "apiKey": "test-key", "models": [model]}
    (agent / "models.json").write_text(json.dumps({"providers": {"local": provider}}))
    return agent


@pytest.fixture
def environment(agent_dir: Path) -> dict[str, str]:
    return {**os.environ, "PI_HOST_DIR": str(agent_dir), "ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": ""}


def batch_command(tasks: Path, out: Path, ray_instance: RayInstance, *extra: str) -> list[str]:
    return [
        PI_HOST,
        "batch",
        str(tasks),
        "--out",
        str(out),
        "--model",
        MODEL,
        "--executor",
        "ray",
        "--address",
        ray_instance.address,
        *extra,
    ]


def batch(
    tasks: Path, out: Path, ray_instance: RayInstance, environment: dict[str, str], *extra: str
) -> subprocess.CompletedProcess[str]:
    command = batch_command(tasks, out, ray_instance, *extra)
    return subprocess.run(command, env=environment, capture_output=True, text=True, timeout=190)


def niceness(pid: int) -> int:
    # /proc/PID/stat: the 19th field, counted after the command name in parentheses.
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[16])


def all_cpus_free(ray_instance: RayInstance) -> bool:
    return bool(ray_instance.ray.available_resources().get("CPU") == 2.0)


# Two `pi-host batch` runs of 50 agent processes on two CPUs: about 30 s on an idle 2-core
# machine, several times that on a loaded one.
@pytest.mark.timeout(400)
def test_fifty_tasks_with_overloads_and_one_failure_then_a_rerun_of_the_failed_one(
    tmp_path: Path, script: Script, environment: dict[str, str], ray_instance: RayInstance
) -> None:
    ids = [f"t{n:02d}" for n in range(50)]
    tasks = write_tasks(tmp_path / "tasks.jsonl", ids)
    out = tmp_path / "out"
    for task in ids[:10]:
        script.overloaded_first[task] = 1  # absorbed by the agent's own retry
    script.overloaded_first["t10"] = 2  # outlasts it: an infrastructure failure, tried again
    script.refused.add("t20")

    first = batch(tasks, out, ray_instance, environment, "--concurrency", "4")

    assert first.returncode == 1, first.stderr
    lines = results(out)
    last = {result.id: result for result in lines}
    assert sorted(last) == ids
    assert sorted(result.id for result in lines if result.status == "failed") == ["t10", "t20"]
    failed = last["t20"]
    assert (failed.status, failed.infrastructure, failed.attempt) == ("failed", False, 1)
    assert "refused" in (failed.error or "")
    assert script.asked["t20"] == 1  # a task's own failure is not retried, by Ray or pi-host
    assert [(r.attempt, r.status, r.infrastructure) for r in lines if r.id == "t10"] == [
        (1, "failed", True),
        (2, "ok", False),
    ]
    for task in set(ids) - {"t20"}:
        result = last[task]
        assert (result.status, result.exit_code, result.text) == ("ok", 0, f"done {task}")
        assert result.session is not None and Path(result.session).is_file()
    assert "executor ray" in first.stderr
    assert "Failed: t20" in first.stderr and "50 tasks: 49 ok, 1 failed" in first.stderr

    asked_before = Counter(script.asked)
    script.refused.clear()
    second = batch(tasks, out, ray_instance, environment, "--concurrency", "4")

    assert second.returncode == 0, second.stderr
    assert [(r.id, r.attempt, r.status) for r in results(out)[len(lines) :]] == [("t20", 2, "ok")]
    assert script.asked - asked_before == Counter({"t20": 1})
    wait_for(lambda: all_cpus_free(ray_instance), "the Ray CPUs to be free")


def test_ctrl_c_cancels_the_ray_tasks_and_kills_their_agents(
    tmp_path: Path, script: Script, environment: dict[str, str], ray_instance: RayInstance
) -> None:
    ids = ["h0", "h1", "h2"]
    tasks = write_tasks(tmp_path / "tasks.jsonl", ids)
    out = tmp_path / "out"
    script.hang.update(ids)
    coordinator = subprocess.Popen(
        batch_command(tasks, out, ray_instance, "--concurrency", "3"),
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # All three are submitted; two hold the two Ray CPUs, the third waits in Ray's queue.
        wait_for(lambda: sum(script.asked[i] for i in ids) == 2, "two hanging tasks to ask")
        agents = processes_mentioning(str(out / "sessions"))
        assert len(agents) == 2
        # Not Ray's worker niceness (15): the agents are the work.
        assert [niceness(pid) for pid in agents] == [0, 0]
        coordinator.send_signal(signal.SIGINT)
        _, stderr = coordinator.communicate(timeout=60)
    finally:
        if coordinator.poll() is None:
            coordinator.kill()
    assert coordinator.returncode == 130, stderr
    assert "Interrupted" in stderr
    assert processes_mentioning(str(out / "sessions")) == []  # no orphaned pi-host
    assert sum(script.asked[i] for i in ids) == 2  # the queued one was cancelled, never started
    results_file = out / "results.jsonl"
    assert not results_file.exists() or results(out) == []  # stopped attempts are not results
    wait_for(lambda: all_cpus_free(ray_instance), "the Ray CPUs to be free")


def test_without_an_address_the_batch_starts_its_own_ray_instance_and_stops_it(
    tmp_path: Path, environment: dict[str, str]
) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", ["l0", "l1"])
    out = tmp_path / "out"
    # Ray keeps its sockets under RAY_TMPDIR, whose path must stay short (108 bytes a socket).
    ray_tmp = Path(tempfile.mkdtemp(prefix="pbr", dir="/tmp"))
    try:
        env = {key: value for key, value in environment.items() if key != "RAY_ADDRESS"}
        env["RAY_TMPDIR"] = str(ray_tmp)
        env["RAY_AUTH_TOKEN"] = uuid.uuid4().hex  # else Ray writes a new one to ~/.ray
        command = [PI_HOST, "batch", str(tasks), "--out", str(out), "--model", MODEL, "--executor", "ray"]
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=190)

        assert done.returncode == 0, done.stderr
        assert sorted((r.id, r.status) for r in results(out)) == [("l0", "ok"), ("l1", "ok")]
        assert (ray_tmp / "ray").is_dir()  # the instance was this batch's own
        assert processes_mentioning(str(ray_tmp)) == []  # its GCS, raylet and agents are gone
        assert "WARNING" not in done.stderr  # Ray's log lines stay off the coordinator's terminal
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)


def test_the_executor_passes_pi_hosts_executor_checks_and_leaves_ray_running(
    tmp_path: Path, ray_instance: RayInstance
) -> None:
    # The test's instance is already up in this process: the executor uses it and must not
    # shut it down. The checks' tasks carry their agent directory in their env.
    executor = RayExecutor()
    check_batch_executor(executor, tmp_path, concurrency=2)
    anyio.run(executor.aclose)

    assert ray_instance.ray.is_initialized()
    wait_for(lambda: all_cpus_free(ray_instance), "the Ray CPUs to be free")


def test_a_ray_worker_killed_mid_task_is_an_infrastructure_failure(
    tmp_path: Path, script: Script, agent_dir: Path, ray_instance: RayInstance
) -> None:
    script.hang.add("lost")
    out = tmp_path / "out"
    run = BatchRun(
        out_dir=str(out),
        command=(sys.executable, "-m", "pi_host"),
        base_dir=str(tmp_path),
        extra_args=("--model", MODEL),
    )
    # The test's Ray workers have this process's environment: the agent directory goes in the task's.
    env = {"PI_HOST_DIR": str(agent_dir), "ANTHROPIC_API_KEY": ""}
    attempt = BatchAttempt(task=BatchTask(id="lost", prompt="task lost: hang", env=env), attempt=3)
    executor = RayExecutor()

    async def main() -> list[BatchResult]:
        results = executor.map([attempt], run, concurrency=1)

        async def kill_the_worker() -> None:
            await anyio.to_thread.run_sync(wait_for, lambda: script.asked["lost"] == 1, "the task to ask")
            (agent,) = processes_mentioning(str(out / "sessions"))
            worker = int(Path(f"/proc/{agent}/stat").read_text().rsplit(")", 1)[1].split()[1])  # its parent
            os.kill(worker, signal.SIGKILL)

        async with anyio.create_task_group() as group:
            group.start_soon(kill_the_worker)
            got = [result async for result in results]
        await executor.aclose()
        return got

    (result,) = anyio.run(main)
    assert (result.id, result.status, result.attempt, result.infrastructure) == ("lost", "failed", 3, True)
    assert "Ray" in (result.error or "")
    wait_for(lambda: processes_mentioning(str(out / "sessions")) == [], "the lost worker's agent to end")
