"""Benchmark: resuming large sessions (open + build context), pi-host against pi 0.73.

Generates session files of 1,000, 10,000 and 100,000 entries (user prompts, assistant replies
with tool calls, tool results of realistic sizes), each with and without a compaction near the
end, then measures in a fresh subprocess per measurement:

- ``resume``: ``SessionManager.open`` + ``build_session_context`` (resume cache warm, the
  steady state: any earlier resume or the compaction itself fills it);
- ``resume-cold``: the same with no resume cache (the first resume of a file pi wrote);
- ``full-parse``: parsing every entry and resolving the context from the list (what pi does,
  done in Python);
- ``first-append``: resume, then one append (the first append checks new ids against the whole
  file);
- ``pi``: pi 0.73's own ``SessionManager.open`` + ``buildSessionContext`` under node, when
  node and pi are installed.

Each figure is the median wall time of several runs; memory is the peak Python heap
(tracemalloc) and the process's peak RSS. Run: ``uv run python bench/bench_session.py``
(``--sizes 1000,10000`` to choose sizes, ``--runs N``, ``--keep DIR`` to keep the files).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from pi_host.messages import (
    AgentMessage,
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from pi_host.session import (
    CompactionEntry,
    ModelChangeEntry,
    SessionEntry,
    SessionHeader,
    SessionMessageEntry,
    ThinkingLevelChangeEntry,
)

PI_DIST = Path("/tmp/pi073/node_modules/@mariozechner/pi-coding-agent/dist/core/session-manager.js")
WORDS = [
    "the",
    "session",
    "file",
    "reads",
    "lines",
    "from",
    "the",
    "end",
    "and",
    "parses",
    "only",
    "the",
    "active",
    "branch",
    "since",
    "the",
    "last",
    "compaction",
    "so",
    "resume",
    "cost",
    "follows",
    "what",
    "the",
    "model",
    "sees",
    "rather",
    "than",
    "how",
    "long",
    "the",
    "project",
    "ran",
    "def",
    "class",
    "import",
    "return",
    "await",
    "async",
    "self",
    "value",
    "result",
    "error",
    "path",
    "tool",
    "call",
    "output",
]


def _text(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(WORDS)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)


def generate(path: Path, entries: int, compaction: bool, seed: int = 7) -> None:
    """Write a pi-format session of ``entries`` entries (turns of prompt, tool calls, results)."""
    rng = random.Random(seed)
    ids: list[str] = []

    def new_id() -> str:
        while True:
            candidate = f"{rng.getrandbits(32):08x}"
            if candidate not in seen:
                seen.add(candidate)
                return candidate

    seen: set[str] = set()
    stamp = 1_760_000_000_000
    compaction_at = entries - 40 if compaction else -1
    with open(path, "w", encoding="utf-8") as f:
        header = SessionHeader(
            id="0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
            timestamp="2025-10-09T08:53:20.000Z",
            cwd="/home/user/project",
        )
        f.write(header.to_json() + "\n")
        parent: str | None = None
        turn_step = 0
        call_id = 0
        for n in range(entries):
            stamp += rng.randint(50, 3000)
            iso = _iso(stamp)
            entry_id = new_id()
            entry: SessionEntry
            message: AgentMessage
            if n == 0:
                entry = ModelChangeEntry(
                    id=entry_id,
                    parent_id=parent,
                    timestamp=iso,
                    provider="anthropic",
                    model_id="claude-sonnet-4-5",
                )
            elif n == 1:
                entry = ThinkingLevelChangeEntry(
                    id=entry_id, parent_id=parent, timestamp=iso, thinking_level="medium"
                )
            elif n == compaction_at:
                entry = CompactionEntry(
                    id=entry_id,
                    parent_id=parent,
                    timestamp=iso,
                    summary=_text(rng, 3000),
                    first_kept_entry_id=ids[n - 20],
                    tokens_before=150_000,
                    details={"readFiles": ["a.py", "b.py"], "modifiedFiles": ["c.py"]},
                )
            else:
                phase = turn_step % 4
                turn_step += 1
                if phase == 0:
                    message = UserMessage(content=_text(rng, rng.randint(80, 600)), timestamp=stamp)
                elif phase in (1, 3):
                    call_id += 1
                    content: list[TextContent | ToolCall] = [
                        TextContent(text=_text(rng, rng.randint(100, 900)))
                    ]
                    if phase == 1:
                        content.append(
                            ToolCall(
                                id=f"toolu_{call_id:08d}",
                                name="read",
                                arguments={"path": f"src/mod_{call_id % 97}.py"},
                            )
                        )
                    message = AssistantMessage(
                        content=content,
                        api="anthropic-messages",
                        provider="anthropic",
                        model="claude-sonnet-4-5",
                        usage=Usage(
                            input=rng.randint(1000, 90000), output=rng.randint(10, 900), total_tokens=1000
                        ),
                        stop_reason="toolUse" if phase == 1 else "stop",
                        timestamp=stamp,
                    )
                else:
                    message = ToolResultMessage(
                        tool_call_id=f"toolu_{call_id:08d}",
                        tool_name="read",
                        content=[TextContent(text=_text(rng, rng.choice((400, 1200, 3000, 8000))))],
                        is_error=False,
                        timestamp=stamp,
                    )
                entry = SessionMessageEntry(id=entry_id, parent_id=parent, timestamp=iso, message=message)
            f.write(entry.to_json() + "\n")
            ids.append(entry_id)
            parent = entry_id


def _iso(millis: int) -> str:
    from datetime import UTC, datetime

    moment = datetime.fromtimestamp(millis / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{millis % 1000:03d}Z"


_CHILD = textwrap.dedent(
    """
    import json, resource, sys, time, tracemalloc
    from pi_host.session import SessionManager, build_session_context
    from pi_host.messages import UserMessage
    mode, path, cache, trace = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
    if trace:
        tracemalloc.start()
    started = time.perf_counter()
    if mode == "full-parse":
        manager = SessionManager.open(path, cache_dir=False)
        context = build_session_context(manager.get_entries(), manager.leaf_id)
    else:
        manager = SessionManager.open(path, cache_dir=cache if cache != "-" else False)
        context = manager.build_session_context()
        if mode == "first-append":
            manager.append_message(UserMessage(content="one more thing"))
    elapsed = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1] if trace else 0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"seconds": elapsed, "heap": peak, "rss_kb": rss, "messages": len(context.messages),
                      "thinking": context.thinking_level, "warnings": len(manager.warnings)}))
    """
)

_PI_CHILD = """
const { SessionManager } = await import(process.argv[1]);
const started = performance.now();
const manager = SessionManager.open(process.argv[2]);
const context = manager.buildSessionContext();
const seconds = (performance.now() - started) / 1000;
console.log(JSON.stringify({ seconds, heap: process.memoryUsage().heapUsed,
  rss_kb: Math.round(process.resourceUsage().maxRSS), messages: context.messages.length,
  thinking: context.thinkingLevel }));
"""


def _run(mode: str, path: Path, cache: str, trace: bool = False) -> dict[str, float]:
    if mode == "pi":
        command = ["node", "--input-type=module", "-e", _PI_CHILD, PI_DIST.as_uri(), str(path)]
        env = dict(os.environ)
    else:
        command = [sys.executable, "-c", _CHILD, mode, str(path), cache, "1" if trace else "0"]
        env = dict(os.environ)
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{mode} run on {path.name} failed ({done.returncode}):\n{done.stderr}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def measure(mode: str, path: Path, runs: int, cache_dir: Path) -> dict[str, float]:
    """Median time and RSS over ``runs`` plain runs, plus the heap peak of one traced run."""
    results = []
    for run in range(runs + 1):
        trace = run == runs and mode != "pi"  # tracemalloc slows Python: time untraced runs
        if run == runs and mode == "pi":
            break
        if mode == "resume-cold":
            shutil.rmtree(cache_dir, ignore_errors=True)
            result = _run(mode, path, str(cache_dir), trace)
        elif mode in ("resume", "first-append"):
            _run("resume", path, str(cache_dir))  # warm the resume cache
            result = _run(mode, path, str(cache_dir), trace)
        else:
            result = _run(mode, path, "-", trace)
        if mode == "first-append":
            _truncate_last_line(path)
        if trace:
            heap = result["heap"]
        else:
            results.append(result)
    best = {key: statistics.median(r[key] for r in results) for key in ("seconds", "rss_kb")}
    best["heap"] = heap if mode != "pi" else statistics.median(r["heap"] for r in results)
    best["messages"] = results[0]["messages"]
    return best


def _truncate_last_line(path: Path) -> None:
    """Drop the line the first-append run added (reading only the tail: on Linux a child's
    peak RSS starts from its parent's, so the parent must stay small)."""
    size = path.stat().st_size
    with open(path, "r+b") as f:
        start = max(0, size - 1024 * 1024)
        f.seek(start)
        tail = f.read()
        cut = tail.rstrip(b"\n").rfind(b"\n")
        f.truncate(start + cut + 1)


def main() -> None:
    if sys.argv[1:2] == ["--generate"]:
        generate(Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1")
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keep", type=Path, default=None, help="directory to generate the files in and keep")
    parser.add_argument("--no-pi", action="store_true", help="skip pi itself even if node is available")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    modes = ["resume", "resume-cold", "first-append", "full-parse"]
    if not args.no_pi and shutil.which("node") and PI_DIST.exists():
        modes.append("pi")
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="pi-host-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    cache_dir = workdir / "cache"
    columns = ("entries", 8), ("compaction", 10), ("MB", 7), ("mode", 13), ("ms", 9), ("heap MB", 8)
    print(" ".join(f"{name:>{width}}" for name, width in columns), f"{'RSS MB':>7} {'msgs':>6}")
    try:
        for size in sizes:
            for compaction in (False, True):
                path = workdir / f"session-{size}-{'c' if compaction else 'n'}.jsonl"
                if not path.exists():
                    # In a child process: a parent grown by generating would inflate every
                    # child's peak RSS (Linux children start from the parent's).
                    subprocess.run(
                        [
                            sys.executable,
                            __file__,
                            "--generate",
                            str(path),
                            str(size),
                            "1" if compaction else "0",
                        ],
                        check=True,
                    )
                megabytes = path.stat().st_size / 1e6
                for mode in modes:
                    runs = args.runs if size < 100_000 or mode != "full-parse" else max(1, args.runs // 2)
                    result = measure(mode, path, runs, cache_dir)
                    print(
                        f"{size:>8} {'yes' if compaction else 'no':>10} {megabytes:>7.1f} {mode:>13} "
                        f"{result['seconds'] * 1000:>9.2f} {result['heap'] / 1e6:>8.1f} "
                        f"{result['rss_kb'] / 1024:>7.1f} {int(result['messages']):>6}",
                        flush=True,
                    )
    finally:
        if args.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
