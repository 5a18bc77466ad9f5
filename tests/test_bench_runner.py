"""The side-by-side benchmark runner (bench/run.py) works: on a tiny workload, with no timing checks.

The runner compares pi-host with pi 0.73 from npm. Tests never reach the network, so they run pi
only when an earlier benchmark run left it in ``.bench-cache``; otherwise the runner must say
that pi is skipped and still measure pi-host.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]

from side_by_side._measure import MeasuredProcess, run_measured  # noqa: E402
from side_by_side._report import END_MARKER, START_MARKER, pair_ratios, verdict, write_into  # noqa: E402
from side_by_side._server import BenchServer  # noqa: E402
from side_by_side._sessions import generate_session  # noqa: E402
from side_by_side._workloads import Metric  # noqa: E402

from pi_host.session import SessionManager  # noqa: E402

RUNNER = ROOT / "bench" / "run.py"
PI_CLI = ROOT / ".bench-cache" / "pi-0.73" / "node_modules/@mariozechner/pi-coding-agent/dist/cli.js"


def run_runner(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict, str]:
    output = tmp_path / "performance.md"
    output.write_text("# Performance\n\nHand-written notes stay.\n")
    raw = tmp_path / "raw.json"
    result = subprocess.run(
        [
            *(sys.executable, str(RUNNER), "--quick", "--warmup", "0", "--no-install"),
            *("--output", str(output), "--json", str(raw), *args),
        ],
        capture_output=True,
        text=True,
        timeout=110,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result, json.loads(raw.read_text()), output.read_text()


def test_runner_measures_pi_host_and_writes_the_table(tmp_path: Path) -> None:
    result, raw, document = run_runner(tmp_path, "--workloads", "version,one-shot,tools-20")
    if PI_CLI.exists():
        agents = ["pi-host", "pi"]
    else:
        agents = ["pi-host"]
        # It says why: no node or npm, or (tests never install) pi missing from the cache.
        assert "pi is unavailable, running pi-host only: " in result.stderr
        assert "not installed" in result.stderr
    for workload in ("version", "one-shot", "tools-20"):
        assert sorted(raw["results"][workload]) == sorted(agents)
        for agent in agents:
            (run,) = raw["results"][workload][agent]
            assert run["wall_s"] > 0 and run["cpu_s"] > 0 and run["rss_mib"] > 1
    assert raw["errors"] == {}
    assert document.startswith("# Performance\n\nHand-written notes stay.\n")
    assert START_MARKER in document and END_MARKER in document
    assert "| one-shot `-p` reply | peak RSS (MiB) |" in document
    assert "uv run python bench/run.py --quick" in document
    assert "2 cores" in document or "cores;" in document


def test_runner_without_pi_runs_rpc_and_json_workloads(tmp_path: Path) -> None:
    _result, raw, document = run_runner(tmp_path, "--no-pi", "--workloads", "rpc,json-20k")
    (rpc,) = raw["results"]["rpc"]["pi-host"]
    assert {"prompt_ms", "tool_ms", "get_state_ms", "cpu_s", "rss_mib"} <= set(rpc)
    (stream,) = raw["results"]["json-20k"]["pi-host"]
    assert stream["events_per_s"] > 0
    assert stream["output_mib"] > 1
    assert "| warm `--mode rpc` process | tool round trip (ms) |" in document


def test_pi_is_skipped_with_the_reason_when_it_cannot_be_installed(tmp_path: Path) -> None:
    cache = tmp_path / "empty-cache"
    result, raw, document = run_runner(tmp_path, "--cache", str(cache), "--workloads", "version")
    assert "pi is unavailable, running pi-host only: " in result.stderr
    assert "not installed" in result.stderr
    assert list(raw["results"]["version"]) == ["pi-host"]
    assert "pi: not run" in document


def test_an_unknown_workload_is_named_with_the_choices(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(RUNNER), "--quick", "--no-pi", "--workloads", "versoin", "--no-write"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "unknown workload(s) versoin; choose from version, help" in result.stderr


def test_peak_memory_is_per_process_not_the_largest_child_so_far(tmp_path: Path) -> None:
    # RUSAGE_CHILDREN would report the big child's peak for the small one too.
    big = "b = bytearray(200 * 1024 * 1024); b[::4096] = b'x' * len(b[::4096])"
    first = run_measured([sys.executable, "-c", big], env={}, cwd=tmp_path)
    second = run_measured([sys.executable, "-c", "pass"], env={}, cwd=tmp_path)
    assert first.max_rss_mib > 200
    assert second.max_rss_mib < 100
    assert first.exit_code == second.exit_code == 0


def test_the_runners_own_memory_is_no_floor_under_a_childs_peak(tmp_path: Path) -> None:
    # Forked straight from a big process, a child's ru_maxrss starts at that process's size.
    held = bytearray(200 * 1024 * 1024)
    held[::4096] = b"x" * len(held[::4096])
    small = run_measured([sys.executable, "-c", "pass"], env={}, cwd=tmp_path)
    assert small.exit_code == 0
    assert small.max_rss_mib < 100
    del held


def test_the_agents_exit_status_and_cost_are_its_own(tmp_path: Path) -> None:
    busy = "import sys; sum(range(3_000_000)); sys.exit(3)"
    measurement = run_measured([sys.executable, "-c", busy], env={}, cwd=tmp_path)
    assert measurement.exit_code == 3
    assert measurement.cpu_s > 0 and 0 < measurement.wall_s < 60


def test_a_hung_process_is_killed_at_the_timeout(tmp_path: Path) -> None:
    process = MeasuredProcess(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], env={}, cwd=tmp_path, stdin=True, timeout=0.5
    )
    process.stdout.read()  # returns at EOF, when the timer has killed the process
    measurement = process.finish()
    assert process.timed_out
    assert measurement.exit_code == -9


def test_the_server_detects_a_run_that_left_replies_behind() -> None:
    urls: list[str] = []
    server = BenchServer(urls.append)
    try:
        reply = {"reply": {"content": "hi"}}
        server.script(reply)
        httpx.post(f"{server.base_url}/v1/messages", json={}).raise_for_status()
        assert server.settle() is None
        server.script(reply, reply)
        httpx.post(f"{server.base_url}/v1/messages", json={}).raise_for_status()
        assert server.settle() == "the agent made 1 model requests, the workload scripted 2"
        # A fresh server replaced the one with a leftover reply, and the agents were re-pointed.
        assert len(urls) == 2 and urls[-1] == server.base_url
        server.script(reply)
        body = httpx.post(f"{server.base_url}/v1/messages", json={}).text
        assert "message_start" in body
        assert server.settle() is None
    finally:
        server.close()


@pytest.mark.parametrize("compaction", [False, True])
def test_generated_sessions_are_read_by_pi_host(tmp_path: Path, compaction: bool) -> None:
    path = generate_session(
        tmp_path / "s.jsonl", 400, cwd=tmp_path, provider="bench", model="fake-model", compaction=compaction
    )
    lines = path.read_text().splitlines()
    assert 401 <= len(lines) <= 404  # a header, then the entries up to the end of a turn
    assert json.loads(lines[0])["version"] == 3
    last = json.loads(lines[-1])["message"]
    assert last["role"] == "assistant" and last["stopReason"] == "stop"
    manager = SessionManager.open(path, cache_dir=False)
    context = manager.build_session_context()
    assert not manager.warnings
    assert context.model is not None and context.model.model_id == "fake-model"
    if compaction:
        assert context.messages[0].role == "compactionSummary"
        assert context.messages[1].role == "user"
        assert len(context.messages) < 70  # the summary, ~20 kept entries, 40 after it
    else:
        assert len(context.messages) == len(lines) - 3  # minus header, model and thinking entries


def test_write_into_replaces_only_the_generated_section(tmp_path: Path) -> None:
    path = tmp_path / "performance.md"
    path.write_text(f"# Perf\n\nintro\n\n{START_MARKER}\nold table\n{END_MARKER}\n\n## Profile\n\nnotes\n")
    write_into(path, f"{START_MARKER}\nnew table\n{END_MARKER}\n")
    assert path.read_text() == (
        f"# Perf\n\nintro\n\n{START_MARKER}\nnew table\n{END_MARKER}\n\n## Profile\n\nnotes\n"
    )


def test_ratios_pair_runs_and_verdicts_say_by_how_much() -> None:
    host = [{"wall_s": 1.0}, {"wall_s": 2.0}]
    pi = [{"wall_s": 4.0}, {"wall_s": 4.0}, {"wall_s": 9.0}]
    assert pair_ratios(host, pi, "wall_s") == [0.25, 0.5]
    lower = Metric("wall_s", "wall time", "s", target=0.25)
    assert verdict(lower, [0.25]) == "≤ 0.25: **met**"
    assert verdict(lower, [0.5]) == "≤ 0.25: missed \u00d72.00"
    higher = Metric("events_per_s", "events/s", "1/s", higher_is_better=True, target=2.0)
    assert verdict(higher, [1.0]) == "≥ 2: missed \u00d72.00"
    assert verdict(Metric("cpu_s", "CPU", "s"), [3.0]) == "—"
