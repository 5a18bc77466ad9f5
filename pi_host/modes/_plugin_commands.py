"""``pi-host <name> ...`` commands that installed plugins add (entry-point group ``pi_host.commands``).

A distribution declares ``[project.entry-points."pi_host.commands"] mcp = "pi_mcp.cli:main"``
and ``pi-host mcp list`` calls ``main(["list"])``, which returns the exit status. No session,
no plugin loading: the command runs on its own. Built-in subcommands (``plugins``) win, and
only a first argument that looks like a command name is looked up, so prompts are untouched.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["COMMANDS_GROUP", "find_plugin_command", "run_plugin_command"]

COMMANDS_GROUP = "pi_host.commands"
_WORD = re.compile(r"^[a-z][a-z0-9-]*$")


def find_plugin_command(word: str) -> Any | None:
    """The entry point of an installed command named *word*, or ``None``."""
    if not _WORD.match(word):
        return None
    from importlib.metadata import entry_points

    for entry_point in entry_points(group=COMMANDS_GROUP):
        if entry_point.name == word:
            return entry_point
    return None


def run_plugin_command(entry_point: Any, argv: list[str]) -> int:
    """Load and run the command; a command that fails to load is reported, naming its package."""
    try:
        command: Callable[[list[str]], int | None] = entry_point.load()
    except Exception as exc:
        package = getattr(getattr(entry_point, "dist", None), "name", entry_point.value)
        print(
            f"Error: the command {entry_point.name!r} of {package} could not be loaded ({exc}); "
            f"reinstall or uninstall {package}",
            file=sys.stderr,
        )
        return 1
    status = command(argv)
    return 0 if status is None else int(status)
