"""``pi-host plugins list [--all] [--json]``: every plugin with distribution, version, status and hooks.

``plugins info NAME`` is :mod:`._plugin_info`'s.
"""

from __future__ import annotations

import json
import sys

__all__ = ["run_plugins_command"]

_USAGE = "Usage: pi-host plugins list [--all] [--json] | pi-host plugins info NAME [--json]"


def run_plugins_command(argv: list[str]) -> int:
    """Run a ``plugins`` subcommand; returns the exit status."""
    if argv and argv[0] == "info":
        from ._plugin_info import run_plugin_info

        return run_plugin_info(argv[1:])
    if not argv or argv[0] != "list" or any(arg not in ("--json", "--all", "-a") for arg in argv[1:]):
        print(_USAGE, file=sys.stderr)
        return 2
    from pi_host.runtime import Host
    from pi_host.runtime._settings import settings_disabled_plugins

    host = Host.load(disabled=settings_disabled_plugins())
    infos = host.plugin_manager.list_plugins()
    if "--all" not in argv and "-a" not in argv:
        infos = [info for info in infos if info.source != "essential"]
    if "--json" in argv:
        print(json.dumps([info.model_dump(mode="json") for info in infos], indent=2))
        return 0
    if not infos:
        print("No plugins installed. (pi-host plugins list --all shows the essentials.)")
        return 0
    for info in infos:
        version = f" {info.version}" if info.version else ""
        dist = f" ({info.distribution}{version})" if info.distribution else ""
        print(f"{info.name}{dist} [{info.source}, {info.status}]")
        if info.error:
            print(f"    {info.error}")
        if info.hooks:
            print(f"    hooks: {', '.join(info.hooks)}")
    return 0
