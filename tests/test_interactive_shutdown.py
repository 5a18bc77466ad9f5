"""A plugin's ``ctx.shutdown()`` in the terminal UI: pi quits once the agent is idle."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.interactive_support.terminal import Terminal, Terminals

PI_HOST = shutil.which("pi-host") or str(Path(sys.executable).parent / "pi-host")

pytestmark = pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a POSIX pseudo-terminal")

PLUGIN = """\
import os

from pi_host import hookimpl
from pi_host.hookspecs import Command


async def _bye(args, ctx):
    ctx.shutdown()


@hookimpl
def pi_register_commands(register):
    register(Command(name="bye", description="Quit from a plugin", handler=_bye))


@hookimpl
def pi_tool_call(tool_name, input, ctx):
    if tool_name == "bash" and "fatal" in str(input.get("command", "")):
        ctx.shutdown()


@hookimpl
def pi_session_shutdown(reason, ctx):
    with open(os.environ["SHUTDOWN_LOG"], "a", encoding="utf-8") as log:
        log.write(reason + "\\n")
"""


@pytest.fixture
def pi_host(tmp_path: Path) -> Iterator[Any]:
    terminals = Terminals()

    def start(script: list[dict[str, Any]]) -> Terminal:
        (tmp_path / "agent").mkdir(exist_ok=True)
        (tmp_path / "faux.json").write_text(json.dumps(script), encoding="utf-8")
        (tmp_path / "quitter.py").write_text(PLUGIN, encoding="utf-8")
        environment = {
            "PI_HOST_DIR": str(tmp_path / "agent"),
            "PI_HOST_FAUX_SCRIPT": str(tmp_path / "faux.json"),
            "SHUTDOWN_LOG": str(tmp_path / "shutdown.log"),
            "ANTHROPIC_API_KEY": "",
            "OPENAI_API_KEY": "",
        }
        argv = [PI_HOST, "--provider", "faux", "-e", "quitter.py"]
        return terminals.start(argv, cwd=tmp_path, env=environment)

    yield start
    terminals.close()


def shutdowns(tmp_path: Path) -> list[str]:
    log = tmp_path / "shutdown.log"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def test_a_plugin_command_that_asks_for_shutdown_quits_the_ui(pi_host: Any, tmp_path: Path) -> None:
    term: Terminal = pi_host([])
    term.submit("/bye")
    assert term.wait_exit() == 0
    assert shutdowns(tmp_path) == ["quit"]


def test_a_shutdown_asked_for_during_a_run_waits_for_the_run_to_end(pi_host: Any, tmp_path: Path) -> None:
    term: Terminal = pi_host(
        [
            {"toolCalls": [{"name": "bash", "arguments": {"command": "echo fatal"}}]},
            {"text": "Stopping as asked."},
        ]
    )
    term.submit("go")
    assert term.wait_exit() == 0
    assert "Stopping as asked." in term.raw  # the run ended with its last reply first
    assert shutdowns(tmp_path) == ["quit"]
    (session_file,) = (tmp_path / "agent" / "sessions").rglob("*.jsonl")
    entries = [json.loads(line) for line in session_file.read_text(encoding="utf-8").splitlines()]
    roles = [entry["message"]["role"] for entry in entries if entry["type"] == "message"]
    assert roles == ["user", "assistant", "toolResult", "assistant"]
