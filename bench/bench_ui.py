"""The interactive screen while a long reply streams, side by side with pi 0.73 when node is there.

Run with ``uv run python bench/bench_ui.py [--keys 40] [--no-pi]``. Each agent runs in a
120x35 pseudo-terminal whose output feeds a pyte terminal emulator; both talk to the same fake
Anthropic server (``bench/side_by_side``), which streams a 40-paragraph reply in small pieces.

- *frames without editor/footer*: the screen is sampled every 50 ms while the reply streams;
  a sample counts when the editor (two full-width ``─`` rules) or the footer (the line naming
  the model) is missing. As a terminal that supports synchronized output (``CSI ?2026``)
  would, the emulator's screen is only sampled between updates, never inside one.
- *keystroke latency*: while the reply streams, one letter at a time is typed into the editor;
  the time from writing it to the pty to seeing it on the emulated screen, median / p90 / max.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pexpect
import pyte

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.side_by_side._agents import MODEL, Agent, pi_agent, pi_host_agent, write_models_json
from bench.side_by_side._server import BenchServer
from tests.pi_reference import installed_pi_cli

ROWS, COLUMNS = 35, 120
PARAGRAPHS = 40
SAMPLE_S = 0.05
BEGIN_SYNC, END_SYNC = "\x1b[?2026h", "\x1b[?2026l"


def reply_text() -> str:
    return "\n\n".join(
        f"Paragraph {n:02d}: the reply goes on about the subject at some length, so that each "
        f"paragraph wraps over two lines of the terminal and the screen scrolls. End of {n:02d}."
        for n in range(1, PARAGRAPHS + 1)
    )


@dataclass
class Result:
    name: str
    latencies_ms: list[float] = field(default_factory=list)
    samples: int = 0
    missing: int = 0


class EmulatedTerminal:
    """A pty running ``agent``, read into a pyte screen."""

    def __init__(self, agent: Agent, cwd: Path) -> None:
        env = {**agent.env, "TERM": "xterm-256color", "COLUMNS": str(COLUMNS), "LINES": str(ROWS)}
        env["PROMPT_TOOLKIT_NO_CPR"] = "1"  # pyte answers no cursor position requests
        env.pop("NO_COLOR", None)
        self.screen = pyte.Screen(COLUMNS, ROWS)
        self.stream = pyte.Stream(self.screen)
        self.in_sync = False
        self.child = pexpect.spawn(
            agent.argv[0],
            [*agent.argv[1:], "--model", MODEL],
            cwd=str(cwd),
            env=env,
            dimensions=(ROWS, COLUMNS),
            encoding="utf-8",
            codec_errors="replace",
        )

    def pump(self, timeout: float) -> None:
        try:
            data = self.child.read_nonblocking(65536, timeout=timeout)
        except pexpect.TIMEOUT:
            return
        # A synchronized update is shown when it ends; track whether one is open.
        last_begin, last_end = data.rfind(BEGIN_SYNC), data.rfind(END_SYNC)
        if last_begin > last_end:
            self.in_sync = True
        elif last_end > last_begin:
            self.in_sync = False
        self.stream.feed(data)

    def lines(self) -> list[str]:
        return [line.rstrip() for line in self.screen.display]

    def editor_and_footer(self) -> tuple[str | None, bool]:
        """The editor's text (None when its two rules are not on screen) and whether the
        footer (the model's name) is."""
        lines = self.lines()
        rules = [i for i, line in enumerate(lines) if len(line) >= COLUMNS - 2 and set(line) == {"─"}]
        if len(rules) < 2:
            return None, any("fake-model" in line for line in lines)
        top, bottom = rules[-2], rules[-1]
        footer = any("fake-model" in line for line in lines[bottom + 1 : bottom + 5])
        return "".join(line.strip() for line in lines[top + 1 : bottom]), footer

    def wait(self, condition: object, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():  # type: ignore[operator]
            if time.monotonic() > deadline:
                raise TimeoutError("\n".join(self.lines()))
            self.pump(0.02)

    def close(self) -> None:
        self.child.terminate(force=True)


def measure(agent: Agent, server: BenchServer, cwd: Path, keys: int) -> Result:
    result = Result(agent.name)
    term = EmulatedTerminal(agent, cwd)
    try:
        term.wait(lambda: term.editor_and_footer() == ("", True))
        text = reply_text()
        server.script({"reply": {"content": text, "chunk_size": 6}, "latency": 0.004})
        term.child.send("go")
        term.wait(lambda: term.editor_and_footer()[0] == "go")
        term.child.send("\r")
        term.wait(lambda: "Paragraph 01" in "\n".join(term.lines()))
        typed = ""
        next_sample = time.monotonic()
        letters = "abcdefghijklmnopqrstuvwxyz"
        while "End of 40." not in "\n".join(term.lines()):
            if len(typed) < keys:
                typed += letters[len(typed) % len(letters)]
                term.child.send(typed[-1])
                sent = time.monotonic()
                while True:
                    term.pump(0.001)
                    now = time.monotonic()
                    if not term.in_sync:
                        shown, footer = term.editor_and_footer()
                        if now >= next_sample:
                            result.samples += 1
                            result.missing += shown is None or not footer
                            next_sample = now + SAMPLE_S
                        if shown is not None and shown.endswith(typed):
                            result.latencies_ms.append((now - sent) * 1000)
                            break
                    if now - sent > 5:
                        raise TimeoutError(f"{agent.name}: the key {typed[-1]!r} never showed")
                # Keys about 60 ms apart, as a fast typist's.
                pause_until = time.monotonic() + 0.06
                while time.monotonic() < pause_until:
                    term.pump(0.005)
                    if not term.in_sync and time.monotonic() >= next_sample:
                        shown, footer = term.editor_and_footer()
                        result.samples += 1
                        result.missing += shown is None or not footer
                        next_sample = time.monotonic() + SAMPLE_S
            else:
                term.pump(0.01)
                if not term.in_sync and time.monotonic() >= next_sample:
                    shown, footer = term.editor_and_footer()
                    result.samples += 1
                    result.missing += shown is None or not footer
                    next_sample = time.monotonic() + SAMPLE_S
        server.settle()
    finally:
        term.close()
    return result


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def report(results: list[Result]) -> None:
    print(
        f"{'agent':<10} {'keys':>5} {'median ms':>10} {'p90 ms':>8} {'max ms':>8}"
        "  frames without editor/footer"
    )
    for r in results:
        lat = r.latencies_ms
        print(
            f"{r.name:<10} {len(lat):>5} {statistics.median(lat):>10.1f} {_percentile(lat, 0.9):>8.1f}"
            f" {max(lat):>8.1f}  {r.missing} of {r.samples}"
        )
    if len(results) == 2:
        host, pi = results
        ratio_median = statistics.median(host.latencies_ms) / statistics.median(pi.latencies_ms)
        ratio_p90 = _percentile(host.latencies_ms, 0.9) / _percentile(pi.latencies_ms, 0.9)
        print(f"pi-host / pi: median {ratio_median:.2f}x, p90 {ratio_p90:.2f}x (target: at most 1.3x)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--keys", type=int, default=40, help="keys typed while the reply streams")
    parser.add_argument("--no-pi", action="store_true", help="measure pi-host only")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-ui-") as scratch:
        root = Path(scratch)
        agents = [pi_host_agent(root / "pi-host-agent", root / "cache")]
        cli = None if args.no_pi else installed_pi_cli()
        if cli is not None:
            agents.append(pi_agent(root / "pi-agent", cli))
        elif not args.no_pi:
            print("pi 0.73 not found (see tests/pi_reference.py); measuring pi-host only", file=sys.stderr)

        def point_agents_at(base_url: str) -> None:
            for agent in agents:
                write_models_json(agent.agent_dir, base_url)

        server = BenchServer(point_agents_at)
        point_agents_at(server.base_url)
        try:
            results = []
            for agent in agents:
                cwd = root / f"project-{agent.name}"
                cwd.mkdir()
                results.append(measure(agent, server, cwd, args.keys))
        finally:
            server.close()
    report(results)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
