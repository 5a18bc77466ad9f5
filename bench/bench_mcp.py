"""pi-mcp: session start-up with 4 stdio MCP servers (lazy and eager), and per-call overhead.

Run with ``uv run python bench/bench_mcp.py [--runs N] [--calls N]``.

- *start-up*: median wall time of ``pi-host --provider faux -p hi`` (a one-shot reply) with no
  servers, and with 4 stdio servers (the SDK's MCPServer, ``plugins/pi_mcp/tests/servers``)
  in ``"startup": "lazy"`` and ``"eager"``. Both register every tool before the first
  request; eager overlaps the servers' start with the session's.
- *per call*: median time of one ``echo`` call through the raw SDK ``ClientSession.call_tool``
  and through the pi-host tool pi-mcp registers (timeout, abort race, result mapping,
  truncation), against the same server; the difference is pi-mcp's overhead.
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
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
SERVER = ROOT / "plugins" / "pi_mcp" / "tests" / "servers" / "demo.py"
PI_HOST = shutil.which("pi-host") or str(Path(sys.executable).parent / "pi-host")


def _servers(count: int) -> dict[str, Any]:
    return {
        f"s{i}": {"command": sys.executable, "args": [str(SERVER), "--name", f"s{i}", "--tools", "10"]}
        for i in range(count)
    }


def one_shot(root: Path, servers: int, startup: str) -> float:
    agent, project = root / "agent", root / "project"
    shutil.rmtree(root, ignore_errors=True)
    agent.mkdir(parents=True)
    project.mkdir()
    (agent / "settings.json").write_text(
        json.dumps({"mcp": {"startup": startup, "servers": _servers(servers)}})
    )
    (root / "faux.json").write_text(json.dumps([{"text": "hello"}]))
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PI_HOST")},
        "HOME": str(root),
        "PI_HOST_DIR": str(agent),
        "PI_HOST_FAUX_SCRIPT": str(root / "faux.json"),
    }
    started = time.perf_counter()
    result = subprocess.run(
        [PI_HOST, "--provider", "faux", "-p", "hi"], cwd=project, env=env, capture_output=True, text=True
    )
    elapsed = time.perf_counter() - started
    if result.returncode != 0 or result.stdout.strip() != "hello":
        raise SystemExit(f"pi-host failed: {result.stderr}")
    return elapsed


async def per_call(calls: int) -> tuple[float, float]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from pi_mcp import LoadedConfig, McpSettings
    from pi_mcp._config import ServerConfig
    from pi_mcp._manager import McpManager

    from pi_host import AbortSignal, ToolCallContext

    params = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
    raw: list[float] = []
    async with (
        stdio_client(params, errlog=open(os.devnull, "w")) as (read, write),
        ClientSession(read, write) as s,
    ):
        await s.initialize()
        for _ in range(calls):
            t = time.perf_counter()
            await s.call_tool("echo", {"text": "x"})
            raw.append(time.perf_counter() - t)

    config = ServerConfig(name="demo", transport="stdio", command=sys.executable, args=(str(SERVER),))
    manager = McpManager(
        config=LoadedConfig(servers={"demo": config}), settings=McpSettings(), cwd=os.getcwd()
    )
    await manager.start_all()
    tool = manager.tools["mcp__demo__echo"]
    ctx = ToolCallContext(tool_call_id="bench", signal=AbortSignal())
    args = tool.validate_arguments({"text": "x"})
    hosted: list[float] = []
    try:
        for _ in range(calls):
            t = time.perf_counter()
            await tool.execute(args, ctx)
            hosted.append(time.perf_counter() - t)
    finally:
        await manager.stop_all()
    return statistics.median(raw), statistics.median(hosted)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--calls", type=int, default=200)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "run"
        rows = []
        for label, servers, startup in (
            ("no servers", 0, "lazy"),
            ("4 stdio, lazy", 4, "lazy"),
            ("4 stdio, eager", 4, "eager"),
        ):
            times = [one_shot(root, servers, startup) for _ in range(options.runs)]
            rows.append((label, statistics.median(times)))
    print(f"start-up (one-shot -p reply, median of {options.runs}):")
    for label, seconds in rows:
        print(f"  {label:<16} {seconds * 1000:8.0f} ms")
    raw, hosted = anyio.run(per_call, options.calls)
    print(f"per call (echo, median of {options.calls}):")
    print(f"  raw SDK call_tool  {raw * 1000:8.2f} ms")
    print(f"  pi-mcp tool        {hosted * 1000:8.2f} ms   (overhead {(hosted - raw) * 1000:+.2f} ms)")


if __name__ == "__main__":
    main()
