"""pi-mcp as a plugin: its entry points, its hooks against the host's specs, its imports."""

from __future__ import annotations

import subprocess
import sys

import pi_mcp

from pi_host.testing import assert_entry_point, assert_hooks_match_specs, assert_public_imports_only


def test_the_entry_point_names_the_package() -> None:
    assert_entry_point("mcp", pi_mcp, distribution="pi-mcp")


def test_every_hook_implementation_matches_a_spec() -> None:
    hooks = {
        "pi_before_agent_start",
        "pi_register_commands",
        "pi_register_settings",
        "pi_session_shutdown",
        "pi_session_start",
    }
    assert_hooks_match_specs(pi_mcp, hooks, name="mcp")


def test_imports_only_the_public_pi_host_api() -> None:
    assert_public_imports_only(pi_mcp)


def test_public_names_exist() -> None:
    assert all(hasattr(pi_mcp, name) for name in pi_mcp.__all__)


def test_importing_the_plugin_leaves_the_mcp_sdk_unloaded() -> None:
    # Installed but unused, pi-mcp must cost pi-host's start-up nothing.
    code = "import sys, pi_mcp; print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_importing_the_plugin_leaves_the_agent_layer_and_asyncio_unloaded() -> None:
    # `pi-host --help` imports every installed plugin: what a session needs loads with one.
    code = (
        "import sys, pi_mcp; "
        "print(sorted(m for m in sys.modules if m.startswith(('pi_host.agent', 'asyncio'))))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
