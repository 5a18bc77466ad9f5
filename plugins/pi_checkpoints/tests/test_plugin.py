"""pi-checkpoints' surface: its entry points, its hooks, and what it imports of pi-host."""

from __future__ import annotations

import importlib.metadata

import pi_checkpoints

from pi_host.testing import assert_entry_point, assert_hooks_match_specs, assert_public_imports_only


def test_the_entry_points_name_the_package_and_the_rewind_command() -> None:
    assert_entry_point("checkpoints", pi_checkpoints, distribution="pi-checkpoints")
    (command,) = [
        ep for ep in importlib.metadata.entry_points(group="pi_host.commands") if ep.name == "rewind"
    ]
    assert command.load() is pi_checkpoints.cli_main


def test_every_hook_matches_its_spec() -> None:
    assert_hooks_match_specs(pi_checkpoints, name="checkpoints")


def test_it_imports_only_the_public_api() -> None:
    assert_public_imports_only(pi_checkpoints)


def test_the_lazy_names_resolve() -> None:
    for name in pi_checkpoints.__all__:
        assert getattr(pi_checkpoints, name) is not None
