"""pi-shell-hooks as a plugin: its entry point, its hooks against the host's specs, its imports."""

from __future__ import annotations

import pi_shell_hooks

from pi_host.testing import assert_entry_point, assert_hooks_match_specs, assert_public_imports_only


def test_the_entry_point_names_the_package() -> None:
    assert_entry_point("shell_hooks", pi_shell_hooks, distribution="pi-shell-hooks")


def test_every_hook_implementation_matches_a_spec() -> None:
    hooks = {
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
    assert_hooks_match_specs(pi_shell_hooks, hooks, name="shell_hooks")


def test_imports_only_the_public_pi_host_api() -> None:
    assert_public_imports_only(pi_shell_hooks)


def test_public_names_exist() -> None:
    assert all(hasattr(pi_shell_hooks, name) for name in pi_shell_hooks.__all__)
