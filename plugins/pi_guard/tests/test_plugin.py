"""pi-guard as a plugin: its entry point, its hooks against the host's specs, its imports."""

from __future__ import annotations

import pi_guard

from pi_host.testing import assert_entry_point, assert_hooks_match_specs, assert_public_imports_only


def test_the_entry_point_names_the_package() -> None:
    assert_entry_point("guard", pi_guard, distribution="pi-guard")


def test_every_hook_implementation_matches_a_spec() -> None:
    hooks = {
        "pi_register_flags",
        "pi_register_commands",
        "pi_session_start",
        "pi_tool_call",
    }
    assert_hooks_match_specs(pi_guard, hooks, name="guard")


def test_imports_only_the_public_pi_host_api() -> None:
    assert_public_imports_only(pi_guard)


def test_public_names_exist() -> None:
    assert all(hasattr(pi_guard, name) for name in pi_guard.__all__)


def test_the_veto_runs_last() -> None:
    manager = assert_hooks_match_specs(pi_guard, name="guard")
    (implementation,) = manager.hook.pi_tool_call.get_hookimpls()
    assert implementation.trylast
