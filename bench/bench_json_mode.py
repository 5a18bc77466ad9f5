"""``--mode json`` throughput: message_update lines per second and CPU time per event.

Runs ``pi-host --mode json`` as a subprocess (default plugins) against a fake Anthropic server
in another process that streams one reply of ``--deltas`` one-character text deltas, as
``bench/run.py``'s ``json-20k`` workload does. This process only counts lines (in C), so it
keeps up with several hundred MiB. Reports the median over ``--runs`` of events/s and of
pi-host's CPU time (user + system, from ``wait4``) per event.

    uv run python bench/bench_json_mode.py [--deltas 20000] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.side_by_side._agents import DEFAULT_PLUGINS, MODEL, write_models_json  # noqa: E402

PATTERN = b'\n{"type":"message_update"'


def _start_server(deltas: int, runs: int, directory: Path) -> tuple[subprocess.Popen[str], str]:
    path = directory / "script.json"
    path.write_text(json.dumps([{"reply": {"content": "x" * deltas, "chunk_size": 1}}] * runs))
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.fakeservers.anthropic", "--port", "0", "--script", str(path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    return server, server.stdout.readline().split("listening on ", 1)[1].strip()


def run_once(env: dict[str, str], cwd: Path, profile: str | None = None) -> tuple[float, float, int, int]:
    """One run: (events/s, CPU µs per event, message_update lines, bytes)."""
    command = [str(Path(sys.executable).with_name("pi-host"))]
    if profile and profile.endswith(".prof"):
        command = [sys.executable, "-m", "cProfile", "-o", profile, *command]
    elif profile:  # needs `uv run --with pyinstrument`
        command = [
            sys.executable,
            "-m",
            "pyinstrument",
            "-r",
            "text",
            "-o",
            profile,
            "-i",
            "0.0005",
            *command,
        ]
    process = subprocess.Popen(
        [*command, "--model", MODEL, "--mode", "json", "Stream a long reply."],
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
    )
    assert process.stdout is not None
    fd = process.stdout.fileno()
    carry, updates, total, first, last = b"", 0, 0, 0.0, 0.0
    while chunk := os.read(fd, 1 << 20):
        now = time.perf_counter()
        total += len(chunk)
        data = carry + chunk
        found = data.count(PATTERN)
        carry = data[-(len(PATTERN) - 1) :]
        if found:
            first = first or now
            updates += found
            last = now
    _, status, usage = os.wait4(process.pid, 0)
    if status:
        raise SystemExit(f"pi-host exited with status {status}")
    cpu = usage.ru_utime + usage.ru_stime
    print(f"  user {usage.ru_utime:.2f} s, system {usage.ru_stime:.2f} s", file=sys.stderr)
    return updates / max(last - first, 1e-6), cpu / max(updates, 1) * 1e6, updates, total


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--deltas", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--profile",
        help="profile the last run: cProfile stats for a .prof name, else a pyinstrument text profile",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        server, base_url = _start_server(args.deltas, args.runs, directory)
        try:
            agent_dir = directory / "agent"
            write_models_json(agent_dir, base_url)
            env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_", "ANTHROPIC_", "OPENAI_"))}
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env.update(
                PI_HOST_DIR=str(agent_dir),
                PI_HOST_PLUGINS=",".join(DEFAULT_PLUGINS),
                PYTHONPYCACHEPREFIX=str(directory / "pycache"),
                NO_COLOR="1",
            )
            project = directory / "project"
            project.mkdir()
            run_once(env, project)  # warm-up: writes the bytecode cache
            rates, costs = [], []
            for n in range(args.runs - 1):
                profile = args.profile if n == args.runs - 2 else None
                rate, cost, updates, total = run_once(env, project, profile)
                rates.append(rate)
                costs.append(cost)
        finally:
            server.terminate()
            server.wait()
    print(f"message_update lines: {updates}, output {total / (1 << 20):.0f} MiB")
    print(f"events/s: median {statistics.median(rates):,.0f} (runs: {', '.join(f'{r:,.0f}' for r in rates)})")
    runs = ", ".join(f"{c:.1f}" for c in costs)
    print(f"CPU per event: median {statistics.median(costs):.1f} µs (runs: {runs})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
