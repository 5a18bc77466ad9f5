"""The plugin as a distribution: its entry point, its hooks, and the API it may import."""

from __future__ import annotations

import pi_compaction

from pi_host.testing import assert_entry_point, assert_hooks_match_specs, assert_public_imports_only


def test_the_entry_point_names_the_package() -> None:
    assert_entry_point("compaction", pi_compaction, distribution="pi-compaction")


def test_hooks_match_their_specs_and_the_defaults_come_last() -> None:
    hooks = {
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
    manager = assert_hooks_match_specs(pi_compaction, hooks, name="compaction")
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


def test_imports_only_the_public_pi_host_api() -> None:
    assert_public_imports_only(pi_compaction)
