"""Warm RPC round trips, in process: what pi-host spends per prompt and per tool turn.

A fake Anthropic server runs in a child process (so its CPU is not counted); this process
creates the session as ``pi-host --mode rpc`` does (default plugins, a session file) and
serves it with :class:`~pi_host.modes._rpc.RpcServer` over pipes. A client thread sends
``prompt`` commands and waits for each ``agent_end`` line, as ``bench/run.py``'s RPC workload
does. Figures are medians of wall time and of this process's CPU time per round trip.

    uv run python bench/bench_rpc_warm.py [--prompts 100] [--tools 20] [--profile out.prof]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, BinaryIO, cast

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.side_by_side._agents import DEFAULT_PLUGINS, MODEL, write_models_json  # noqa: E402


def _text(text: str) -> dict[str, Any]:
    return {"reply": {"content": text}}


def _tool_turn(n: int) -> dict[str, Any]:
    blocks = [
        {"type": "text", "text": "Working on it."},
        {
            "type": "tool_use",
            "id": f"toolu_bench_{n:04d}",
            "name": "bash",
            "input": {"command": f"echo step {n}"},
        },
    ]
    return {"reply": {"content": blocks, "stop_reason": "tool_use", "chunk_size": 16}}


def _start_server(script: list[dict[str, Any]], directory: Path) -> tuple[subprocess.Popen[str], str]:
    path = directory / "script.json"
    path.write_text(json.dumps(script))
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.fakeservers.anthropic", "--port", "0", "--script", str(path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    line = server.stdout.readline()
    return server, line.split("listening on ", 1)[1].strip()


# The client runs in its own process, as a real RPC client does: in this process a reader
# thread would compete with the server for the GIL on every line. It prints its wall-clock
# round trips as JSON on stderr.
_CLIENT = r"""
import json, sys, time
prompts, tools, states = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
out, inp = sys.stdout.buffer, sys.stdin.buffer
def send(command):
    out.write(json.dumps(command).encode() + b"\n"); out.flush(); return time.perf_counter()
def until(kind, stamps=None, stop=b'{"type":"agent_end"'):
    while True:
        line = inp.readline()
        if not line:
            raise SystemExit("server closed its output")
        if stamps is not None and line.startswith(b'{"type":"' + kind + b'"'):
            stamps.append(time.perf_counter())
        if line.startswith(stop):
            return time.perf_counter()
for _ in range(2):
    send({"type": "prompt", "message": "Warm up."}); until(b"agent_end")
times = []
for _ in range(prompts):
    sent = send({"type": "prompt", "message": "Say something."})
    times.append((until(b"agent_end") - sent) * 1000)
tool_times = []
if tools:
    send({"type": "prompt", "message": "Run echo."})
    stamps = []
    until(b"tool_execution_end", stamps)
    tool_times = [(b - a) * 1000 for a, b in zip(stamps, stamps[1:])]
state_times = []
if states:
    send({"type": "prompt", "message": "Stream slowly."})
    until(b"message_update", stop=b'{"type":"message_update"')
    for n in range(states):
        sent = send({"id": f"s{n}", "type": "get_state"})
        answered = until(b"response", stop=b'{"id":"s%d","type":"response"' % n)
        state_times.append((answered - sent) * 1000)
        time.sleep(0.02)
    until(b"agent_end")
result = {"prompt_ms": times, "tool_ms": tool_times, "get_state_ms": state_times}
sys.stderr.write(json.dumps(result) + "\n")
"""


async def serve(prompts: int, tools: int, states: int, profile: str | None) -> dict[str, list[float]]:
    from pi_host.modes._rpc import RpcServer
    from pi_host.runtime import Host, SessionOptions, create_session

    host = Host.load()
    session = await create_session(SessionOptions(mode="rpc", model=MODEL), host=host)
    client = subprocess.Popen(
        [sys.executable, "-c", _CLIENT, str(prompts), str(tools), str(states)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert client.stdin is not None and client.stdout is not None and client.stderr is not None
    # CPU time of this process at every agent_end / tool_execution_end: the difference between
    # two is what one round trip cost the server, the command and its response included.
    cpu: dict[str, list[float]] = {"agent_end": [], "tool_execution_end": []}

    def stamp(event: Any) -> None:
        if event.type in cpu:
            cpu[event.type].append(time.process_time() * 1000)

    session.subscribe(stamp)
    server = RpcServer(session, cast(BinaryIO, client.stdout), cast(BinaryIO, client.stdin))
    profiler: Any = None
    if profile and profile.endswith(".html"):
        from pyinstrument import Profiler  # type: ignore[import-not-found]  # uv run --with pyinstrument

        profiler = Profiler(interval=0.0002, async_mode="disabled")
        profiler.start()
    elif profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    await server.serve()
    if profile and profile.endswith(".html"):
        profiler.stop()
        Path(profile).write_text(profiler.output_html())
        Path(profile).with_suffix(".txt").write_text(profiler.output_text(unicode=False, show_all=False))
    elif profiler is not None:
        profiler.disable()
        profiler.dump_stats(profile)
    report = client.stderr.read()
    try:
        results: dict[str, list[float]] = json.loads(report)
    except ValueError:
        raise SystemExit(f"the client failed: {report.decode(errors='replace')}") from None
    client.wait()
    ends = cpu["agent_end"][1 : 2 + prompts]  # from the second warm-up on
    results["prompt_cpu_ms"] = [b - a for a, b in itertools.pairwise(ends)]
    results["tool_cpu_ms"] = [b - a for a, b in itertools.pairwise(cpu["tool_execution_end"])]
    return results


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--prompts", type=int, default=100)
    parser.add_argument("--tools", type=int, default=20, help="sequential bash tool turns in one prompt")
    parser.add_argument("--states", type=int, default=10, help="get_state round trips while a reply streams")
    parser.add_argument(
        "--profile", help="profile the serving process: cProfile stats, or pyinstrument for a .html name"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        script = [_text(f"Reply number {n}.") for n in range(args.prompts + 2)]
        script += [_tool_turn(n) for n in range(args.tools)] + (
            [_text("Ran the tools.")] if args.tools else []
        )
        if args.states:  # long enough for every poll (20 ms apart) to land while it streams
            slow = {"content": "y" * (3 * args.states + 20), "chunk_size": 1}
            script.append({"reply": slow, "latency": 0.01})
        server, base_url = _start_server(script, directory)
        try:
            agent_dir = directory / "agent"
            write_models_json(agent_dir, base_url)
            os.environ["PI_HOST_DIR"] = str(agent_dir)
            os.environ["PI_HOST_PLUGINS"] = ",".join(DEFAULT_PLUGINS)
            project = directory / "project"
            project.mkdir()
            os.chdir(project)
            results = anyio.run(serve, args.prompts, args.tools, args.states, args.profile)
        finally:
            server.terminate()
            server.wait()
    for key, values in results.items():
        if values:
            first = statistics.median(values[:10])
            print(
                f"{key:>14}: median {statistics.median(values):.2f}  first 10 {first:.2f}"
                f"  (min {min(values):.2f}, n={len(values)})"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
