"""Reading servers from Claude Code's .mcp.json format: sources, trust, expansion, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pi_mcp import (
    McpSettings,
    expand,
    is_offered,
    load_config,
    prompt_arguments,
    tool_name,
    tool_timeout_seconds,
)


def write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    agent, project = tmp_path / "agent", tmp_path / "project"
    agent.mkdir()
    project.mkdir()
    return agent, project


def test_sources_in_order_later_names_win(dirs: tuple[Path, Path]) -> None:
    agent, project = dirs
    write(agent / "mcp.json", {"mcpServers": {"a": {"command": "user-a"}, "b": {"command": "user-b"}}})
    write(project / ".mcp.json", {"mcpServers": {"b": {"command": "project-b"}}})
    write(
        project / ".pi" / "mcp.json", {"mcpServers": {"c": {"type": "http", "url": "http://127.0.0.1:1/mcp"}}}
    )
    loaded = load_config(
        agent_dir=agent,
        cwd=project,
        trusted=True,
        settings_servers={"a": {"command": "settings-a"}},
        environ={},
    )
    assert loaded.problems == []
    assert {name: s.command or s.url for name, s in loaded.servers.items()} == {
        "a": "settings-a",
        "b": "project-b",
        "c": "http://127.0.0.1:1/mcp",
    }
    assert loaded.servers["c"].transport == "http"
    assert loaded.servers["b"].source == str(project / ".mcp.json")


def test_untrusted_project_files_are_ignored_and_named(dirs: tuple[Path, Path]) -> None:
    agent, project = dirs
    write(project / ".mcp.json", {"mcpServers": {"evil": {"command": "rm"}}})
    loaded = load_config(agent_dir=agent, cwd=project, trusted=False, environ={})
    assert loaded.servers == {}
    assert loaded.untrusted_files == [str(project / ".mcp.json")]


def test_variables_expand_in_every_field_as_claude_code_does(dirs: tuple[Path, Path]) -> None:
    agent, project = dirs
    write(
        agent / "mcp.json",
        {
            "mcpServers": {
                "s": {
                    "command": "${BIN}/srv",
                    "args": ["--root", "${ROOT:-/srv}"],
                    "env": {"TOKEN": "${TOKEN}"},
                },
                "h": {
                    "type": "sse",
                    "url": "http://${HOST:-127.0.0.1}:8000/sse",
                    "headers": {"Authorization": "Bearer ${TOKEN}"},
                },
            }
        },
    )
    loaded = load_config(agent_dir=agent, cwd=project, trusted=True, environ={"BIN": "/opt", "TOKEN": "t0k"})
    s, h = loaded.servers["s"], loaded.servers["h"]
    assert (s.command, s.args, dict(s.env)) == ("/opt/srv", ("--root", "/srv"), {"TOKEN": "t0k"})
    assert (h.url, dict(h.headers)) == ("http://127.0.0.1:8000/sse", {"Authorization": "Bearer t0k"})
    assert expand("${A:-x}", "k", {"A": ""}) == "x"


def test_malformed_entries_name_file_and_key_and_the_rest_load(dirs: tuple[Path, Path]) -> None:
    agent, project = dirs
    write(
        agent / "mcp.json",
        {
            "mcpServers": {
                "good": {"command": "ok"},
                "nocmd": {"args": ["x"]},
                "badargs": {"command": "x", "args": "not-a-list"},
                "badtype": {"type": "ftp", "url": "ftp://x"},
                "unset": {"command": "${MISSING_VAR}"},
            }
        },
    )
    write(project / ".mcp.json", "{not json")
    loaded = load_config(agent_dir=agent, cwd=project, trusted=True, environ={})
    assert list(loaded.servers) == ["good"]
    text = "\n".join(str(p) for p in loaded.problems)
    assert f"{agent / 'mcp.json'}: mcpServers.nocmd:" in text
    assert "mcpServers.badargs.args: must be a list of strings" in text
    assert 'mcpServers.badtype.type: must be "stdio", "http" or "sse"' in text
    assert "environment variable MISSING_VAR is not set" in text
    assert f"{project / '.mcp.json'}: (file): is not valid JSON" in text


def test_allow_and_deny_lists(dirs: tuple[Path, Path]) -> None:
    agent, project = dirs
    write(
        agent / "mcp.json",
        {
            "mcpServers": {
                "s": {"command": "x", "allowedTools": ["read_*", "list"], "disabledTools": ["read_secret"]}
            }
        },
    )
    server = load_config(agent_dir=agent, cwd=project, trusted=True, environ={}).servers["s"]
    assert [t for t in ("read_file", "read_secret", "list", "write") if is_offered(server, t)] == [
        "read_file",
        "list",
    ]


def test_names_timeouts_and_prompt_arguments() -> None:
    assert tool_name("my server", "do.it") == "mcp__my_server__do_it"
    assert len(tool_name("s" * 40, "t" * 40)) == 64
    settings = McpSettings(tool_timeout_ms=1500)
    assert tool_timeout_seconds(settings, {}) == (1.5, "mcp.toolTimeoutMs")
    assert tool_timeout_seconds(settings, {"MCP_TOOL_TIMEOUT": "200"}) == (0.2, "MCP_TOOL_TIMEOUT")
    assert tool_timeout_seconds(settings, {"MCP_TOOL_TIMEOUT": "soon"})[0] == 1.5
    assert prompt_arguments(["path", "focus"], "a.py look at errors") == {
        "path": "a.py",
        "focus": "look at errors",
    }
    assert prompt_arguments(["path"], "path=b.py") == {"path": "b.py"}
