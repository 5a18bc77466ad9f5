"""The batch-executor conformance checks: what every :class:`pi_host.BatchExecutor` must do.

They run real ``pi-host --mode json -p`` processes (the scripted ``faux`` provider, one JSON
script per task) through the executor under test, so they pass only for an executor whose
workers can start ``sys.executable -m pi_host`` and see the check's folder (a local pool, a
local Ray instance ...).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pi_host.batch import BatchAttempt, BatchExecutor, BatchResult, BatchRun

__all__ = ["check_batch_executor", "check_executor_runs_every_attempt", "check_executor_stops_on_close"]

_STARTS_WITHIN_S = 120.0  # how long the stop check waits for its processes to be running


def _batch(
    workdir: Path, name: str, scripts: dict[str, list[dict[str, object]]]
) -> tuple[BatchRun, list[BatchAttempt]]:
    from pi_host.batch import BatchAttempt, BatchRun, BatchTask

    root = workdir / name
    (root / "agent").mkdir(parents=True, exist_ok=True)
    attempts = []
    for task_id, steps in scripts.items():
        script = root / f"{task_id}.faux.json"
        script.write_text(json.dumps(steps), encoding="utf-8")
        env = {"PI_HOST_DIR": str(root / "agent"), "PI_HOST_FAUX_SCRIPT": str(script)}
        task = BatchTask(id=task_id, prompt=f"task {task_id}", env=env)
        attempts.append(BatchAttempt(task=task, attempt=1))
    run = BatchRun(
        out_dir=str(root / "out"),
        command=(sys.executable, "-m", "pi_host"),
        base_dir=str(root),
        extra_args=("--provider", "faux"),
    )
    return run, attempts


def _task_processes(run: BatchRun) -> list[int]:
    """The live processes started for ``run`` (found by their ``--session-dir`` argument)."""
    marker = f"--session-dir\0{Path(run.out_dir) / 'sessions'}\0".encode()
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as handle:
                command = handle.read()
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                zombie = handle.read().rsplit(b")", 1)[-1].split()[0] == b"Z"
        except (OSError, IndexError):
            continue
        if marker in command and not zombie:
            found.append(int(entry.name))
    return found


def _waiting_for_reply(run: BatchRun, attempt: BatchAttempt) -> bool:
    from pi_host.batch._task import attempt_file_stem

    log = Path(run.out_dir) / "events" / f"{attempt_file_stem(attempt.task.id, attempt.attempt)}.jsonl"
    try:
        return b'"type":"turn_start"' in log.read_bytes()
    except OSError:
        return False


class _Watcher(threading.Thread):
    """The most task processes seen alive at once (sampled: a real excess may be missed, a
    reported one is real)."""

    def __init__(self, run: BatchRun) -> None:
        super().__init__(daemon=True)
        self._run = run
        self._done = threading.Event()
        self.most = 0

    def run(self) -> None:
        while not self._done.wait(0.02):
            self.most = max(self.most, len(_task_processes(self._run)))

    def stop(self) -> None:
        self._done.set()
        self.join()


def check_executor_runs_every_attempt(
    executor: BatchExecutor, workdir: Path, *, concurrency: int = 2
) -> None:
    """Five attempts, one of which fails on its own: exactly one result for each, in any
    order, with the reply's text, and never more than ``concurrency`` processes at once."""
    import anyio

    scripts: dict[str, list[dict[str, object]]] = {f"ok{n}": [{"text": f"done ok{n}"}] for n in range(4)}
    scripts["refused"] = [{"error": "the task cannot be done as asked"}]
    run, attempts = _batch(workdir, "every-attempt", scripts)
    watcher = _Watcher(run)

    async def collect() -> list[BatchResult]:
        results = executor.map(attempts, run, concurrency=concurrency)
        return [result async for result in results]

    watcher.start()
    try:
        results = anyio.run(collect)
    finally:
        watcher.stop()
    ids = sorted(result.id for result in results)
    assert ids == sorted(scripts), f"expected one result per attempt ({sorted(scripts)}), got {ids}"
    for result in results:
        if result.id == "refused":
            assert result.status == "failed" and not result.infrastructure, (
                f"a task that fails on its own must be failed, not infrastructure: {result!r}"
            )
            continue
        assert result.status == "ok", f"task {result.id} should be ok: {result!r}"
        assert result.text == f"done {result.id}", f"task {result.id}'s text is {result.text!r}"
        assert result.attempt == 1, f"task {result.id} came back as attempt {result.attempt}"
        assert result.events and Path(result.events).is_file(), f"task {result.id} has no event log"
    assert watcher.most <= concurrency, (
        f"{watcher.most} task processes ran at once, over concurrency {concurrency}"
    )


def check_executor_stops_on_close(executor: BatchExecutor, workdir: Path) -> None:
    """Two attempts whose replies take ten minutes: once both agents are waiting for their
    reply, cancelling the consumer and closing the iterator leaves no task process behind,
    and yields nothing."""
    import anyio

    slow: list[dict[str, object]] = [{"text": "slow answer", "delayMs": 600_000}]
    run, attempts = _batch(workdir, "stops-on-close", {"slow0": slow, "slow1": slow})
    got: list[BatchResult] = []

    async def main() -> None:
        results = executor.map(attempts, run, concurrency=2)

        async def consume() -> None:
            async for result in results:
                got.append(result)

        async with anyio.create_task_group() as group:
            group.start_soon(consume)
            deadline = time.monotonic() + _STARTS_WITHIN_S
            while not all(_waiting_for_reply(run, attempt) for attempt in attempts):
                assert time.monotonic() < deadline, "the two tasks did not start"
                await anyio.sleep(0.05)
            assert len(_task_processes(run)) == 2, "the two task processes are not running"
            group.cancel_scope.cancel()
        close = getattr(results, "aclose", None)
        if close is not None:
            await close()

    anyio.run(main)
    left = _task_processes(run)
    assert not left, f"task processes {left} still run after the iterator was closed"
    assert not got, f"the slow attempts cannot have finished: {got!r}"


def check_batch_executor(executor: BatchExecutor, workdir: Path, *, concurrency: int = 2) -> None:
    """Every check, in order; ``workdir`` is an empty folder the executor's workers can reach."""
    check_executor_runs_every_attempt(executor, workdir, concurrency=concurrency)
    check_executor_stops_on_close(executor, workdir)
