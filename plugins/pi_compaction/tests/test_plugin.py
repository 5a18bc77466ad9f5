"""The plugin as a distribution: its entry point, its hooks, and the API it may import."""

from __future__ import annotations

import ast
import importlib.metadata
from pathlib import Path

import pi_compaction
import pluggy

from pi_host.hookspecs import PROJECT_NAME, SPEC_MODULES

PACKAGE_DIR = Path(pi_compaction.__file__).parent


def test_the_entry_point_names_the_package() -> None:
    (entry_point,) = [
        ep for ep in importlib.metadata.entry_points(group="pi_host.plugins") if ep.name == "compaction"
    ]
    assert entry_point.value == "pi_compaction"
    assert entry_point.dist is not None and entry_point.dist.name == "pi-compaction"


def test_hooks_match_their_specs_and_the_defaults_come_last() -> None:
    manager = pluggy.PluginManager(PROJECT_NAME)
    for module in SPEC_MODULES:
        manager.add_hookspecs(module)
    manager.register(pi_compaction, name="compaction")
    manager.check_pending()
    hooks = {caller.name for caller in manager.get_hookcallers(pi_compaction) or []}
    assert hooks == {
        "pi_after_agent_run",
        "pi_before_prompt",
        "pi_compaction_prepare",
        "pi_message_end",
        "pi_message_start",
        "pi_prepare_next_turn",
        "pi_register_commands",
        "pi_session_before_compact",
        "pi_summarize_branch",
    }
    # Every default another plugin may replace answers last.
    for name in (
        "pi_after_agent_run",
        "pi_before_prompt",
        "pi_compaction_prepare",
        "pi_session_before_compact",
        "pi_summarize_branch",
    ):
        (implementation,) = getattr(manager.hook, name).get_hookimpls()
        assert implementation.trylast, name


def _imported_modules(tree: ast.AST) -> list[str]:
    modules: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.append(node.module)
    return modules


def test_imports_only_the_public_pi_host_api() -> None:
    offending = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        for module in _imported_modules(ast.parse(path.read_text(), str(path))):
            parts = module.split(".")
            if parts[0] == "pi_host" and any(part.startswith("_") for part in parts[1:]):
                offending.append(f"{path.name}: {module}")
    assert offending == []
