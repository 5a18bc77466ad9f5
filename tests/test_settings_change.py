"""Settings changed during a session (``/settings``, ``/scoped-models``): live, saved, never lost.

The session is the real runtime on the faux provider, with an isolated agent directory; the
tests read settings.json back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pi_host.modes._interactive_session import InteractiveSessionAdapter
from pi_host.plugin import PluginControls
from pi_host.resources import SettingsManager
from pi_host.runtime import Host, SessionError, SessionOptions, create_session


async def open_session(tmp_path: Path, settings: str, project: dict[str, Any] | None = None) -> Any:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "settings.json").write_text(settings)
    cwd = tmp_path / "project"
    (cwd / ".pi").mkdir(parents=True)
    if project is not None:
        (cwd / ".pi" / "settings.json").write_text(json.dumps(project))
    host = Host.load(controls=PluginControls(allow=frozenset()))
    options = SessionOptions(
        cwd=str(cwd), agent_dir=str(agent), provider="faux", no_session=True, approve=True
    )
    return await create_session(options, host=host)


async def test_a_change_is_live_and_saved_with_every_other_key_kept(tmp_path: Path) -> None:
    original = {
        "compaction": {"reserveTokens": 1000},
        "myPlugin": {"level": 3, "names": ["a", "b"]},
        "steeringMode": "all",
    }
    session = await open_session(tmp_path, json.dumps(original, indent=4))
    adapter = InteractiveSessionAdapter(session)
    assert adapter.setting("steeringMode") == "all"
    assert session.agent.steering_mode == "all"

    adapter.save_setting("steeringMode", "one-at-a-time")
    adapter.save_setting("compaction.enabled", False)
    adapter.save_setting("followUpMode", "all")

    assert session.agent.steering_mode == "one-at-a-time"
    assert session.agent.follow_up_mode == "all"
    assert adapter.auto_compaction_enabled is False
    assert session.setting_value("compaction.reserveTokens") == 1000
    saved = json.loads((tmp_path / "agent" / "settings.json").read_text())
    assert saved == {
        "compaction": {"reserveTokens": 1000, "enabled": False},
        "myPlugin": {"level": 3, "names": ["a", "b"]},
        "steeringMode": "one-at-a-time",
        "followUpMode": "all",
    }


async def test_none_removes_the_key(tmp_path: Path) -> None:
    session = await open_session(tmp_path, json.dumps({"enabledModels": ["faux/faux-1"], "x": 1}))
    adapter = InteractiveSessionAdapter(session)
    assert adapter.setting("enabledModels") == ["faux/faux-1"]
    adapter.save_setting("enabledModels", None)
    assert adapter.setting("enabledModels") is None
    assert json.loads((tmp_path / "agent" / "settings.json").read_text()) == {"x": 1}


async def test_the_choice_wins_over_the_project_for_this_session(tmp_path: Path) -> None:
    session = await open_session(tmp_path, "{}", project={"steeringMode": "all"})
    adapter = InteractiveSessionAdapter(session)
    assert session.agent.steering_mode == "all"
    adapter.save_setting("steeringMode", "one-at-a-time")
    assert session.agent.steering_mode == "one-at-a-time"
    assert adapter.setting("steeringMode") == "one-at-a-time"
    assert json.loads((tmp_path / "agent" / "settings.json").read_text()) == {"steeringMode": "one-at-a-time"}
    project_file = tmp_path / "project" / ".pi" / "settings.json"
    assert json.loads(project_file.read_text()) == {"steeringMode": "all"}


async def test_a_file_broken_since_start_up_is_refused_and_left_alone(tmp_path: Path) -> None:
    session = await open_session(tmp_path, json.dumps({"steeringMode": "all"}))
    adapter = InteractiveSessionAdapter(session)
    settings_file = tmp_path / "agent" / "settings.json"
    broken = '{"steeringMode": "all", "theme": '
    settings_file.write_text(broken)

    with pytest.raises(SessionError) as caught:
        adapter.save_setting("hideThinkingBlock", True)
    message = str(caught.value)
    assert "hideThinkingBlock applies to this session but was not saved to" in message
    assert str(settings_file) in message
    assert "is not valid JSON" in message and "line 1" in message
    assert "Fix the file, then change the setting again." in message
    assert settings_file.read_text() == broken
    # The session uses the new value all the same.
    assert adapter.setting("hideThinkingBlock") is True

    # The same failure again is explained again, not left without a reason.
    with pytest.raises(SessionError, match="is not valid JSON"):
        adapter.save_setting("quietStartup", True)


async def test_a_file_broken_at_start_up_is_saved_to_once_fixed(tmp_path: Path) -> None:
    session = await open_session(tmp_path, "[1, 2")
    adapter = InteractiveSessionAdapter(session)
    settings_file = tmp_path / "agent" / "settings.json"
    with pytest.raises(SessionError, match="could not be read when it was loaded"):
        adapter.save_setting("quietStartup", True)
    assert settings_file.read_text() == "[1, 2"

    settings_file.write_text(json.dumps({"theme": "light"}))
    adapter.save_setting("doubleEscapeAction", "fork")
    assert json.loads(settings_file.read_text()) == {"theme": "light", "doubleEscapeAction": "fork"}


def test_settings_manager_reports_why_a_write_failed(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    path = agent / "settings.json"
    path.write_text(json.dumps({"keep": {"me": True}}))
    manager = SettingsManager.load(tmp_path, agent, project_trusted=False)
    assert manager.set("quietStartup", True)
    assert manager.save_error is None
    path.write_text('"just a string"')
    assert not manager.set("quietStartup", False)
    assert manager.save_error == "the file must hold a JSON object, not str; it is left untouched"
    assert path.read_text() == '"just a string"'
    path.write_text(json.dumps({"keep": {"me": True}}))
    assert manager.set("quietStartup", False)
    assert manager.save_error is None
    assert json.loads(path.read_text()) == {"keep": {"me": True}, "quietStartup": False}


async def test_a_session_without_files_changes_in_memory(tmp_path: Path) -> None:
    session = await open_session(tmp_path, "{}")
    session.settings_manager = None
    adapter = InteractiveSessionAdapter(session)
    adapter.save_setting("followUpMode", "all")
    adapter.save_setting("compaction.enabled", False)
    assert session.agent.follow_up_mode == "all"
    assert session.setting_value("compaction.enabled") is False
    assert json.loads((tmp_path / "agent" / "settings.json").read_text()) == {}
