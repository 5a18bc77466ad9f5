"""Plugin settings sections where users look for settings: ``plugins info`` and ``/settings``."""

from __future__ import annotations

import enum
import json
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from pi_host import SettingsSection, hookimpl
from pi_host.modes._interactive_session import InteractiveSessionAdapter
from pi_host.modes._plugin_info import run_plugin_info
from pi_host.plugin import PluginControls
from pi_host.runtime import Host, SessionOptions, create_session
from pi_host.runtime._plugin_settings import SectionField, section_fields


class Speed(enum.Enum):
    FAST = "fast"
    CAREFUL = "careful"


class _Section(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


class Limits(_Section):
    max_bytes: int | None = None


class MySettings(_Section):
    enabled: bool = True
    speed: Speed = Speed.FAST
    style: Literal["plain", "fancy"] = "plain"
    max_tries: int = Field(3, description="Attempts before giving up")
    limits: Limits = Field(default_factory=Limits)


class MyPlugin:
    @hookimpl
    def pi_register_settings(self, register: Any) -> None:
        register(SettingsSection("myPlugin", MySettings, "My plugin's knobs"))


def test_fields_flatten_nested_models_and_offer_choices_only_for_bools_and_words() -> None:
    assert section_fields(SettingsSection("myPlugin", MySettings)) == [
        SectionField("myPlugin.enabled", "boolean", True, ("true", "false")),
        SectionField("myPlugin.speed", "one of fast, careful", "fast", ("fast", "careful")),
        SectionField("myPlugin.style", "one of plain, fancy", "plain", ("plain", "fancy")),
        SectionField("myPlugin.maxTries", "integer", 3, (), "Attempts before giving up"),
        SectionField("myPlugin.limits.maxBytes", "integer or null", None),
    ]


def test_plugins_info_lists_the_sections_a_plugin_declares(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PI_HOST_DIR", str(tmp_path / "agent"))
    monkeypatch.chdir(tmp_path)
    assert run_plugin_info(["retry"]) == 0
    text = capsys.readouterr().out
    assert "  settings:     retry — Automatic retry of transient provider errors\n" in text
    assert "retry.maxRetries" in text and "integer, default 3" in text
    assert run_plugin_info(["compaction", "--json"]) == 0
    detail = json.loads(capsys.readouterr().out)
    assert [section["key"] for section in detail["settings"]] == ["compaction", "branchSummary"]
    enabled = detail["settings"][0]["fields"][0]
    assert enabled == {"key": "compaction.enabled", "type": "boolean", "default": True, "description": ""}
    assert run_plugin_info(["bash", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["settings"] == []


async def test_the_terminal_ui_gets_each_value_with_its_plugin(tmp_path: Path) -> None:
    host = Host.load(controls=PluginControls(allow=frozenset()), extra_plugins=[MyPlugin()])
    session = await create_session(
        SessionOptions(cwd=str(tmp_path), agent_dir=str(tmp_path / "agent"), provider="faux", no_tools=True),
        host=host,
    )
    rows = InteractiveSessionAdapter(session).plugin_settings()
    assert [(row.key, row.default, row.choices) for row in rows] == [
        ("myPlugin.enabled", "true", ("true", "false")),
        ("myPlugin.speed", "fast", ("fast", "careful")),
        ("myPlugin.style", "plain", ("plain", "fancy")),
        ("myPlugin.maxTries", "3", ()),
        ("myPlugin.limits.maxBytes", "null", ()),
    ]
    assert {row.plugin for row in rows} == {host.settings_section_sources["myPlugin"]}
    assert rows[0].description == "My plugin's knobs"
    assert rows[3].description == "Attempts before giving up"
