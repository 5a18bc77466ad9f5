"""The workloads: what each agent is asked to do, and what is measured.

A workload's ``run`` starts the agent once (one *run*) and returns its figures as a dict of
metric name to value. Every process workload reports ``wall_s``, ``cpu_s`` (user + system time
of the agent and the processes it waited for) and ``rss_mib`` (peak resident set size).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import queue
import shutil
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ._agents import MODEL, Agent
from ._measure import AgentFailed, MeasuredProcess, Measurement, run_measured
from ._server import BenchServer
from ._sessions import generate_session

__all__ = ["WORKLOADS", "Context", "Metric", "Workload", "select"]


@dataclass(frozen=True)
class Metric:
    """A reported figure. ``target`` is the pi-host/pi ratio to meet (``higher`` flips the test)."""

    key: str
    label: str
    unit: str
    higher_is_better: bool = False
    target: float | None = None


WALL = Metric("wall_s", "wall time", "s")
CPU = Metric("cpu_s", "CPU time", "s")
RSS = Metric("rss_mib", "peak RSS", "MiB", target=0.4)


def _wall(target: float | None) -> Metric:
    return Metric("wall_s", "wall time", "s", target=target)


@dataclass
class Context:
    """What the workloads share: the fake server, a working directory, a scratch directory."""

    server: BenchServer
    workdir: Path
    scratch: Path
    sessions: dict[int, Path] = field(default_factory=dict)
    timeout: float = 600.0


@dataclass(frozen=True)
class Workload:
    name: str
    title: str
    metrics: tuple[Metric, ...]
    run: Callable[[Context, Agent], dict[str, float]]
    prepare: Callable[[Context], None] | None = None


# -- helpers ------------------------------------------------------------------------------------


def _figures(measurement: Measurement) -> dict[str, float]:
    return {"wall_s": measurement.wall_s, "cpu_s": measurement.cpu_s, "rss_mib": measurement.max_rss_mib}


def _check(agent: Agent, measurement: Measurement, ctx: Context, expect: bytes | None = None) -> None:
    problem = ctx.server.settle()
    if measurement.exit_code != 0:
        problem = f"exited with code {measurement.exit_code}"
    elif expect is not None and expect not in measurement.stdout + measurement.stderr:
        problem = f"did not print {expect!r}"
    if problem:
        stderr = measurement.stderr.decode(errors="replace").strip()[-600:]
        stdout = measurement.stdout.decode(errors="replace").strip()[-300:]
        raise AgentFailed(f"{agent.name}: {problem}; stderr: {stderr!r}; stdout: {stdout!r}")


def _run_cli(
    ctx: Context, agent: Agent, args: list[str], steps: list[dict[str, Any]], expect: bytes | None
) -> dict[str, float]:
    ctx.server.script(*steps)
    measurement = run_measured([*agent.argv, *args], env=agent.env, cwd=ctx.workdir, timeout=ctx.timeout)
    _check(agent, measurement, ctx, expect)
    return _figures(measurement)


def _text(text: str, **timing: Any) -> dict[str, Any]:
    return {"reply": {"content": text}, **timing}


def _tool_turn(calls: list[tuple[str, dict[str, Any]]], turn: int) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": "Working on it."}]
    blocks += [
        {"type": "tool_use", "id": f"toolu_bench_{turn:03d}_{index}", "name": name, "input": arguments}
        for index, (name, arguments) in enumerate(calls)
    ]
    return {"reply": {"content": blocks, "stop_reason": "tool_use", "chunk_size": 16}}


def _echo_turns(count: int) -> list[dict[str, Any]]:
    return [_tool_turn([("bash", {"command": f"echo step {n}"})], n) for n in range(count)]


# -- start-up and one-shot ----------------------------------------------------------------------


def _version(ctx: Context, agent: Agent) -> dict[str, float]:
    return _run_cli(ctx, agent, ["--version"], [], None)


def _help(ctx: Context, agent: Agent) -> dict[str, float]:
    return _run_cli(ctx, agent, ["--help"], [], b"--model")


ONE_SHOT_REPLY = "Hello! I am a fake model, answering from 127.0.0.1."


def _one_shot(ctx: Context, agent: Agent) -> dict[str, float]:
    args = ["--model", MODEL, "-p", "Say hello."]
    return _run_cli(ctx, agent, args, [_text(ONE_SHOT_REPLY)], b"fake model")


OVERLOADED_REPLY = "Answered after two overloaded errors."


def _overloaded(ctx: Context, agent: Agent) -> dict[str, float]:
    """Two 529 ``overloaded_error`` answers, then the reply: how fast each agent recovers."""
    overloaded = {"error": {"status": 529, "message": "Overloaded"}}
    args = ["--model", MODEL, "-p", "Say hello."]
    return _run_cli(ctx, agent, args, [overloaded, overloaded, _text(OVERLOADED_REPLY)], b"two overloaded")


# -- tool calls ---------------------------------------------------------------------------------


def _tools_20(ctx: Context, agent: Agent) -> dict[str, float]:
    steps = [*_echo_turns(20), _text("Ran echo twenty times.")]
    return _run_cli(ctx, agent, ["--model", MODEL, "-p", "Run echo twenty times."], steps, b"twenty times")


READ_FILES = 100


def _prepare_files(ctx: Context) -> None:
    folder = ctx.workdir / "src"
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(READ_FILES):
        lines = [f"def function_{n}_{line}(value):\n    return value * {line}\n" for line in range(30)]
        (folder / f"module_{n:03d}.py").write_text("".join(lines), encoding="utf-8")


def _tools_100(ctx: Context, agent: Agent) -> dict[str, float]:
    steps = [
        _tool_turn([("read", {"path": f"src/module_{turn * 4 + k:03d}.py"}) for k in range(4)], turn)
        for turn in range(READ_FILES // 4)
    ]
    steps.append(_text("Read one hundred files."))
    return _run_cli(ctx, agent, ["--model", MODEL, "-p", "Read every module."], steps, b"hundred files")


# -- resume -------------------------------------------------------------------------------------


def _prepare_session(entries: int) -> Callable[[Context], None]:
    def prepare(ctx: Context) -> None:
        # Keyed by the project directory too: a session records its cwd, which must exist.
        tag = hashlib.sha1(str(ctx.workdir).encode()).hexdigest()[:8]
        path = ctx.scratch / f"session-{entries}-{tag}.jsonl"
        if not path.exists():
            generate_session(
                path,
                entries,
                cwd=ctx.workdir,
                provider="bench",
                model="fake-model",
                compaction=entries >= 100_000,
            )
        ctx.sessions[entries] = path

    return prepare


def _resume(entries: int, *, cold: bool = False) -> Callable[[Context, Agent], dict[str, float]]:
    """Resume a copy of the generated session and send one prompt.

    :param cold: remove the agent's resume cache first (pi-host keeps one per session in
        ``<agent dir>/cache/sessions``; pi keeps none), so the run is a first resume. The
        start-up compile cache beside them stays: it is not about the session, and every other
        workload runs with it warm.
    """

    def run(ctx: Context, agent: Agent) -> dict[str, float]:
        if cold:
            shutil.rmtree(agent.agent_dir / "cache" / "sessions", ignore_errors=True)
        # Both agents append to the file they resume: each run gets a fresh copy (not timed).
        copy = ctx.scratch / f"resume-{agent.name}-{entries}.jsonl"
        shutil.copyfile(ctx.sessions[entries], copy)
        args = ["--model", MODEL, "--session", str(copy), "-p", "One more thing."]
        try:
            return _run_cli(ctx, agent, args, [_text("Resumed and answered.")], b"Resumed and answered")
        finally:
            copy.unlink(missing_ok=True)

    return run


# -- JSON-mode throughput -----------------------------------------------------------------------

JSON_DELTAS = 20_000
JSON_WRITE = 64 * 1024


def _json_throughput(ctx: Context, agent: Agent) -> dict[str, float]:
    """A reply of 20,000 one-character deltas in ``--mode json``, timed as the lines arrive."""
    # The server writes the events in 64 KiB batches: one write per event would cap the rate at
    # what the fake server can send (about 13,000 events/s here), not what the agents can take.
    ctx.server.script({"reply": {"content": "x" * JSON_DELTAS, "chunk_size": 1}, "coalesce": JSON_WRITE})
    # Counted in C (bytes.count) so that the reader, sharing a process with the fake server,
    # keeps up with several hundred MiB of output. The first line is the session header, so
    # every message_update line follows a newline.
    pattern = b'\n{"type":"message_update"'
    seen = {"updates": 0, "first": 0.0, "last": 0.0, "bytes": 0}

    def read(process: MeasuredProcess) -> None:
        carry = b""
        while chunk := process.stdout.read(1 << 20):
            now = time.perf_counter()
            seen["bytes"] += len(chunk)
            data = carry + chunk
            updates = data.count(pattern)
            # Keep too few bytes to hold a whole pattern: nothing is counted twice.
            carry = data[-(len(pattern) - 1) :]
            if updates:
                if not seen["updates"]:
                    seen["first"] = now
                seen["updates"] += updates
                seen["last"] = now

    args = ["--model", MODEL, "--mode", "json", "Stream a long reply."]
    measurement = run_measured([*agent.argv, *args], env=agent.env, cwd=ctx.workdir, on_stdout=read)
    _check(agent, measurement, ctx)
    if seen["updates"] < JSON_DELTAS:
        raise AgentFailed(f"{agent.name}: only {seen['updates']} message_update lines in JSON mode")
    span = max(seen["last"] - seen["first"], 1e-6)
    figures = _figures(measurement)
    figures["events_per_s"] = seen["updates"] / span
    figures["output_mib"] = seen["bytes"] / (1 << 20)
    return figures


# -- RPC ----------------------------------------------------------------------------------------

RPC_PROMPTS = 10
RPC_TOOLS = 10
STREAM_TOKENS = 300
STREAM_LATENCY = 0.01


class _Rpc:
    """Drive an agent in ``--mode rpc``: JSON lines out, events and responses in (timestamped)."""

    def __init__(self, process: MeasuredProcess, timeout: float) -> None:
        self._process = process
        self._timeout = timeout
        self._lines: queue.Queue[tuple[float, bytes] | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, args=(process.stdout,), daemon=True)
        self._reader.start()

    def _read(self, stream: IO[bytes]) -> None:
        tail = b""
        try:
            while chunk := stream.read(1 << 16):
                now = time.perf_counter()
                *lines, tail = (tail + chunk).split(b"\n")
                for line in lines:
                    self._lines.put((now, line))
        except (OSError, ValueError):  # the pipe was closed under us after a failure
            pass
        self._lines.put(None)

    def send(self, command: dict[str, Any]) -> float:
        self._process.stdin.write(json.dumps(command).encode() + b"\n")
        self._process.stdin.flush()
        return time.perf_counter()

    def events(self) -> Iterator[tuple[float, dict[str, Any]]]:
        deadline = time.monotonic() + self._timeout
        while True:
            try:
                item = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AgentFailed("no RPC output before the timeout") from None
            if item is None:
                raise AgentFailed("the RPC process closed its output")
            stamp, line = item
            if line.strip():
                yield stamp, json.loads(line)

    def until(self, kind: str, **fields: Any) -> tuple[float, dict[str, Any]]:
        for stamp, event in self.events():
            if event.get("type") == kind and all(event.get(k) == v for k, v in fields.items()):
                return stamp, event
            if event.get("type") == "response" and event.get("success") is False:
                raise AgentFailed(f"RPC command failed: {event}")
        raise AssertionError("unreachable")

    def prompt(self, message: str) -> tuple[float, float]:
        """Send a prompt; return (sent, agent_end received)."""
        sent = self.send({"type": "prompt", "message": message})
        ended, _ = self.until("agent_end")
        return sent, ended


def _rpc(ctx: Context, agent: Agent) -> dict[str, float]:
    """One warm RPC process: prompt round trips, tool round trips, get_state while streaming."""
    process = MeasuredProcess(
        [*agent.argv, "--model", MODEL, "--mode", "rpc"],
        env=agent.env,
        cwd=ctx.workdir,
        stdin=True,
        capture=False,
        timeout=ctx.timeout,
    )
    figures: dict[str, float] = {}
    try:
        rpc = _Rpc(process, timeout=min(ctx.timeout, 120))
        for n in range(2):  # warm-up: the first prompts load the provider and the tools
            ctx.server.script(_text(f"Warm-up reply {n}."))
            rpc.prompt("Warm up.")
        prompt_times = []
        for n in range(RPC_PROMPTS):
            ctx.server.script(_text(f"Reply number {n}."))
            sent, ended = rpc.prompt("Say something.")
            prompt_times.append(ended - sent)
        figures["prompt_ms"] = statistics.median(prompt_times) * 1000

        ctx.server.script(*_echo_turns(RPC_TOOLS), _text("Ran the tools."))
        rpc.send({"type": "prompt", "message": "Run echo ten times."})
        tool_ends: list[float] = []
        for stamp, event in rpc.events():
            if event.get("type") == "tool_execution_end":
                tool_ends.append(stamp)
            elif event.get("type") == "agent_end":
                break
        if len(tool_ends) != RPC_TOOLS:
            raise AgentFailed(f"{agent.name}: {len(tool_ends)} tool executions, expected {RPC_TOOLS}")
        figures["tool_ms"] = statistics.median(b - a for a, b in itertools.pairwise(tool_ends)) * 1000

        ctx.server.script(
            {"reply": {"content": "y" * STREAM_TOKENS, "chunk_size": 1}, "latency": STREAM_LATENCY}
        )
        rpc.send({"type": "prompt", "message": "Stream slowly."})
        rpc.until("message_update")
        round_trips: list[float] = []
        ended = False
        while not ended:
            request_id = f"state-{len(round_trips)}"
            sent = rpc.send({"id": request_id, "type": "get_state"})
            for stamp, event in rpc.events():
                if event.get("type") == "agent_end":
                    ended = True
                elif event.get("type") == "response" and event.get("id") == request_id:
                    if ended:
                        pass
                    elif event.get("data", {}).get("isStreaming"):
                        round_trips.append(stamp - sent)
                    else:  # the stream is over; its agent_end is still on the way
                        rpc.until("agent_end")
                        ended = True
                    break
            if not ended:
                time.sleep(0.02)  # pacing between polls, not synchronisation
        if not round_trips:
            raise AgentFailed(f"{agent.name}: no get_state was answered while streaming")
        figures["get_state_ms"] = statistics.median(round_trips) * 1000
    except BaseException:
        process.kill()
        process.finish()
        ctx.server.settle()
        raise
    measurement = process.finish()
    problem = ctx.server.settle()
    if problem:
        raise AgentFailed(f"{agent.name}: {problem}")
    figures.update(_figures(measurement))
    return figures


# -- the list -----------------------------------------------------------------------------------

WORKLOADS: tuple[Workload, ...] = (
    Workload("version", "`--version`", (_wall(0.1), CPU, RSS), _version),
    Workload("help", "`--help`", (_wall(0.1), CPU, RSS), _help),
    Workload("one-shot", "one-shot `-p` reply", (_wall(0.25), CPU, RSS), _one_shot),
    Workload(
        "overloaded-2",
        "one-shot `-p` reply after two 529 overloaded errors",
        (_wall(1.2), CPU, RSS),
        _overloaded,
    ),
    Workload("tools-20", "20 bash `echo` tool calls (`-p`)", (_wall(0.5), CPU, RSS), _tools_20),
    Workload(
        "tools-100",
        "100 `read` calls, 4 parallel per turn (`-p`)",
        (WALL, CPU, RSS),
        _tools_100,
        _prepare_files,
    ),
    Workload(
        "resume-1k",
        "resume a 1,000-entry session + one prompt",
        (WALL, CPU, RSS),
        _resume(1_000),
        _prepare_session(1_000),
    ),
    Workload(
        "resume-10k",
        "resume a 10,000-entry session + one prompt",
        (WALL, CPU, RSS),
        _resume(10_000),
        _prepare_session(10_000),
    ),
    Workload(
        "resume-100k",
        "resume a 100,000-entry session (compaction near the end) + one prompt",
        (_wall(0.1), CPU, RSS),
        _resume(100_000),
        _prepare_session(100_000),
    ),
    Workload(
        "resume-100k-cold",
        "the same, first resume (pi-host's resume cache emptied before each run)",
        (WALL, CPU, RSS),
        _resume(100_000, cold=True),
        _prepare_session(100_000),
    ),
    Workload(
        "json-20k",
        "`--mode json`, a reply of 20,000 one-character deltas",
        (
            Metric("events_per_s", "message_update events/s", "1/s", higher_is_better=True, target=2.0),
            WALL,
            CPU,
            RSS,
        ),
        _json_throughput,
    ),
    Workload(
        "rpc",
        "warm `--mode rpc` process",
        (
            Metric("prompt_ms", "prompt round trip", "ms", target=0.3),
            Metric("tool_ms", "tool round trip", "ms", target=0.3),
            Metric("get_state_ms", "`get_state` while streaming", "ms"),
            CPU,
            RSS,
        ),
        _rpc,
    ),
)


def select(names: list[str] | None) -> tuple[Workload, ...]:
    """The workloads named (all when ``names`` is empty). :raises ValueError: on an unknown name."""
    if not names:
        return WORKLOADS
    known = {workload.name: workload for workload in WORKLOADS}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ValueError(f"unknown workload(s) {', '.join(unknown)}; choose from {', '.join(known)}")
    return tuple(known[name] for name in names)
