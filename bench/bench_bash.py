"""The bash tool, side by side with pi 0.73's: call overhead, output throughput, memory, daemons.

Run with ``uv run python bench/bench_bash.py [--pi PATH_TO_PI_CODING_AGENT]``. pi's figures
come from its own ``createBashTool`` run by node in a child process on the same machine; they
are skipped when node or pi is not found.

- *call*: median wall time of one ``true`` call (spawn, wait, format), over many calls.
- *throughput*: one call streaming ``--megabytes`` of short lines (``seq``), in MB/s.
- *peak memory*: peak resident set size of the process that ran the throughput call, minus
  its size before (so the interpreter itself is not counted).
- *daemon*: ``sleep 30 & echo $$`` (a background process holding stdout): how long the call
  takes to return. Both keep the daemon; the benchmark stops it by its process group.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

import anyio
import pi_bash

from pi_host import AbortSignal, ToolCallContext, ToolResult

DEFAULT_PI = "/tmp/pi073/node_modules/@mariozechner/pi-coding-agent"


def _rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _peak_rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def _reset_peak_rss() -> None:
    # Writing 5 to clear_refs resets VmHWM (Linux >= 4.0).
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")


async def _pihost(calls: int, lines: int) -> dict[str, float]:
    tool = pi_bash.create_bash_tool()
    cwd = tempfile.gettempdir()

    async def ignore(partial: ToolResult) -> None:
        pass

    async def call(command: str) -> ToolResult:
        ctx = ToolCallContext(tool_call_id="b", signal=AbortSignal(), cwd=cwd, _on_update=ignore)
        result: ToolResult = await tool.execute(tool.validate_arguments({"command": command}), ctx)
        return result

    await call("true")
    durations = []
    for _ in range(calls):
        started = time.perf_counter()
        await call("true")
        durations.append(time.perf_counter() - started)

    base = _rss_kib()
    _reset_peak_rss()
    started = time.perf_counter()
    result = await call(f"seq 1 {lines}")
    elapsed = time.perf_counter() - started
    peak = _peak_rss_kib() - base
    os.unlink(result.details["fullOutputPath"])

    started = time.perf_counter()
    await call("sleep 30 & echo $$")
    daemon = time.perf_counter() - started
    await pi_bash.kill_background_processes()
    return {
        "call_ms": statistics.median(durations) * 1000,
        "seq_s": elapsed,
        "peak_mib": peak / 1024,
        "daemon_s": daemon,
    }


_PI_SCRIPT = """
import {{ readFileSync, writeFileSync, unlinkSync }} from "node:fs";
import {{ createBashTool }} from "{pi}/dist/core/tools/bash.js";
const status = (field) => {{
  for (const line of readFileSync("/proc/self/status", "utf8").split("\\n"))
    if (line.startsWith(field + ":")) return parseInt(line.split(/\\s+/)[1]);
  return 0;
}};
const tool = createBashTool("{cwd}");
const call = (command) => tool.execute("b", {{ command }}, undefined, () => {{}});
await call("true");
const durations = [];
for (let i = 0; i < {calls}; i++) {{
  const t = performance.now(); await call("true"); durations.push(performance.now() - t);
}}
durations.sort((a, b) => a - b);
const base = status("VmRSS");
writeFileSync("/proc/self/clear_refs", "5");
let t = performance.now();
const result = await call("seq 1 {lines}");
const seq = (performance.now() - t) / 1000;
const peak = status("VmHWM") - base;
if (result.details?.fullOutputPath) unlinkSync(result.details.fullOutputPath);
t = performance.now();
const daemonResult = await call("sleep 30 & echo $$");
const daemon = (performance.now() - t) / 1000;
// pi leaves the background process running; stop it by its group, nothing else.
process.kill(-parseInt(daemonResult.content[0].text), "SIGKILL");
console.log(JSON.stringify({{ call_ms: durations[Math.floor(durations.length / 2)], seq_s: seq,
  peak_mib: peak / 1024, daemon_s: daemon }}));
process.exit(0);
"""


def _pi(pi_dir: str, calls: int, lines: int) -> dict[str, float] | None:
    node = shutil.which("node")
    if node is None or not os.path.isdir(pi_dir):
        return None
    script = _PI_SCRIPT.format(pi=pi_dir, cwd=tempfile.gettempdir(), calls=calls, lines=lines)
    with tempfile.NamedTemporaryFile("w", suffix=".mjs", delete=False) as handle:
        handle.write(script)
    try:
        output = subprocess.run([node, handle.name], capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(handle.name)
    figures: dict[str, float] = json.loads(output.strip().splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pi", default=DEFAULT_PI, help="pi-coding-agent package directory")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--lines", type=int, default=10_000_000, help="seq 1 N (10M lines = 78.9 MB)")
    args = parser.parse_args()

    size_mb = sum(len(str(n)) + 1 for n in range(1, args.lines + 1)) / 1e6 if args.lines <= 10**7 else 0.0
    ours: dict[str, Any] = anyio.run(_pihost, args.calls, args.lines)
    theirs = _pi(args.pi, args.calls, args.lines)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; seq output {size_mb:.1f} MB")
    print(f"{'':24}{'pi-host':>12}{'pi 0.73':>12}")
    rows = [
        ("call `true` (ms)", "call_ms", "{:.2f}"),
        ("seq output (s)", "seq_s", "{:.2f}"),
        ("  throughput (MB/s)", None, "{:.0f}"),
        ("peak memory (MiB)", "peak_mib", "{:.1f}"),
        ("daemon call (s)", "daemon_s", "{:.3f}"),
    ]
    for label, key, fmt in rows:
        values = []
        for figures in (ours, theirs):
            if figures is None:
                values.append("n/a")
            elif key is None:
                values.append(fmt.format(size_mb / figures["seq_s"]))
            else:
                values.append(fmt.format(figures[key]))
        print(f"{label:24}{values[0]:>12}{values[1]:>12}")


if __name__ == "__main__":
    main()
