"""The plugin as a distribution: its entry point, its hooks, and the API it may import."""

from __future__ import annotations

import subprocess
import sys

import pi_compaction

from pi_host.testing import assert_entry_point, assert_hooks_match_specs, assert_public_imports_only


def test_the_entry_point_names_the_package() -> None:
    assert_entry_point("compaction", pi_compaction, distribution="pi-compaction")


def test_hooks_match_their_specs_and_the_defaults_come_last() -> None:
    hooks = {
        "pi_addhooks",
        "pi_after_agent_run",
        "pi_before_prompt",
        "pi_compaction_prepare",
        "pi_message_end",
        "pi_message_start",
        "pi_prepare_next_turn",
        "pi_register_commands",
        "pi_register_settings",
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


def test_loading_the_plugin_stays_light() -> None:
    # --help imports plugin modules only to read their flags; a session imports the
    # preparation and summary code when it first compacts.
    script = (
        "import sys\n"
        "import pi_compaction\n"
        "from pi_host.plugin import PluginManager\n"
        "PluginManager().register(pi_compaction, name='compaction')\n"
        "print('\\n'.join(sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    modules = set(result.stdout.split())
    assert {name for name in modules if name.startswith("pi_compaction")} == {
        "pi_compaction",
        "pi_compaction._plugin",
        "pi_compaction.hookspecs",
        "pi_compaction._run",
        "pi_compaction._trigger",
    }
    assert "pi_host.runtime" not in modules
    assert "pi_host.session" not in modules


def test_pi_compaction_prepare_is_the_plugins_own_hook() -> None:
    # The host declares no compaction hook; registering pi-compaction adds it, and a plugin
    # registered before it (an optional implementation) is checked against it then.
    from pi_compaction import hookspecs

    from pi_host import hookimpl
    from pi_host.plugin import PluginManager

    manager = PluginManager()
    assert getattr(manager.hook, "pi_compaction_prepare", None) is None

    class EarlyCut:
        @hookimpl(tryfirst=True, optionalhook=True)
        def pi_compaction_prepare(self, branch_entries: object) -> None:
            return None

    manager.register(EarlyCut(), name="early")
    manager.register(pi_compaction, name="compaction")
    caller = manager.hook.pi_compaction_prepare
    assert caller.spec is not None and caller.spec.namespace is hookspecs
    assert [impl.plugin_name for impl in manager.call_order(caller)] == ["early", "compaction"]
    manager.check_pending()
