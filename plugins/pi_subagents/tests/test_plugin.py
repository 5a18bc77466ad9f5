"""pi-subagents as a plugin: its entry point, its hooks, its imports, its packaging."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pi_subagents

from pi_host.testing import assert_entry_point, assert_hooks_match_specs, assert_public_imports_only

ROOT = Path(__file__).resolve().parents[1]


def test_the_entry_point_names_the_package() -> None:
    assert_entry_point("subagents", pi_subagents, distribution="pi-subagents")


def test_every_hook_implementation_matches_a_spec() -> None:
    hooks = {
        "pi_agent_start",
        "pi_before_agent_start",
        "pi_register_commands",
        "pi_register_rpc_commands",
        "pi_register_settings",
        "pi_register_shortcuts",
        "pi_register_tool_renderers",
        "pi_register_tools",
        "pi_session_start",
    }
    assert_hooks_match_specs(pi_subagents, hooks, name="subagents")


def test_imports_only_the_public_pi_host_api() -> None:
    assert_public_imports_only(pi_subagents)


def test_public_names_exist() -> None:
    assert all(hasattr(pi_subagents, name) for name in pi_subagents.__all__)


def test_is_an_opt_in_workspace_distribution() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == "pi-subagents"
    assert "pi-host-plugin" in project["keywords"]
    root = tomllib.loads((ROOT.parents[1] / "pyproject.toml").read_text())
    assert "pi-subagents" in root["dependency-groups"]["dev"]
    assert "pi-subagents" not in " ".join(root["project"]["optional-dependencies"]["default"])
    assert (ROOT / "LICENSE").is_file() and (ROOT / "README.md").is_file()
