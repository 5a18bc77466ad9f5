"""Many sessions in one process: memory and throughput of concurrent ``create_session``
sessions on one event loop, against the scripted model over real HTTP.

Run with ``uv run python bench/bench_concurrent_sessions.py [--sessions 100] [--prompts 3]
[--no-session | --session-store URI | --start-postgres] [--writes-on-loop] [--faux]``.

Every session is made by ``create_session`` (the default plugins, a project directory of its
own) and answers ``--prompts`` prompts; each prompt is a ``read`` tool call and a final
reply, so two model requests. The model is a scripted Anthropic endpoint (the fake server of
``tests/fakeservers``) in a process of its own, so neither its memory nor its CPU is counted;
its reply is computed from each request, so any number of sessions may interleave.
``--faux`` uses the in-process faux provider instead (no HTTP, no tools: one reply a prompt).

Printed, one JSON line per phase:

- *baseline*: resident memory after one warm-up session ran (imports and caches paid);
- *sessions*: the peak resident memory while all sessions were alive and running (``VmHWM``,
  reset after the warm-up), the memory still held once they all finished but were not shut
  down, both total and per session, and the throughput: prompts, model requests and tool
  calls per second over the wall time of the concurrent run, and how late a 5 ms timer
  fires meanwhile (``loop_late_*``: what blocking work on the shared loop costs every
  session; ``--writes-on-loop`` writes to the store on the loop, as pi-host did before its
  stores had a writer thread, to compare);
- *one-by-one*: the same work for ``--serial`` sessions run one after the other, the
  throughput ratio of concurrency on this machine.

The machine is shared by other work; compare figures of one run (the ratios) rather than
absolute ones across runs.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
MODEL = "bench-model"


# -- the scripted model (its own process) ------------------------------------------------------


def _serve() -> None:
    """``--serve``: a scripted Anthropic endpoint; prints its URL, serves until stdin closes."""
    sys.path.insert(0, str(ROOT))
    from tests.fakeservers import AnthropicServer, RecordedRequest, anthropic_reply

    def respond(request: RecordedRequest) -> Any:
        body = request.json()
        last = body["messages"][-1]["content"]
        answered = isinstance(last, list) and any(block.get("type") == "tool_result" for block in last)
        if answered or not body.get("tools"):
            return anthropic_reply("Read it; the note says what it says.", chunk_size=16)
        call = {
            "type": "tool_use",
            "id": f"toolu_{len(body['messages'])}",
            "name": "read",
            "input": {"path": "note.txt"},
        }
        return anthropic_reply([call], stop_reason="tool_use", chunk_size=16)

    with AnthropicServer(respond=respond) as server:
        print(server.base_url, flush=True)
        for _ in sys.stdin:
            server.requests.clear()  # the server's own memory stays flat
    # stdin closed: the benchmark is done


# -- measuring ---------------------------------------------------------------------------------


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def _reset_peak() -> None:
    # Writing 5 to clear_refs resets VmHWM to the current RSS (Linux >= 4.0).
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")


def _mib(kib: float) -> float:
    return round(kib / 1024, 1)


class _Bench:
    def __init__(self, work: Path, *, faux: bool, no_session: bool, store: str | None, prompts: int) -> None:
        self.work = work
        self.store = store
        self.faux = faux
        self.no_session = no_session
        self.prompts = prompts
        self.counter = 0
        self.requests = 0
        self.tool_calls = 0

    def project(self) -> Path:
        self.counter += 1
        project = self.work / f"project-{self.counter}"
        project.mkdir()
        (project / "note.txt").write_text(f"note {self.counter}\n" * 20)
        return project

    async def create(self) -> Any:
        from pi_host.runtime import SessionOptions, create_session

        project = self.project()
        if self.faux:
            options = SessionOptions(
                cwd=str(project),
                provider="faux",
                no_tools=True,
                no_session=self.no_session,
                session_store=self.store,
            )
        else:
            options = SessionOptions(
                cwd=str(project),
                provider="local",
                model=MODEL,
                tools=["read"],
                no_session=self.no_session,
                session_store=self.store,
            )
        return await create_session(options)

    async def work_through(self, session: Any, number: int) -> None:
        for prompt in range(self.prompts):
            before = len(session.messages)
            await session.prompt(f"session {number}, prompt {prompt}: read note.txt")
            new = session.messages[before:]
            self.requests += sum(1 for message in new if message.role == "assistant")
            self.tool_calls += sum(1 for message in new if message.role == "toolResult")
            last = new[-1]
            if last.role != "assistant" or last.stop_reason != "stop":
                raise RuntimeError(f"session {number} ended on {last.stop_reason}: {last.error_message}")


async def _concurrent(bench: _Bench, count: int) -> dict[str, object]:
    sessions: list[Any] = [None] * count
    gc.collect()
    before = _status_kib("VmRSS")
    _reset_peak()
    start = time.perf_counter()
    bench.requests = bench.tool_calls = 0

    async def one(number: int) -> None:
        sessions[number] = await bench.create()
        await bench.work_through(sessions[number], number)

    stalls: list[float] = []
    running = True

    async def ticker() -> None:
        # How late a 5 ms timer fires while the sessions run: what one session's blocking
        # work (a store's write on the loop) costs every other session.
        while running:
            asked = time.perf_counter()
            await anyio.sleep(0.005)
            stalls.append(time.perf_counter() - asked - 0.005)

    async with anyio.create_task_group() as outer:
        outer.start_soon(ticker)
        async with anyio.create_task_group() as tg:
            for number in range(count):
                tg.start_soon(one, number)
        running = False
    seconds = time.perf_counter() - start
    peak = _status_kib("VmHWM") - before
    gc.collect()
    held = _status_kib("VmRSS") - before
    for session in sessions:
        await session.shutdown("quit")
    return {
        "phase": "sessions",
        "sessions": count,
        "prompts_each": bench.prompts,
        "peak_rss_grown_mib": _mib(peak),
        "peak_kib_per_session": round(peak / count),
        "held_rss_grown_mib": _mib(held),
        "held_kib_per_session": round(held / count),
        "seconds": round(seconds, 2),
        "prompts_per_s": round(count * bench.prompts / seconds, 1),
        "requests_per_s": round(bench.requests / seconds, 1),
        "tool_calls_per_s": round(bench.tool_calls / seconds, 1),
        "loop_late_p50_ms": _percentile_ms(stalls, 0.5),
        "loop_late_p99_ms": _percentile_ms(stalls, 0.99),
        "loop_late_max_ms": _percentile_ms(stalls, 1.0),
    }


def _percentile_ms(values: list[float], fraction: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return round(1000 * ordered[min(len(ordered) - 1, int(fraction * len(ordered)))], 1)


async def _one_by_one(bench: _Bench, count: int) -> dict[str, object]:
    bench.requests = bench.tool_calls = 0
    start = time.perf_counter()
    for number in range(count):
        session = await bench.create()
        try:
            await bench.work_through(session, number)
        finally:
            await session.shutdown("quit")
    seconds = time.perf_counter() - start
    return {
        "phase": "one-by-one",
        "sessions": count,
        "prompts_each": bench.prompts,
        "seconds": round(seconds, 2),
        "prompts_per_s": round(count * bench.prompts / seconds, 1),
        "requests_per_s": round(bench.requests / seconds, 1),
    }


async def _run(args: argparse.Namespace, work: Path, base_url: str | None) -> None:
    agent = work / "agent"
    agent.mkdir()
    os.environ["PI_HOST_DIR"] = str(agent)
    if base_url is None:
        script = work / "script.json"
        script.write_text(json.dumps([{"text": "Done."}] * args.prompts))  # each session replays it
        os.environ["PI_HOST_FAUX_SCRIPT"] = str(script)
    else:
        models = {
            "providers": {
                "local": {
                    "baseUrl": base_url,
                    "api": "anthropic-messages",
                    "apiKey": "bench-key",
                    "models": [{"id": MODEL, "contextWindow": 200000, "maxTokens": 4096}],
                }
            }
        }
        (agent / "models.json").write_text(json.dumps(models))
    bench = _Bench(
        work,
        faux=base_url is None,
        no_session=args.no_session,
        store=args.session_store,
        prompts=args.prompts,
    )
    warm = await bench.create()
    await bench.work_through(warm, -1)
    await warm.shutdown("quit")
    gc.collect()
    print(json.dumps({"phase": "baseline", "rss_mib": _mib(_status_kib("VmRSS"))}), flush=True)
    print(json.dumps(await _concurrent(bench, args.sessions)), flush=True)
    if args.serial:
        print(json.dumps(await _one_by_one(bench, args.serial)), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=100, help="sessions alive at once (default 100)")
    parser.add_argument("--prompts", type=int, default=3, help="prompts per session (default 3)")
    parser.add_argument("--serial", type=int, default=10, help="sessions run one by one after (0: none)")
    parser.add_argument("--no-session", action="store_true", help="keep no session files")
    parser.add_argument(
        "--session-store", metavar="URI", help="keep the sessions in this store (sqlite:///...)"
    )
    parser.add_argument(
        "--start-postgres",
        action="store_true",
        help="run a PostgreSQL server of its own and keep the sessions there (as bench_stores.py)",
    )
    parser.add_argument(
        "--writes-on-loop",
        action="store_true",
        help="write to the store on the event loop, as before store writes had a thread (to compare)",
    )
    parser.add_argument("--faux", action="store_true", help="the in-process faux provider, no HTTP")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        _serve()
        return
    if args.writes_on_loop:
        from pi_host import SessionManager

        SessionManager.write_in_background = lambda self: None  # type: ignore[method-assign]
    if args.start_postgres:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_stores import _postgres_server

        with _postgres_server() as uri:
            args.session_store = uri
            _main(args)
    else:
        _main(args)


def _main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if args.faux:
            anyio.run(_run, args, work, None)
            return
        server = subprocess.Popen(
            [sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        try:
            assert server.stdout is not None
            base_url = server.stdout.readline().strip()
            if not base_url.startswith("http://127.0.0.1:"):
                raise RuntimeError(f"the scripted model server did not start: {base_url!r}")
            anyio.run(_run, args, work, base_url)
        finally:
            assert server.stdin is not None
            server.stdin.close()
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
