"""``pi-host mcp list``: the servers started once outside a session, through the real command."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

PI_HOST = shutil.which("pi-host") or str(Path(sys.executable).parent / "pi-host")


def test_mcp_list_reports_state_tools_tokens_and_errors(tmp_path: Path, demo: Any) -> None:
    agent, project = tmp_path / "agent", tmp_path / "project"
    agent.mkdir()
    project.mkdir()
    servers = {"demo": demo.stdio("listed"), "ghost": {"command": str(tmp_path / "missing")}}
    (agent / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": demo.stdio("proj")}}))
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PI_HOST")}, "PI_HOST_DIR": str(agent)}
    env["HOME"] = str(tmp_path)

    result = subprocess.run(
        [PI_HOST, "mcp", "list"], cwd=project, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1  # a server could not start
    assert "demo (stdio): ready, 10/10 tools offered, 1 prompts, ~" in result.stdout
    assert "ghost (stdio): failed" in result.stdout and 'MCP server "ghost" could not start' in result.stdout
    assert "then run `pi-host mcp list` again" in result.stdout and "/mcp restart" not in result.stdout
    assert f"ignored {project / '.mcp.json'}: the project is not trusted" in result.stdout
    assert "MCP tool schemas: ~" in result.stdout

    as_json = subprocess.run(
        [PI_HOST, "mcp", "list", "--json"], cwd=project, env=env, capture_output=True, text=True, timeout=60
    )
    data = json.loads(as_json.stdout)
    demo_row = next(s for s in data["servers"] if s["name"] == "demo")
    assert demo_row["tools"] == 10 and demo_row["schema_tokens"] > 0


def test_unknown_mcp_arguments_print_the_usage() -> None:
    result = subprocess.run([PI_HOST, "mcp", "frobnicate"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "Usage: pi-host mcp list" in result.stderr


def test_plugins_list_shows_mcp_as_an_installed_tier_plugin(tmp_path: Path) -> None:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PI_HOST")}, "HOME": str(tmp_path)}
    env["PI_HOST_DIR"] = str(tmp_path / "agent")
    listed = subprocess.run(
        [PI_HOST, "plugins", "list"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert listed.returncode == 0, listed.stderr
    (line,) = [text for text in listed.stdout.splitlines() if text.startswith("mcp (pi-mcp ")]
    assert line.endswith("[installed, enabled]")
    as_json = subprocess.run(
        [PI_HOST, "plugins", "list", "--json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    (row,) = [p for p in json.loads(as_json.stdout) if p["name"] == "mcp"]
    assert (row["distribution"], row["tier"], row["status"]) == ("pi-mcp", "installed", "enabled")
    assert "pi_session_start" in row["hooks"]
