"""Provider streaming overhead: first byte → first ``text_delta``, and the cost per delta.

Run from the repository root::

    uv run python bench/bench_provider.py            # a table
    uv run python bench/bench_provider.py --json     # machine-readable

What it measures, for each transport (Anthropic over the lean HTTP client, over httpx, over the
official SDK; OpenAI-compatible over the lean client and over httpx):

- **first byte → first text_delta**: the server sends ``message_start`` … the first text delta
  in one TCP write; the clock starts when the transport hands the first body chunk to the
  pipeline and stops when the consumer receives the first ``text_delta`` event. This is pure
  pi-host work: SSE decoding, JSON parsing, mapping, event building.
- **per delta, end to end**: a reply of ``--deltas`` text deltas streamed over loopback from a
  fake server in a *separate process* (so its CPU does not share our GIL), divided by the
  number of deltas; wall time, and this thread's CPU time (the figure to trust on a busy
  machine).
- **warm request**: CPU time of one request on a kept-alive connection, call → ``done``, with
  a short (5-delta) reply.
- **per delta, pipeline only**: the same recorded SSE bytes fed to the same driver through an
  in-memory transport: the CPU cost of one delta without the network.
- **one-shot process**: a fresh interpreter that imports the provider, streams one short reply
  and exits (wall time), per transport: the start-up cost each transport puts on a print run.

The fake servers are ``tests/fakeservers`` (``python -m tests.fakeservers.anthropic``).
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
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pi_host.messages import UserMessage  # noqa: E402
from pi_host.providers import (  # noqa: E402
    AbortSignal,
    LlmContext,
    Model,
    StreamOptions,
    _anthropic,
    _http,
    _lean_http,
    _openai,
)
from pi_host.providers._anthropic_wire import AnthropicStreamMapper  # noqa: E402
from pi_host.providers._builder import ReplyBuilder  # noqa: E402
from pi_host.providers._driver import Prepared, drive_stream  # noqa: E402
from pi_host.providers._openai_wire import OpenAIStreamMapper  # noqa: E402
from tests.fakeservers import anthropic_events, openai_chunks  # noqa: E402

TEXT_WORD = "lorem "


@dataclass
class Target:
    name: str
    server_module: str
    api: str
    path_suffix: str
    stream: Callable[..., AsyncIterator[Any]]
    env: dict[str, str]  # PI_HOST_ANTHROPIC_TRANSPORT, PI_HOST_LEAN_HTTP


_HTTPX_ONLY = {_lean_http.LEAN_HTTP_ENV: "0"}
TARGETS = [
    Target(
        "anthropic/lean",
        "tests.fakeservers.anthropic",
        "anthropic-messages",
        "",
        _anthropic.stream,
        {_anthropic.TRANSPORT_ENV: "httpx"},
    ),
    Target(
        "anthropic/httpx",
        "tests.fakeservers.anthropic",
        "anthropic-messages",
        "",
        _anthropic.stream,
        {_anthropic.TRANSPORT_ENV: "httpx", **_HTTPX_ONLY},
    ),
    Target(
        "anthropic/sdk",
        "tests.fakeservers.anthropic",
        "anthropic-messages",
        "",
        _anthropic.stream,
        {_anthropic.TRANSPORT_ENV: "sdk"},
    ),
    Target("openai/lean", "tests.fakeservers.openai", "openai-completions", "/v1", _openai.stream, {}),
    Target(
        "openai/httpx", "tests.fakeservers.openai", "openai-completions", "/v1", _openai.stream, _HTTPX_ONLY
    ),
]


def sse_pieces(api: str, deltas: int, *, first_in_one_write: bool) -> list[bytes]:
    text = TEXT_WORD * deltas
    if api == "anthropic-messages":
        pieces = anthropic_events([{"type": "text", "text": text}], chunk_size=len(TEXT_WORD))
        marker = b"text_delta"
    else:
        pieces = openai_chunks(
            content=text, chunk_size=len(TEXT_WORD), usage={"prompt_tokens": 1, "completion_tokens": 1}
        )
        marker = b'"content": "lorem'
    if first_in_one_write:
        first = next(i for i, piece in enumerate(pieces) if marker in piece)
        pieces = [b"".join(pieces[: first + 1]), *pieces[first + 1 :]]
    return pieces


@contextmanager
def fake_server(target: Target, pieces: list[bytes]) -> Iterator[str]:
    """Start the fake server in its own process; yield the base URL."""
    with tempfile.TemporaryDirectory() as directory:
        script = Path(directory) / "script.json"
        script.write_text(json.dumps([{"sse": [piece.decode() for piece in pieces]}]))
        process = subprocess.Popen(
            [sys.executable, "-m", target.server_module, "--port", "0", "--script", str(script), "--repeat"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            url = line.strip().rsplit(" ", 1)[-1]
            yield url + target.path_suffix
        finally:
            process.terminate()
            process.wait(5)


@contextmanager
def first_chunk_clock() -> Iterator[list[float]]:
    """Record when each response hands over its first body chunk (both transports)."""
    stamps: list[float] = []
    patched: list[tuple[type, Any]] = []
    classes: list[type] = [
        _http._HttpxResponseStream,
        _lean_http._LeanResponseStream,
        _anthropic._SdkResponseStream,
    ]
    for cls in classes:
        original = cls.next_chunk

        async def next_chunk(self: Any, original: Any = original) -> bytes | None:
            chunk: bytes | None = await original(self)
            if chunk and not getattr(self, "_bench_seen", False):
                self._bench_seen = True
                stamps.append(time.perf_counter())
            return chunk

        patched.append((cls, original))
        cls.next_chunk = next_chunk  # type: ignore[method-assign]
    try:
        yield stamps
    finally:
        for cls, original in patched:
            cls.next_chunk = original  # type: ignore[method-assign]


def model_for(target: Target, base_url: str) -> Model:
    return Model(id="bench-model", api=target.api, provider="bench", base_url=base_url, max_tokens=4096)


CONTEXT = LlmContext(system_prompt="bench", messages=[UserMessage(content="go")])


async def measure_network(target: Target, deltas: int, runs: int) -> dict[str, float]:
    first_latencies: list[float] = []
    per_delta: list[float] = []
    per_delta_cpu: list[float] = []
    to_start: list[float] = []
    with fake_server(target, sse_pieces(target.api, deltas, first_in_one_write=True)) as url:
        model = model_for(target, url)
        for run in range(runs + 1):  # the first run warms up imports and connections
            with first_chunk_clock() as stamps:
                first_delta_at = last_delta_at = started_at = first_cpu = last_cpu = 0.0
                count = 0
                called = time.perf_counter()
                async for event in target.stream(model, CONTEXT, StreamOptions(api_key="bench-key")):
                    if event.type == "start":
                        started_at = time.perf_counter()
                    elif event.type == "text_delta":
                        now, cpu = time.perf_counter(), time.thread_time()
                        count += 1
                        if count == 1:
                            first_delta_at, first_cpu = now, cpu
                        last_delta_at, last_cpu = now, cpu
                    elif event.type == "error":
                        raise RuntimeError(event.error.error_message)
            assert count == deltas, (count, deltas)
            if run:
                first_latencies.append(first_delta_at - stamps[0])
                per_delta.append((last_delta_at - first_delta_at) / (deltas - 1))
                per_delta_cpu.append((last_cpu - first_cpu) / (deltas - 1))
                to_start.append(started_at - called)
    warm = await measure_warm_requests(target)
    return {
        "call_to_start_event_us": statistics.median(to_start) * 1e6,
        "first_byte_to_first_delta_us": statistics.median(first_latencies) * 1e6,
        "per_delta_loopback_us": statistics.median(per_delta) * 1e6,
        "per_delta_loopback_cpu_us": statistics.median(per_delta_cpu) * 1e6,
        **warm,
    }


async def measure_warm_requests(target: Target, requests: int = 40, rounds: int = 5) -> dict[str, float]:
    """CPU time of one warm request (pooled connection): call → ``done`` of a 5-delta reply."""
    with fake_server(target, sse_pieces(target.api, 5, first_in_one_write=False)) as short_url:
        model = model_for(target, short_url)
        per_request: list[float] = []
        for round_number in range(rounds + 1):
            started = time.thread_time()
            for _ in range(requests):
                async for event in target.stream(model, CONTEXT, StreamOptions(api_key="bench-key")):
                    if event.type == "error":
                        raise RuntimeError(event.error.error_message)
            if round_number:  # the first round opens the connection and warms the caches
                per_request.append((time.thread_time() - started) / requests)
    return {"warm_request_cpu_us": statistics.median(per_request) * 1e6}


@dataclass
class _MemoryResponse:
    chunks: list[bytes]
    status: int = 200
    headers: dict[str, str] | None = None

    def __post_init__(self) -> None:
        self.headers = {}
        self._index = 0

    async def next_chunk(self) -> bytes | None:
        if self._index >= len(self.chunks):
            return None
        self._index += 1
        return self.chunks[self._index - 1]

    def watch(self, signal: AbortSignal) -> None:
        """Like the lean client's streams: no cancel scope per read (nothing here blocks)."""

    async def aclose(self) -> None:
        return None


class _MemoryTransport:
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def open(self, request: _http.HttpRequest) -> Any:
        return _MemoryResponse(list(self.chunks))


async def measure_pipeline(api: str, deltas: int, runs: int) -> dict[str, float]:
    """Wall and CPU time of the pipeline alone (CPU time is the figure to trust on a busy machine)."""
    pieces = sse_pieces(api, deltas, first_in_one_write=True)
    model = Model(id="bench-model", api=api, provider="bench", max_tokens=4096)
    per_delta: list[float] = []
    per_delta_cpu: list[float] = []
    first: list[float] = []
    for run in range(runs + 1):
        builder = ReplyBuilder(model)
        mapper: Any = (
            AnthropicStreamMapper(builder) if api == "anthropic-messages" else OpenAIStreamMapper(builder)
        )
        # Any http(s) URL passes the request check; the in-memory transport never connects.
        request = _http.HttpRequest(url="http://127.0.0.1/", headers={}, body={})

        async def prepare(signal: AbortSignal, mapper: Any = mapper, request: Any = request) -> Prepared:
            return Prepared(transport=_MemoryTransport(pieces), request=request, mapper=mapper)

        started = time.perf_counter()
        first_at = first_cpu = 0.0
        count = 0
        async for event in drive_stream(model, StreamOptions(signal=AbortSignal()), builder, prepare):
            if event.type == "text_delta":
                count += 1
                if count == 1:
                    first_at, first_cpu = time.perf_counter(), time.thread_time()
        ended, ended_cpu = time.perf_counter(), time.thread_time()
        assert count == deltas
        if run:
            first.append(first_at - started)
            per_delta.append((ended - first_at) / (deltas - 1))
            per_delta_cpu.append((ended_cpu - first_cpu) / (deltas - 1))
    return {
        "start_to_first_delta_pipeline_us": statistics.median(first) * 1e6,
        "per_delta_pipeline_wall_us": statistics.median(per_delta) * 1e6,
        "per_delta_pipeline_cpu_us": statistics.median(per_delta_cpu) * 1e6,
    }


ONE_SHOT = """
import sys, time, anyio
started = time.perf_counter()
from pi_host.messages import UserMessage
from pi_host.providers import LlmContext, Model, StreamOptions
from pi_host.providers import _anthropic
async def main():
    model = Model(id="m", api="anthropic-messages", provider="anthropic", base_url=sys.argv[1])
    context = LlmContext(messages=[UserMessage(content="hi")])
    async for event in _anthropic.stream(model, context, StreamOptions(api_key="k")):
        last = event
    assert last.type == "done", last
anyio.run(main)
print(time.perf_counter() - started)
"""


def _python_env(**extra: str) -> dict[str, str]:
    """The environment of a fresh interpreter as users run it: with compiled bytecode.

    Byte-compiling is a one-off cost of installation, so it must not count as start-up: the
    cache goes to a private prefix (the shared virtualenv stays untouched) and every figure is
    taken after a warm-up run that fills it.
    """
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "pi-host-bench-pycache")
    env.update(extra)
    return env


def _wall(command: list[str], env: dict[str, str], runs: int) -> tuple[float, list[str]]:
    subprocess.run(command, cwd=ROOT, env=env, capture_output=True, check=True)  # warm-up
    walls: list[float] = []
    outputs: list[str] = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=True)
        walls.append(time.perf_counter() - started)
        outputs.append(done.stdout.strip())
    return statistics.median(walls), outputs


def measure_one_shot(runs: int) -> dict[str, float]:
    results: dict[str, float] = {}
    for label, code in (
        ("python", "pass"),
        ("import_httpx", "import httpx"),
        ("import_anthropic_sdk", "import anthropic"),
    ):
        results[f"{label}_s"] = _wall([sys.executable, "-c", code], _python_env(), runs)[0]
    target = TARGETS[0]
    with fake_server(target, sse_pieces(target.api, 5, first_in_one_write=False)) as url:
        for label, extra in (
            ("lean", {_anthropic.TRANSPORT_ENV: "httpx"}),
            ("httpx", {_anthropic.TRANSPORT_ENV: "httpx", **_HTTPX_ONLY}),
            ("sdk", {_anthropic.TRANSPORT_ENV: "sdk"}),
        ):
            env = _python_env(**extra)
            wall, outputs = _wall([sys.executable, "-c", ONE_SHOT, url], env, runs)
            results[f"one_shot_process_{label}_s"] = wall
            results[f"one_shot_import_and_stream_{label}_s"] = statistics.median(
                float(out) for out in outputs
            )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--deltas", type=int, default=2000, help="text deltas per reply")
    parser.add_argument("--runs", type=int, default=7, help="measured runs per figure (median)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()

    results: dict[str, dict[str, float]] = {}
    for target in TARGETS:
        for name in (_anthropic.TRANSPORT_ENV, _lean_http.LEAN_HTTP_ENV):
            os.environ.pop(name, None)
        os.environ.update(target.env)
        results[target.name] = anyio.run(measure_network, target, args.deltas, args.runs)
    for name in (_anthropic.TRANSPORT_ENV, _lean_http.LEAN_HTTP_ENV):
        os.environ.pop(name, None)
    for api in ("anthropic-messages", "openai-completions"):
        results[f"pipeline/{api}"] = anyio.run(measure_pipeline, api, args.deltas, args.runs)
    results["one-shot"] = measure_one_shot(max(3, args.runs // 2))

    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{args.deltas} text deltas per reply, median of {args.runs} runs, Python {sys.version.split()[0]}")
    for name, figures in results.items():
        print(name)
        for key, value in figures.items():
            unit = "s" if key.endswith("_s") else "µs"
            print(f"  {key:<40} {value:10.3f} {unit}" if unit == "s" else f"  {key:<40} {value:10.1f} {unit}")


if __name__ == "__main__":
    main()
