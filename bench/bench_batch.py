"""Batch runs: tasks per minute and peak memory per concurrent task, per executor.

Run with ``uv run python bench/bench_batch.py [--executor local,ray] [--address ADDR]
[--tasks 40] [--concurrency 1,4,8] [--latency 1.0]``; every executor named runs every
concurrency, in one run (``ray`` when pi-batch-ray is installed: without ``--address`` each
``pi-host batch`` starts and stops its own local Ray instance, as on a laptop).

Each run is a real ``pi-host batch`` over ``--tasks`` one-reply tasks against the scripted
Anthropic server on 127.0.0.1, which answers every request after ``--latency`` seconds (the
time a real model takes to start answering), so the figures show what the pool adds to the
model's own time.

- *tasks/min*: tasks over the batch's wall time, the coordinator's start-up included.
- *peak RSS/task*: the task processes (every ``pi-host`` started for this batch, found by
  its ``--session-dir``) are sampled every 20 ms; the largest sum of their resident memory,
  divided by the most that ran at once. RSS counts the shared interpreter pages in every
  process, so it overstates what each process adds. With Ray the Ray worker process that
  holds each task (``ray::...``) counts too, since each running task needs one.
- *executor MiB*: the peak RSS of the executor's own processes, paid once per batch whatever
  the concurrency: for Ray its GCS, raylet and agents (none for ``local``).

Figures measured while other work loads the machine are inflated; compare executors and
concurrencies within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the scripted servers of tests/fakeservers

from tests.fakeservers import AnthropicServer, RecordedRequest, Reply, anthropic_reply  # noqa: E402

PI_HOST = shutil.which("pi-host") or str(Path(sys.executable).parent / "pi-host")


def _rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _task_processes(marker: bytes) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as handle:
                if marker in handle.read():
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


_RAY_WORKERS = (b"ray::IDLE", b"ray::run_attempt")  # a pooled worker, one running a task


def _ray_processes() -> tuple[list[int], list[int]]:
    """Ray's worker processes (``ray::IDLE``, ``ray::run_attempt``) and its own (GCS, raylet,
    ``ray::DashboardAgent``, ``ray::RuntimeEnvAgent``, the scripts under the ``ray`` package)."""
    workers, system = [], []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as handle:
                command = handle.read()
        except OSError:
            continue
        if command.startswith(_RAY_WORKERS):
            workers.append(int(entry.name))
        elif command.startswith(b"ray::") or b"site-packages/ray/" in command:
            system.append(int(entry.name))
    return workers, system


class _Sampler(threading.Thread):
    """The peak of the task processes' summed RSS, and the most of them alive at once; with
    ``ray``, the workers' RSS with the tasks' and the peak of Ray's own processes."""

    def __init__(self, marker: str, *, ray: bool = False) -> None:
        super().__init__(daemon=True)
        self._marker = marker.encode()
        self._ray = ray
        self._stop_event = threading.Event()
        self.peak_kib = 0
        self.peak_count = 0
        self.executor_kib = 0

    def run(self) -> None:
        while not self._stop_event.wait(0.02):
            pids = _task_processes(self._marker)
            self.peak_count = max(self.peak_count, len(pids))
            workers, system = _ray_processes() if self._ray else ([], [])
            # Idle Ray workers are pooled up front (one per CPU); only those holding a task
            # count for it, at most one per running task.
            busy = sorted((_rss_kib(pid) for pid in workers), reverse=True)[: len(pids)]
            self.peak_kib = max(self.peak_kib, sum(_rss_kib(pid) for pid in pids) + sum(busy))
            self.executor_kib = max(self.executor_kib, sum(_rss_kib(pid) for pid in system))

    def stop(self) -> None:
        self._stop_event.set()
        self.join()


def _one(
    server: AnthropicServer, workdir: Path, tasks: int, concurrency: int, executor: str, address: str | None
) -> dict[str, float]:
    agent = workdir / "agent"
    agent.mkdir(parents=True, exist_ok=True)
    models = {
        "providers": {
            "local": {
                "baseUrl": server.url,
                "api": "anthropic-messages",
                "apiKey": "bench-key",
                "models": [{"id": "claude-local", "contextWindow": 100000, "maxTokens": 4096}],
            }
        }
    }
    (agent / "models.json").write_text(json.dumps(models))
    tasks_file = workdir / "tasks.jsonl"
    tasks_file.write_text(
        "".join(json.dumps({"id": f"t{n}", "prompt": f"task t{n}"}) + "\n" for n in range(tasks))
    )
    out = workdir / f"out-{executor}-{concurrency}"
    command = [PI_HOST, "batch", str(tasks_file), "--out", str(out), "--executor", executor]
    command += ["--concurrency", str(concurrency), "--model", "local/claude-local"]
    if address:
        command += ["--address", address]
    environment = {**os.environ, "PI_HOST_DIR": str(agent), "ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": ""}
    sampler = _Sampler(f"--session-dir\0{out / 'sessions'}", ray=executor == "ray")
    sampler.start()
    start = time.perf_counter()
    finished = subprocess.run(command, env=environment, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    sampler.stop()
    if finished.returncode != 0:
        raise SystemExit(f"pi-host batch failed ({finished.returncode}):\n{finished.stderr}")
    return {
        "tasks_per_min": tasks / seconds * 60,
        "seconds": seconds,
        "peak_concurrent": sampler.peak_count,
        "peak_rss_mib": sampler.peak_kib / 1024,
        "rss_per_task_mib": sampler.peak_kib / 1024 / max(sampler.peak_count, 1),
        "executor_mib": sampler.executor_kib / 1024,
    }


def _default_executors() -> str:
    import importlib.util

    return "local,ray" if importlib.util.find_spec("pi_batch_ray") else "local"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--executor",
        default=_default_executors(),
        help="comma-separated --executor values of pi-host batch (default: local, and ray when installed)",
    )
    parser.add_argument("--address", default=None, help="the --address of pi-host batch")
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--concurrency", default="1,4,8", help="comma-separated")
    parser.add_argument("--latency", type=float, default=1.0, help="seconds before each reply")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    options = parser.parse_args()

    def respond(request: RecordedRequest) -> Reply:
        return anthropic_reply("done", ttft=options.latency)

    rows = []
    server = AnthropicServer(respond=respond)
    with server, tempfile.TemporaryDirectory() as tmp:
        for executor in options.executor.split(","):
            address = options.address if executor != "local" else None
            for concurrency in [int(part) for part in options.concurrency.split(",")]:
                figures = _one(server, Path(tmp), options.tasks, concurrency, executor, address)
                rows.append({"executor": executor, "concurrency": concurrency, **figures})
    if options.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{options.tasks} tasks, {options.latency:g} s model latency each")
    print(
        "| executor | concurrency | tasks/min | wall s | peak running | peak RSS MiB | RSS/task MiB "
        "| executor MiB |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['executor']} | {row['concurrency']} | {row['tasks_per_min']:.0f} | {row['seconds']:.1f} "
            f"| {row['peak_concurrent']} | {row['peak_rss_mib']:.0f} | {row['rss_per_task_mib']:.0f} "
            f"| {row['executor_mib']:.0f} |"
        )


if __name__ == "__main__":
    main()
