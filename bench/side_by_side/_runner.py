"""The command line: set up, run the workloads alternately, report."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from ._agents import (
    DEFAULT_PLUGINS,
    Agent,
    PiUnavailable,
    ensure_pi,
    pi_agent,
    pi_host_agent,
    write_models_json,
)
from ._measure import AgentFailed
from ._report import Results, machine_description, render_markdown, write_into
from ._server import BenchServer
from ._workloads import WORKLOADS, Context, Workload, select

__all__ = ["main"]

REPO = Path(__file__).resolve().parents[2]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bench/run.py",
        description="Benchmark pi-host against pi 0.73 side by side on a local fake model server.",
    )
    parser.add_argument("--runs", type=int, default=5, help="measured runs per agent and workload (5)")
    parser.add_argument("--warmup", type=int, default=1, help="unmeasured runs first (1)")
    parser.add_argument("--quick", action="store_true", help="one measured run each (same as --runs 1)")
    parser.add_argument(
        "--workloads",
        default="",
        help="comma-separated subset of: " + ", ".join(workload.name for workload in WORKLOADS),
    )
    parser.add_argument(
        "--cache",
        type=Path,
        default=REPO / ".bench-cache",
        help="where pi is installed and generated sessions are kept (.bench-cache)",
    )
    parser.add_argument("--pi-cli", type=Path, help="use this pi cli.js instead of the cached install")
    parser.add_argument("--pi-version", default="0.73", help="the pi version to install (0.73)")
    parser.add_argument("--no-install", action="store_true", help="never run npm; skip pi if missing")
    parser.add_argument("--no-pi", action="store_true", help="run pi-host only")
    parser.add_argument("--pi-host", type=Path, help="the pi-host executable (default: next to python)")
    parser.add_argument(
        "--all-plugins",
        action="store_true",
        help="load every installed pi-host plugin, not only the default set (pi-host[default])",
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=REPO / "docs" / "performance.md",
        help="Markdown file whose results section is rewritten (docs/performance.md)",
    )
    parser.add_argument("--no-write", action="store_true", help="print the table, leave files alone")
    parser.add_argument("--json", type=Path, help="also write every run's raw figures here")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds before a run is killed")
    return parser


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _agents(args: argparse.Namespace, root: Path) -> list[Agent]:
    cache: Path = args.cache
    plugins = None if args.all_plugins else DEFAULT_PLUGINS
    agents = [pi_host_agent(root / "pi-host-dir", cache, args.pi_host, plugins=plugins)]
    if args.no_pi:
        return agents
    try:
        cli = args.pi_cli or ensure_pi(
            cache / f"pi-{args.pi_version}", args.pi_version, install=not args.no_install
        )
        agents.append(pi_agent(root / "pi-dir", cli))
    except (PiUnavailable, RuntimeError) as error:
        _log(f"pi is unavailable, running pi-host only: {error}")
    return agents


def _run_one(workload: Workload, agent: Agent, ctx: Context) -> dict[str, float] | str:
    try:
        return workload.run(ctx, agent)
    except AgentFailed as error:
        return str(error)


def run(args: argparse.Namespace) -> int:
    runs = 1 if args.quick else args.runs
    workloads = select([name for name in args.workloads.split(",") if name])
    args.cache.mkdir(parents=True, exist_ok=True)
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="pi-bench-") as temp:
        root = Path(temp)
        agents = _agents(args, root)
        versions = {agent.name: agent.version for agent in agents}
        _log("agents: " + ", ".join(f"{agent.name} {agent.version}" for agent in agents))

        def point_agents(base_url: str) -> None:
            for agent in agents:
                write_models_json(agent.agent_dir, base_url)

        server = BenchServer(point_agents)
        # A fixed project directory: the generated sessions kept in the cache record it as
        # their cwd, and pi refuses to resume a session whose directory is gone.
        workdir = args.cache / "project"
        workdir.mkdir(parents=True, exist_ok=True)
        scratch = args.cache / "sessions"
        scratch.mkdir(parents=True, exist_ok=True)
        ctx = Context(server=server, workdir=workdir, scratch=scratch, timeout=args.timeout)
        results: Results = {}
        errors: dict[str, dict[str, str]] = {}
        try:
            for workload in workloads:
                if workload.prepare is not None:
                    _log(f"{workload.name}: preparing")
                    workload.prepare(ctx)
                by_agent: dict[str, list[dict[str, float]]] = {agent.name: [] for agent in agents}
                results[workload.name] = by_agent
                for number in range(args.warmup + runs):
                    measured = number >= args.warmup
                    for agent in agents:
                        if agent.name in errors.get(workload.name, {}):
                            continue
                        outcome = _run_one(workload, agent, ctx)
                        if isinstance(outcome, str):
                            _log(f"{workload.name}: {agent.name} FAILED: {outcome}")
                            errors.setdefault(workload.name, {})[agent.name] = outcome
                            continue
                        label = f"run {number - args.warmup + 1}" if measured else "warm-up"
                        _log(f"{workload.name} {label} {agent.name}: " + _brief(outcome))
                        if measured:
                            by_agent[agent.name].append(outcome)
        finally:
            server.close()
    duration = time.perf_counter() - began
    command = "uv run python bench/run.py" + "".join(f" {shlex.quote(arg)}" for arg in args.argv)
    section = render_markdown(
        workloads,
        results,
        errors,
        command=command,
        machine=machine_description(versions.get("pi"), versions["pi-host"]),
        runs=runs,
        warmup=args.warmup,
        started=started,
        duration_s=duration,
    )
    print(section)
    if args.json:
        args.json.write_text(json.dumps({"results": results, "errors": errors}, indent=1) + "\n")
    if not args.no_write:
        write_into(args.output, section)
        _log(f"wrote the results into {args.output}")
    return 1 if errors else 0


def _brief(figures: dict[str, float]) -> str:
    return ", ".join(f"{key}={value:.3g}" for key, value in figures.items())


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    args.argv = argv  # the reproducing command in the report
    try:
        return run(args)
    except ValueError as error:
        _log(f"bench/run.py: {error}")
        return 2
