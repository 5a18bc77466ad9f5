"""``pi-host mcp list [--json]``: the configured servers, started once, outside a session.

Every server is started concurrently, asked for its tools and stopped. The exit status is
1 when a server could not start, so the command doubles as a health check.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from ._config import load_config
from ._settings import McpSettings

__all__ = ["main"]

_USAGE = "Usage: pi-host mcp list [--json]   (start each configured MCP server once and list its tools)"


def _trusted(cwd: str, agent: str) -> bool:
    from pi_host import ProjectTrustStore, TrustStoreError, has_trust_requiring_resources

    if not has_trust_requiring_resources(cwd):
        return True
    try:
        entry = ProjectTrustStore(agent).get_entry(cwd)
    except TrustStoreError as exc:
        print(f"pi-mcp: {exc}", file=sys.stderr)
        return False
    return bool(entry and entry.trusted)


def main(argv: list[str]) -> int:
    """Run ``pi-host mcp ARGS``; returns the exit status."""
    if argv[:1] != ["list"] or any(arg != "--json" for arg in argv[1:]):
        print(_USAGE, file=sys.stderr)
        return 2
    # Imported here: the command is the only user, and the plugin's import stays light.
    from pydantic import ValidationError

    from pi_host import SettingsManager, agent_dir

    cwd, agent = os.getcwd(), str(agent_dir())
    trusted = _trusted(cwd, agent)
    section = SettingsManager.load(cwd, agent, project_trusted=trusted).merged().get("mcp", {})
    try:
        settings = McpSettings.model_validate(section if isinstance(section, dict) else {})
    except ValidationError as exc:
        print(f"pi-mcp: settings.json: mcp: {exc.errors()[0]['msg']}; using the defaults", file=sys.stderr)
        settings = McpSettings()
    loaded = load_config(agent_dir=agent, cwd=cwd, trusted=trusted, settings_servers=settings.servers)

    import anyio

    from ._manager import McpManager

    manager = McpManager(
        config=loaded, settings=settings, cwd=cwd, retry_hint="then run `pi-host mcp list` again"
    )

    found: dict[str, Any] = {}

    async def probe() -> None:
        try:
            await manager.start_all()
            found["report"], found["summaries"] = manager.report(), manager.summaries()
        finally:
            await manager.stop_all()

    anyio.run(probe)
    if "--json" in argv:
        servers = [vars(summary) for summary in found["summaries"]]
        print(json.dumps({"servers": servers, "problems": [str(p) for p in loaded.problems]}, indent=2))
    else:
        print(found["report"])
    return 1 if any(c.error for c in manager.connections.values()) else 0
