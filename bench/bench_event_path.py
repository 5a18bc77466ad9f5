"""The runtime's own cost per streamed event in ``--mode json``, without a provider.

Creates a session as ``pi-host --mode json`` does (default plugins, a session file), swaps
its stream function for one that yields pre-built ``text_delta`` events whose partial reply
grows by one character each, and writes JSON mode's lines to ``/dev/null``. What is timed
(CPU time of this process) is everything between the provider and the file descriptor: the
agent loop, the agent and session listeners, hook dispatch, serialisation and the write.

    uv run python bench/bench_event_path.py [--deltas 5000] [--rounds 5]
    BENCH_PIPE=1 uv run python bench/bench_event_path.py   # lines into a drained pipe
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO, Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.side_by_side._agents import DEFAULT_PLUGINS, MODEL, write_models_json  # noqa: E402


async def measure(deltas: int, rounds: int) -> list[float]:
    from pi_host.messages import AssistantMessage, DoneEvent, StartEvent, TextContent, TextDeltaEvent, Usage
    from pi_host.modes import _print
    from pi_host.runtime import Host, SessionOptions, create_session

    session = await create_session(SessionOptions(mode="json", model=MODEL), host=Host.load())
    fields: dict[str, Any] = {
        "api": "anthropic-messages",
        "provider": "bench",
        "model": "fake-model",
        "usage": Usage(),
        "stop_reason": "stop",
        "timestamp": 1,
    }
    partials = [AssistantMessage(content=[TextContent(text="x" * n)], **fields) for n in range(deltas + 1)]
    events = [TextDeltaEvent(content_index=0, delta="x", partial=partials[n + 1]) for n in range(deltas)]

    async def stream_events() -> AsyncIterator[Any]:
        yield StartEvent(partial=partials[0])
        for event in events:
            yield event
        yield DoneEvent(reason="stop", message=partials[-1])

    session.agent.stream_fn = lambda model, context, options: stream_events()
    results = []
    with _sink() as sink:
        saved, sys.stdout = sys.stdout, sink
        try:
            if not os.environ.get("BENCH_NO_WRITER"):
                session.subscribe(_print._write_json_line)
            for _ in range(rounds):
                start = time.process_time()
                await session.prompt("Stream.")
                results.append((time.process_time() - start) / deltas * 1e6)
        finally:
            sys.stdout = saved
    return results


async def measure_prompts(rounds: int, prompts: int) -> list[float]:
    """CPU µs per prompt (a three-delta reply) as RPC mode runs it, without a provider."""
    from pi_host.messages import AssistantMessage, DoneEvent, StartEvent, TextContent, TextDeltaEvent, Usage
    from pi_host.modes._rpc_io import JsonlWriter
    from pi_host.runtime import Host, SessionOptions, create_session

    host = Host.load()
    fields: dict[str, Any] = {"api": "anthropic-messages", "provider": "bench", "model": "fake-model"}
    texts = ["", "Reply ", "Reply number ", "Reply number 5."]

    async def stream_events() -> AsyncIterator[Any]:
        partials = [
            AssistantMessage(content=[TextContent(text=t)] if t else [], usage=Usage(), **fields)
            for t in texts
        ]
        yield StartEvent(partial=partials[0])
        for n in range(1, len(texts)):
            delta = texts[n][len(texts[n - 1]) :]
            yield TextDeltaEvent(content_index=0, delta=delta, partial=partials[n])
        yield DoneEvent(reason="stop", message=partials[-1])

    results = []
    with _sink() as sink:
        for _ in range(rounds):
            session = await create_session(SessionOptions(mode="rpc", model=MODEL), host=host)
            session.agent.stream_fn = lambda model, context, options: stream_events()
            session.subscribe(JsonlWriter(sink.buffer).write)
            for _ in range(2):  # warm-up
                await session.prompt("Warm up.")
            start = time.process_time()
            for _ in range(prompts):
                await session.prompt("Say something.")
            results.append((time.process_time() - start) / prompts * 1e6)
            await session.shutdown("quit")
    return results


def _sink() -> IO[str]:
    """Where the lines go: ``/dev/null``, or with ``BENCH_PIPE=1`` a pipe that a child process
    drains (what a JSON-mode reader does; the child's CPU time is not counted)."""
    if not os.environ.get("BENCH_PIPE"):
        return open(os.devnull, "w")
    read_fd, write_fd = os.pipe()
    if os.fork() == 0:
        os.close(write_fd)
        while os.read(read_fd, 1 << 20):
            pass
        os._exit(0)
    os.close(read_fd)
    return os.fdopen(write_fd, "w")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--deltas", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", help="write a cProfile of the rounds to this file")
    parser.add_argument(
        "--prompts",
        type=int,
        default=0,
        help="instead: CPU per prompt of RPC mode, this many prompts a round",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        write_models_json(directory / "agent", "http://127.0.0.1:9")
        os.environ["PI_HOST_DIR"] = str(directory / "agent")
        os.environ["PI_HOST_PLUGINS"] = ",".join(DEFAULT_PLUGINS)
        (directory / "project").mkdir()
        os.chdir(directory / "project")
        if args.prompts:
            results = anyio.run(measure_prompts, args.rounds, args.prompts)
            rounds = ", ".join(f"{r:.0f}" for r in results)
            print(
                f"RPC prompt, no provider: median {statistics.median(results):.0f} µs CPU (rounds: {rounds})"
            )
            return 0
        if args.profile:
            import cProfile

            with cProfile.Profile() as profiler:
                results = anyio.run(measure, args.deltas, args.rounds)
            profiler.dump_stats(args.profile)
        else:
            results = anyio.run(measure, args.deltas, args.rounds)
    rounds = ", ".join(f"{r:.1f}" for r in results)
    print(f"{args.deltas} deltas: median {statistics.median(results):.1f} µs CPU an event (rounds: {rounds})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
