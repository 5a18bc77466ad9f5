"""What pi-guard and pi-shell-hooks add to one tool call.

Run with ``uv run python bench/bench_guard.py [--calls N] [--spawns N]``.

In-process (pi-guard), median CPU microseconds per call over several rounds, with a realistic rule
set in ``settings.json`` (12 deny, 4 ask, 12 allow rules):

- *decide*: ``Policy.decide`` alone for an allowed ``read`` (path resolution with
  ``realpath``, rule matching);
- *hook read*: the whole ``pi_tool_call`` implementation for an allowed ``read`` (argument
  validation through the tool, resolution, decision), called directly;
- *hook bash*: the same for ``bash "git status"`` allowed by a rule (command parsing);
- *dispatch*: ``Dispatcher.tool_call`` with the guard registered, as the runtime calls it.

Shell hooks (pi-shell-hooks), median and 90th percentile milliseconds per call:

- *exec true*: ``run_command(["true"])`` — the floor: start a process in its own group, feed
  it the event, wait, collect output;
- *bash hook*: a bash script that reads the event and exits 0;
- *python hook*: a Python script that parses the event and prints a JSON answer;
- *plugin tool_call*: ``pi_shell_hooks.pi_tool_call`` with one bash hook configured: payload,
  process, answer.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import stat
import statistics
import sys
import tempfile
import time
import types
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pi_guard
import pi_shell_hooks
import pi_tools_fs

from pi_host.hookspecs import Stash
from pi_host.plugin import Dispatcher, PluginManager

RULES = {
    "deny": [
        "read(**/.env)",
        "read(**/.env.*)",
        "read(~/.ssh/**)",
        "read(~/.aws/**)",
        "read(*.pem)",
        "read(*.key)",
        "edit(/etc)",
        "edit(/usr)",
        "edit(.git/**)",
        "bash(rm -rf:*)",
        "bash(curl:*)",
        "bash(sudo:*)",
    ],
    "ask": ["bash(git push:*)", "bash(npm publish:*)", "edit(package.json)", "edit(pyproject.toml)"],
    "allow": [
        "bash(git status)",
        "bash(git diff:*)",
        "bash(git log:*)",
        "bash(ls:*)",
        "bash(npm test:*)",
        "bash(pytest:*)",
        "bash(uv run pytest:*)",
        "edit(src/**)",
        "edit(tests/**)",
        "edit(docs/**)",
        "read",
        "bash(make test)",
    ],
}


class _UI:
    def notify(self, message: str, level: str = "info") -> None:
        pass

    def set_status(self, key: str, text: str | None) -> None:
        pass


def _ctx(cwd: str) -> Any:
    session = types.SimpleNamespace(session_id="bench", session_file=None)
    tools = list(pi_tools_fs.TOOLS)
    return types.SimpleNamespace(
        cwd=cwd,
        mode="print",
        has_ui=False,
        ui=_UI(),
        stash=Stash(),
        session_manager=session,
        is_project_trusted=lambda: False,
        get_flag=lambda name: None,
        get_all_tools=lambda: tools,
        append_entry=lambda custom_type, data=None: None,
        abort=lambda: None,
    )


def _median_us(run: Callable[[], Awaitable[None]], calls: int, rounds: int = 5) -> float:
    async def one_round() -> float:
        # CPU time of this process: other load on the machine does not count
        started = time.process_time()
        for _ in range(calls):
            await run()
        return (time.process_time() - started) / calls

    return statistics.median(anyio.run(one_round) for _ in range(rounds)) * 1e6


def bench_guard(project: str, calls: int) -> dict[str, float]:
    target = pi_guard.targets_of("read", {"path": "src/app.py"}, project)
    ctx = _ctx(project)
    state = pi_guard.guard_state(ctx)
    policy = state.policy
    assert policy.decide("read", target).decision == "allow"

    async def decide() -> None:
        policy.decide("read", pi_guard.targets_of("read", {"path": "src/app.py"}, project))

    async def hook_read() -> None:
        assert await pi_guard.pi_tool_call("c1", "read", {"path": "src/app.py"}, ctx) is None

    async def hook_bash() -> None:
        assert await pi_guard.pi_tool_call("c1", "bash", {"command": "git status"}, ctx) is None

    pm = PluginManager()
    pm.register(pi_guard, name="guard")
    dispatcher = Dispatcher(pm, trace=False)

    async def dispatch() -> None:
        await dispatcher.tool_call(tool_call_id="c1", tool_name="read", input={"path": "src/app.py"}, ctx=ctx)

    return {
        "decide": _median_us(decide, calls),
        "hook read": _median_us(hook_read, calls),
        "hook bash": _median_us(hook_bash, calls),
        "dispatch": _median_us(dispatch, calls),
    }


def _script(directory: Path, name: str, text: str) -> str:
    path = directory / name
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def bench_shell_hooks(project: str, spawns: int) -> dict[str, tuple[float, float]]:
    hooks_dir = Path(project) / "hooks"
    hooks_dir.mkdir()
    bash_hook = _script(hooks_dir, "ok.sh", "#!/bin/bash\ncat > /dev/null\nexit 0\n")
    python_hook = _script(
        hooks_dir,
        "ok.py",
        f"#!{sys.executable}\nimport json, sys\njson.load(sys.stdin)\n"
        'print(json.dumps({"hookSpecificOutput": {"permissionDecision": "allow"}}))\n',
    )
    payload = json.dumps({"tool_name": "bash", "tool_input": {"command": "git status"}}).encode()
    true = shutil.which("true") or "/bin/true"

    ctx = _ctx(project)
    config = pi_shell_hooks.HookConfig()
    pi_shell_hooks.parse_hooks(
        {"tool_call": [{"matcher": "bash", "hooks": [{"command": bash_hook}]}]}, "global", "bench", config
    )
    ctx.stash[pi_shell_hooks._plugin._STATE] = pi_shell_hooks.ShellHooksState(config)

    cases: dict[str, Callable[[], Awaitable[Any]]] = {
        "exec true": lambda: pi_shell_hooks.run_command([true], payload, cwd=project),
        "bash hook": lambda: pi_shell_hooks.run_command([bash_hook], payload, cwd=project),
        "python hook": lambda: pi_shell_hooks.run_command([python_hook], payload, cwd=project),
        "plugin tool_call": lambda: pi_shell_hooks.pi_tool_call("c1", "bash", {"command": "git status"}, ctx),
    }
    results: dict[str, tuple[float, float]] = {}
    for name, run in cases.items():

        async def measure(run: Callable[[], Awaitable[Any]] = run) -> list[float]:
            await run()  # warm-up
            times = []
            for _ in range(spawns):
                started = time.perf_counter()
                await run()
                times.append((time.perf_counter() - started) * 1000)
            return times

        times = anyio.run(measure)
        results[name] = (statistics.median(times), statistics.quantiles(times, n=10)[-1])
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="in-process calls per round")
    parser.add_argument("--spawns", type=int, default=100, help="hook processes per case")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        agent = Path(temp) / "agent"
        project = Path(temp) / "project"
        (project / "src").mkdir(parents=True)
        (project / "src" / "app.py").write_text("print('hi')\n")
        agent.mkdir()
        (agent / "settings.json").write_text(json.dumps({"permissions": RULES}))
        os.environ["PI_HOST_DIR"] = str(agent)
        guard = bench_guard(str(project), args.calls)
        shell = bench_shell_hooks(str(project), args.spawns)
    print("pi-guard, in-process allow decision (median CPU µs per call)")
    for name, value in guard.items():
        print(f"  {name:<18} {value:8.1f} µs")
    print("pi-shell-hooks, one hook process per call (ms: median, p90)")
    for name, (median, p90) in shell.items():
        print(f"  {name:<18} {median:8.2f} ms  {p90:8.2f} ms")


if __name__ == "__main__":
    main()
