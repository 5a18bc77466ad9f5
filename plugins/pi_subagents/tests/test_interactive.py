"""The terminal UI in a real pseudo-terminal: a running child is a block showing its current
tool, ``/agents`` lists it while it runs, and Escape stops it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.interactive_support.terminal import CTRL_D, ENTER, ESCAPE, Terminal
from tests.pi_reference import PI_HOST

ALT_S = "\x1bs"


def test_a_running_child_shows_its_current_tool_is_listed_and_escape_stops_it(tmp_path: Path) -> None:
    # Every host replays the faux script from its start: the parent's first reply starts a
    # child and runs a short bash; the child's first reply calls task (which it lacks) and a
    # long bash, so it is still running that tool when the screen is read.
    first = {
        "toolCalls": [
            {"name": "task", "arguments": {"description": "count the files", "prompt": "Count the files."}},
            {"name": "bash", "arguments": {"command": "sleep 0.1; sleep 30"}},
        ]
    }
    script = tmp_path / "faux.json"
    script.write_text(json.dumps([first, {"text": "Stopped as asked."}]))
    project = tmp_path / "project"
    project.mkdir()
    env = {
        "PI_HOST_DIR": str(tmp_path / "agent"),
        "PI_HOST_FAUX_SCRIPT": str(script),
        "PI_HOST_PLUGINS": "subagents,bash",
        "HOME": str(tmp_path),
        "ANTHROPIC_API_KEY": "",
    }
    term = Terminal([PI_HOST, "--provider", "faux"], cwd=project, env=env, rows=40, columns=110)
    try:
        term.wait_for("(auto)", timeout=60)
        term.submit("Count the files.")
        term.wait_for("task general-purpose  count the files", timeout=30)
        term.wait_for("▸ bash sleep 0.1; sleep 30", timeout=30)
        term.submit("/agents")  # plugin commands run while the agent works
        term.wait_for("general-purpose: count the files - bash sleep 0.1; sleep 30, turn 1", timeout=30)
        term.send(ESCAPE)
        term.wait_for("Sub-agent 'general-purpose' was aborted", timeout=30)
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()


def test_alt_s_stops_the_chosen_child_and_the_parent_goes_on(tmp_path: Path) -> None:
    # The parent starts a child and runs a bash that waits for the file GO; the child (the
    # same script) calls task, which it lacks, and the same bash. Alt+S stops the child; then
    # GO appears, the parent's bash ends and the parent answers.
    go = tmp_path / "GO"
    wait = {"name": "bash", "arguments": {"command": f"while [ ! -e {go} ]; do sleep 0.05; done"}}
    first = {
        "toolCalls": [
            {"name": "task", "arguments": {"description": "count the files", "prompt": "Count the files."}},
            wait,
        ]
    }
    script = tmp_path / "faux.json"
    script.write_text(json.dumps([first, {"text": "The parent went on."}]))
    project = tmp_path / "project"
    project.mkdir()
    env = {
        "PI_HOST_DIR": str(tmp_path / "agent"),
        "PI_HOST_FAUX_SCRIPT": str(script),
        "PI_HOST_PLUGINS": "subagents,bash",
        "HOME": str(tmp_path),
        "ANTHROPIC_API_KEY": "",
    }
    term = Terminal([PI_HOST, "--provider", "faux"], cwd=project, env=env, rows=40, columns=110)
    try:
        term.wait_for("(auto)", timeout=60)
        term.submit("Count the files.")
        term.wait_for("▸ bash while [ ! -e", timeout=30)
        term.send(ALT_S)
        term.wait_for("Stop which sub-agent?", timeout=30)
        term.wait_for("general-purpose: count the files - bash while", timeout=30)
        term.send(ENTER)
        term.wait_for("was aborted by the user", timeout=30)
        go.write_text("")
        term.wait_for("The parent went on.", timeout=30)
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()
