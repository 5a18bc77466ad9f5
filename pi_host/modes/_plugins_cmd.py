"""``pi-host plugins list [--all] [--json] [-e PATH]``: every plugin with tier, status, hooks, conflicts.

``plugins info NAME`` is :mod:`._plugin_info`'s.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pi_host.runtime import Host

__all__ = ["run_plugins_command"]

_USAGE = "Usage: pi-host plugins list [--all] [--json] [-e PATH]... | pi-host plugins info NAME [--json]"

_TIER_LABELS = {
    "essential": "essential",
    "default": "default",
    "installed": "installed",
    "direct": "registered by code",
    "local": "project-local",
    "extension": "-e",
}


def run_plugins_command(argv: list[str]) -> int:
    """Run a ``plugins`` subcommand; returns the exit status."""
    if argv and argv[0] == "info":
        from ._plugin_info import run_plugin_info

        return run_plugin_info(argv[1:])
    if not argv or argv[0] != "list":
        print(_USAGE, file=sys.stderr)
        return 2
    options: set[str] = set()
    extensions: list[str] = []
    rest = iter(argv[1:])
    for arg in rest:
        if arg in ("-e", "--extension"):
            path = next(rest, None)
            if path is None:
                print(f"Error: {arg} needs a path\n{_USAGE}", file=sys.stderr)
                return 2
            extensions.append(path)
        elif arg in ("--json", "--all", "-a"):
            options.add("--all" if arg == "-a" else arg)
        else:
            print(_USAGE, file=sys.stderr)
            return 2
    from pi_host.runtime import Host
    from pi_host.runtime._settings import settings_disabled_plugins

    host = Host.load(disabled=settings_disabled_plugins(), extensions=extensions)
    _list_project_plugins(host)
    infos = host.plugin_manager.list_plugins()
    if "--all" not in options:
        infos = [info for info in infos if info.source != "essential"]
    if "--json" in options:
        print(json.dumps([info.model_dump(mode="json") for info in infos], indent=2))
        return 0
    if not infos:
        print("No plugins installed. (pi-host plugins list --all shows the essentials.)")
        return 0
    for info in infos:
        version = f" {info.version}" if info.version else ""
        dist = f" ({info.distribution}{version})" if info.distribution else ""
        print(f"{info.name}{dist} [{_TIER_LABELS[info.tier]}, {info.status}]")
        if info.error:
            print(f"    {info.error}")
        if info.hooks:
            print(f"    hooks: {', '.join(info.hooks)}")
        for conflict in info.conflicts:
            print(f"    conflict: {conflict.describe()}")
    return 0


def _list_project_plugins(host: Host) -> None:
    """Record the project's ``.pi/plugins/*.py`` with their trust state, importing none.

    The listing never runs project code: a trusted project's plugins are listed as loaded at
    session start, an untrusted (or undecided) one's as not trusted.
    """
    from pi_host.plugin import local_plugin_files
    from pi_host.resources._trust import ProjectTrust
    from pi_host.session._paths import agent_dir

    cwd = os.getcwd()
    files = local_plugin_files(cwd)
    if not files:
        return
    pm = host.plugin_manager
    root = agent_dir()
    from pi_host.resources import SettingsManager

    settings = SettingsManager.load(cwd, root, project_trusted=False).settings
    trusted = ProjectTrust(root, default=settings.default_project_trust).decision(cwd)
    if trusted is None:
        state = "trust not decided yet: not loaded until the project is trusted"
    else:
        state = "trusted: loaded at session start" if trusted else "project not trusted"
    # Trusted, they are enabled: the session imports them; the listing only does not.
    for path in files:
        if pm.get_plugin(path.stem) is None:
            if trusted:
                pm.record(path.stem, "local", "enabled", distribution=str(path), error=state)
            else:
                pm.record(path.stem, "local", "disabled", distribution=str(path), error=state)
