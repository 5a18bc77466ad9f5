"""pi-shell-hooks as a plugin: its entry point, its hooks against the host's specs, its imports."""

from __future__ import annotations

import ast
import importlib.metadata
from pathlib import Path

import pi_shell_hooks
import pluggy

from pi_host.hookspecs import PROJECT_NAME, SPEC_MODULES

PACKAGE_DIR = Path(pi_shell_hooks.__file__).parent


def test_the_entry_point_names_the_package() -> None:
    (entry_point,) = [
        ep for ep in importlib.metadata.entry_points(group="pi_host.plugins") if ep.name == "shell_hooks"
    ]
    assert entry_point.value == "pi_shell_hooks"
    assert entry_point.dist is not None and entry_point.dist.name == "pi-shell-hooks"


def test_every_hook_implementation_matches_a_spec() -> None:
    manager = pluggy.PluginManager(PROJECT_NAME)
    for module in SPEC_MODULES:
        manager.add_hookspecs(module)
    manager.register(pi_shell_hooks, name="shell_hooks")
    manager.check_pending()
    hooks = {caller.name for caller in manager.get_hookcallers(pi_shell_hooks) or []}
    assert hooks == {
        "pi_input",
        "pi_before_agent_start",
        "pi_tool_call",
        "pi_tool_result",
        "pi_turn_end",
        "pi_agent_end",
        "pi_session_start",
        "pi_session_shutdown",
        "pi_session_before_compact",
    }


def test_imports_only_the_public_pi_host_api() -> None:
    offending = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                parts = name.split(".")
                if parts[0] == "pi_host" and any(part.startswith("_") for part in parts[1:]):
                    offending.append(f"{path.name}: {name}")
    assert offending == []


def test_public_names_exist() -> None:
    assert all(hasattr(pi_shell_hooks, name) for name in pi_shell_hooks.__all__)
