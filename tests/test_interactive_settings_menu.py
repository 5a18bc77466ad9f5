"""``/settings`` in-process: the rows, what Enter does, and the settings the app itself reads."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from pi_host.modes._interactive._settings_menu import SETTING_ITEMS, PluginSetting
from tests.interactive_support.fake_session import FakeInteractiveSession
from tests.test_interactive_app import CapturingApp, Harness, until


@asynccontextmanager
async def running_with(tmp_path: Path, settings: dict[str, Any]) -> AsyncIterator[Harness]:
    session = FakeInteractiveSession(cwd=str(tmp_path), settings=settings)
    with create_pipe_input() as keys:
        app = CapturingApp(
            session, input=keys, output=DummyOutput(), keybindings_path=tmp_path / "keybindings.json"
        )
        async with anyio.create_task_group() as tg:
            tg.start_soon(app.run)
            await until(lambda: app.app.is_running and app._tg is not None)
            yield Harness(app, keys, session)
            app.request_exit()


def test_rows_are_pi_keys_the_host_reads() -> None:
    assert [item.key for item in SETTING_ITEMS] == [
        "compaction.enabled",
        "steeringMode",
        "followUpMode",
        "hideThinkingBlock",
        "quietStartup",
        "doubleEscapeAction",
        "defaultThinkingLevel",
    ]
    for item in SETTING_ITEMS:
        assert item.default in item.values


async def test_enter_steps_a_value_which_applies_and_is_saved(tmp_path: Path) -> None:
    async with running_with(tmp_path, {"steeringMode": "all"}) as harness:
        app, session, keys = harness.app, harness.session, harness.keys
        app.spawn(app.commands.run, "/settings")
        await until(lambda: app._dialog is not None)
        rows = app._dialog.options
        assert rows[1].split() == ["Steering", "mode", "all"]
        assert rows[3].split() == ["Hide", "thinking", "false"]
        first = app._dialog
        keys.send_text("\x1b[B\x1b[B\x1b[B\r")  # Hide thinking
        await until(lambda: app._dialog is not None and app._dialog is not first)
        assert app._dialog.options[3].split() == ["Hide", "thinking", "true"]
        assert app._dialog.selected == 3
        assert app.options.hide_thinking is True
        assert session.saved_settings == [("hideThinkingBlock", True)]
        second = app._dialog
        keys.send_text("\x1b[A\x1b[A\r")  # Steering mode: all → one-at-a-time
        await until(lambda: app._dialog is not None and app._dialog is not second)
        assert session.settings["steeringMode"] == "one-at-a-time"
        # The thinking level opens its own list, then saves the default level.
        third = app._dialog
        keys.send_text("\x1b[B\x1b[B\x1b[B\x1b[B\x1b[B\r")
        await until(lambda: app._dialog is not None and app._dialog.title == "Thinking level")
        assert third.closed
        keys.send_text("\x1b[B\r")  # medium → high
        await until(lambda: session.thinking_level == "high")
        assert session.saved_settings[-1] == ("defaultThinkingLevel", "high")


async def test_double_escape_follows_the_setting(tmp_path: Path) -> None:
    async with running_with(tmp_path, {"doubleEscapeAction": "fork"}) as harness:
        app = harness.app
        app.on_escape()
        app.on_escape()
        await harness.committed("No messages to fork from")

    async with running_with(tmp_path, {"doubleEscapeAction": "none"}) as harness:
        app = harness.app
        spawned: list[tuple[Any, ...]] = []
        app.spawn = lambda *args: spawned.append(args)  # type: ignore[method-assign]
        app.on_escape()
        app.on_escape()
        assert spawned == []


async def test_double_escape_may_name_a_plugin_command(tmp_path: Path) -> None:
    # pi-checkpoints documents "doubleEscapeAction": "rewind"; any plugin command works.
    async with running_with(tmp_path, {"doubleEscapeAction": "greet"}) as harness:
        app = harness.app
        app.on_escape()
        app.on_escape()
        await until(lambda: harness.session.plugin_log == [("greet", "")])
    async with running_with(tmp_path, {"doubleEscapeAction": "nosuch"}) as harness:
        harness.app.on_escape()
        harness.app.on_escape()
        await harness.committed('doubleEscapeAction "nosuch" in settings.json names no command')


async def test_quiet_startup_leaves_out_the_header(tmp_path: Path) -> None:
    async with running_with(tmp_path, {"quietStartup": True}) as harness:
        harness.app.notice("ready")
        await harness.committed("ready")
        assert "/hotkeys for more" not in harness.app.written
    async with running_with(tmp_path, {}) as harness:
        harness.app.notice("ready")
        await harness.committed("ready")
        assert "/hotkeys for more" in harness.app.written


async def test_plugin_settings_follow_pi_rows_editable_when_a_bool_or_a_choice(tmp_path: Path) -> None:
    rows = [
        PluginSetting("compaction.enabled", "compaction", "", "boolean", "true", ("true", "false")),
        PluginSetting("myPlugin.enabled", "mine", "Check every reply", "boolean", "true", ("true", "false")),
        PluginSetting("myPlugin.mode", "mine", "", "one of fast, careful", "fast", ("fast", "careful")),
        PluginSetting("myPlugin.maxTries", "mine", "", "integer", "3"),
    ]
    async with running_with(tmp_path, {"myPlugin": {"maxTries": 5}}) as harness:
        app, session, keys = harness.app, harness.session, harness.keys
        session.plugin_setting_rows = rows
        app.spawn(app.commands.run, "/settings")
        await until(lambda: app._dialog is not None)
        shown = [row.split() for row in app._dialog.options]
        # pi's own Auto-compact row stays the only one for compaction.enabled.
        assert len(shown) == len(SETTING_ITEMS) + 3
        assert shown[len(SETTING_ITEMS) :] == [
            ["myPlugin.enabled", "true"],
            ["myPlugin.mode", "fast"],
            ["myPlugin.maxTries", "5"],
        ]
        assert "from plugin mine" in (app._dialog._details or [])[len(SETTING_ITEMS)]
        first = app._dialog
        keys.send_text("\x1b[B" * len(SETTING_ITEMS) + "\r")  # myPlugin.enabled: true → false
        await until(lambda: app._dialog is not None and app._dialog is not first)
        assert session.saved_settings == [("myPlugin.enabled", False)]
        second = app._dialog
        keys.send_text("\x1b[B\r")  # myPlugin.mode: fast → careful
        await until(lambda: app._dialog is not None and app._dialog is not second)
        assert session.saved_settings[-1] == ("myPlugin.mode", "careful")
        third = app._dialog
        keys.send_text("\x1b[B\r")  # myPlugin.maxTries: read-only
        await until(lambda: app._dialog is not None and app._dialog is not third)
        await harness.committed("myPlugin.maxTries is read-only here: change it in settings.json")
        assert len(session.saved_settings) == 2
