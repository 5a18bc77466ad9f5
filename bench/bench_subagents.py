"""pi-subagents: what one in-process child costs, against starting a separate ``pi-host -p``.

Run with ``uv run python bench/bench_subagents.py [--runs N]``.

- *in-process child*: median wall time of what the ``task`` tool does for one child on the
  scripted ``faux`` model: ``ctx.create_child_session`` (a fresh host loading the parent's
  plugins, settings, the session file), ``start``, one prompt answered in one reply, and
  ``shutdown``. Memory: the peak Python allocation while 20 children run one after another
  (``tracemalloc``), and what stays allocated after 5 and after 20 of them: the same amount
  when finished children are freed (what remains is caches), growing if they leaked.
- *separate process*: median wall time of ``pi-host --provider faux -p hi`` (interpreter
  start-up, imports, plugin loading, one reply) and the largest child's peak RSS.

Both load the same installed plugins. Figures taken while other work loads the machine are
inflated; read the ratio of the two rows of one run.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import anyio

PI_HOST = shutil.which("pi-host") or str(Path(sys.executable).parent / "pi-host")


def _environ(root: Path) -> dict[str, str]:
    script = root / "faux.json"
    script.write_text(json.dumps([{"text": "hello"}] * 4))
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("PI_HOST")},
        "HOME": str(root),
        "PI_HOST_DIR": str(root / "agent"),
        "PI_HOST_FAUX_SCRIPT": str(script),
    }


async def in_process(root: Path, runs: int) -> tuple[float, int, list[int]]:
    from pi_host import SessionOptions, create_session

    project = root / "project"
    project.mkdir(parents=True, exist_ok=True)
    os.environ.update(_environ(root))
    parent = await create_session(SessionOptions(cwd=str(project), provider="faux", model="faux-1"))
    await parent.start("startup")

    async def one_child() -> None:
        child = await parent.ctx.create_child_session(
            SessionOptions(cwd=str(project), provider="faux", model="faux-1", no_tools=True)
        )
        async with anyio.create_task_group() as tg:
            child.bind_task_group(tg)
            await child.start("startup")
            await child.prompt("hi")
            await child.agent.wait_for_idle()
            child.bind_task_group(None)
        await child.shutdown("quit")

    await one_child()  # warm: first-use imports are the process's, not a child's
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        await one_child()
        times.append(time.perf_counter() - started)
    gc.collect()
    tracemalloc.start()
    before, _ = tracemalloc.get_traced_memory()
    kept: list[int] = []
    for count in range(1, 21):
        await one_child()
        if count in (5, 20):
            gc.collect()
            kept.append(tracemalloc.get_traced_memory()[0] - before)
    peak = tracemalloc.get_traced_memory()[1] - before
    tracemalloc.stop()
    await parent.shutdown("quit")
    return statistics.median(times), peak, kept


def separate_process(root: Path, runs: int) -> tuple[float, int]:
    project = root / "project"
    project.mkdir(parents=True, exist_ok=True)
    env = _environ(root)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        result = subprocess.run(
            [PI_HOST, "--provider", "faux", "-p", "hi"], cwd=project, env=env, capture_output=True, text=True
        )
        times.append(time.perf_counter() - started)
        if result.returncode != 0 or result.stdout.strip() != "hello":
            raise SystemExit(f"pi-host failed: {result.stderr}")
    rss_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return statistics.median(times), rss_kib * 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        wall, peak, kept = anyio.run(in_process, root / "inproc", options.runs)
        proc_wall, rss = separate_process(root / "proc", options.runs)
    print(f"one child, median of {options.runs} (faux model, one reply):")
    memory = (
        f"peak alloc {peak / 2**20:5.1f} MiB, kept after 5/20 children {kept[0] >> 10}/{kept[1] >> 10} KiB"
    )
    print(f"  in-process child     {wall * 1000:8.1f} ms   {memory}")
    print(f"  pi-host -p process   {proc_wall * 1000:8.1f} ms   peak RSS   {rss / 2**20:6.1f} MiB")
    print(f"  ratio                {proc_wall / wall:8.1f}x faster in-process")


if __name__ == "__main__":
    main()
