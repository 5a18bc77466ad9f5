"""Run the interactive mode on a scripted fake session (started by the pty tests).

Usage: ``python launch.py SCENARIO.json`` where the scenario is ``{"script": [...replies...],
"initial": [...prompts...]}``. The working directory becomes the session's cwd.
"""

from __future__ import annotations

import json
import os
import sys

import anyio

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_session import FakeInteractiveSession

from pi_host.modes._interactive import run_interactive


def main() -> None:
    with open(sys.argv[1]) as handle:
        scenario = json.load(handle)
    session = FakeInteractiveSession(
        cwd=os.getcwd(), script=scenario.get("script", []), settings=scenario.get("settings")
    )
    anyio.run(
        lambda: run_interactive(session, initial_messages=scenario.get("initial", []), version="0.0-test")
    )


if __name__ == "__main__":
    main()
