"""pi-guard as a plugin: its entry point, its hooks against the host's specs, its imports."""

from __future__ import annotations

import ast
import importlib.metadata
from pathlib import Path

import pi_guard
import pluggy

from pi_host.hookspecs import PROJECT_NAME, SPEC_MODULES

PACKAGE_DIR = Path(pi_guard.__file__).parent


def test_the_entry_point_names_the_package() -> None:
    (entry_point,) = [
        ep for ep in importlib.metadata.entry_points(group="pi_host.plugins") if ep.name == "guard"
    ]
    assert entry_point.value == "pi_guard"
    assert entry_point.dist is not None and entry_point.dist.name == "pi-guard"


def test_every_hook_implementation_matches_a_spec() -> None:
    manager = pluggy.PluginManager(PROJECT_NAME)
    for module in SPEC_MODULES:
        manager.add_hookspecs(module)
    manager.register(pi_guard, name="guard")
    manager.check_pending()
    hooks = {caller.name for caller in manager.get_hookcallers(pi_guard) or []}
    assert hooks == {
        "pi_addhooks",
        "pi_register_flags",
        "pi_register_commands",
        "pi_session_start",
        "pi_tool_call",
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
    assert all(hasattr(pi_guard, name) for name in pi_guard.__all__)


def test_the_veto_runs_last() -> None:
    manager = pluggy.PluginManager(PROJECT_NAME)
    for module in SPEC_MODULES:
        manager.add_hookspecs(module)
    manager.register(pi_guard, name="guard")
    (implementation,) = manager.hook.pi_tool_call.get_hookimpls()
    assert implementation.trylast
