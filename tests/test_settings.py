"""settings.json: global and project files, merging, typed access, careful writes.

Ported from pi's ``settings-manager.test.ts`` scenarios, plus pi-host's robustness rules:
a malformed file is reported and ignored, never overwritten.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from pi_host.resources import Settings, SettingsManager, validate_section


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    agent = tmp_path / "agent"
    project = tmp_path / "project"
    agent.mkdir()
    (project / ".pi").mkdir(parents=True)
    return agent, project


def write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def global_file(dirs: tuple[Path, Path]) -> Path:
    return dirs[0] / "settings.json"


def project_file(dirs: tuple[Path, Path]) -> Path:
    return dirs[1] / ".pi" / "settings.json"


def load(dirs: tuple[Path, Path], *, trusted: bool = True) -> SettingsManager:
    return SettingsManager.load(dirs[1], dirs[0], project_trusted=trusted)


class TestDefaultsAndMerging:
    def test_defaults_without_files(self, dirs: tuple[Path, Path]) -> None:
        settings = load(dirs).settings
        assert settings == Settings()
        assert (settings.terminal.show_images, settings.terminal.image_width_cells) == (True, 60)
        # compaction, branchSummary and retry are plugins' sections, not the host's.
        assert not hasattr(settings, "compaction") and not hasattr(settings, "retry")
        assert settings.steering_mode == settings.follow_up_mode == "one-at-a-time"
        assert settings.default_project_trust == "ask"
        assert settings.images.block_images is False
        assert settings.enable_skill_commands is True
        assert settings.shell_path is None and settings.shell_command_prefix is None
        assert settings.default_provider is None and settings.default_thinking_level is None
        assert settings.plugins.enable == [] and settings.plugins.disable == []

    def test_project_overrides_global_with_nested_merge(self, dirs: tuple[Path, Path]) -> None:
        write_json(
            global_file(dirs), {"theme": "dark", "terminal": {"showImages": False, "imageWidthCells": 60}}
        )
        write_json(project_file(dirs), {"terminal": {"imageWidthCells": 80}})
        manager = load(dirs)
        assert manager.merged() == {"theme": "dark", "terminal": {"showImages": False, "imageWidthCells": 80}}
        assert manager.settings.terminal.image_width_cells == 80
        assert manager.settings.terminal.show_images is False
        assert manager.settings.theme == "dark"

    def test_merge_reaches_every_level_and_arrays_replace(self, dirs: tuple[Path, Path]) -> None:
        write_json(
            global_file(dirs), {"retry": {"provider": {"timeoutMs": 1000, "maxRetries": 2}}, "skills": ["a"]}
        )
        write_json(project_file(dirs), {"retry": {"provider": {"maxRetries": 5}}, "skills": ["b"]})
        manager = load(dirs)
        assert manager.get("retry.provider") == {"timeoutMs": 1000, "maxRetries": 5}
        assert manager.settings.skills == ["b"]

    def test_untrusted_project_is_not_read_until_trusted(self, dirs: tuple[Path, Path]) -> None:
        write_json(global_file(dirs), {"defaultModel": "global-model"})
        write_json(project_file(dirs), {"defaultModel": "project-model", "shellPath": "/evil"})
        manager = load(dirs, trusted=False)
        assert manager.settings.default_model == "global-model"
        assert manager.settings.shell_path is None
        manager.set_project_trusted(True)
        assert manager.settings.default_model == "project-model"
        manager.set_project_trusted(False)
        assert manager.settings.default_model == "global-model"

    def test_settings_for_one_scope(self, dirs: tuple[Path, Path]) -> None:
        write_json(global_file(dirs), {"defaultProjectTrust": "never"})
        write_json(project_file(dirs), {"defaultProjectTrust": "always"})
        manager = load(dirs)
        assert manager.settings_for("global").default_project_trust == "never"
        assert manager.settings.default_project_trust == "always"

    def test_unknown_keys_are_kept_and_readable(self, dirs: tuple[Path, Path]) -> None:
        write_json(global_file(dirs), {"myPlugin": {"level": 3}, "terminal": {"future": True}})
        manager = load(dirs)
        assert manager.get("myPlugin.level") == 3
        assert manager.get("myPlugin.missing", "default") == "default"
        assert manager.settings.model_extra == {"myPlugin": {"level": 3}}
        assert manager.settings.terminal.model_extra == {"future": True}

    def test_packages_and_pi_host_plugin_keys(self, dirs: tuple[Path, Path]) -> None:
        packages = [
            "npm:simple-pkg",
            {"source": "npm:other", "extensions": ["extensions/oracle.ts"], "skills": []},
        ]
        write_json(
            global_file(dirs), {"packages": packages, "plugins": {"disable": ["noisy"], "enable": ["x"]}}
        )
        settings = load(dirs).settings
        assert settings.packages == packages
        assert settings.plugins.disable == ["noisy"]
        assert settings.plugins.enable == ["x"]

    def test_shell_command_prefix(self, dirs: tuple[Path, Path]) -> None:
        write_json(global_file(dirs), {"shellCommandPrefix": "shopt -s expand_aliases"})
        assert load(dirs).settings.shell_command_prefix == "shopt -s expand_aliases"

    def test_session_dir_expands_home(self, dirs: tuple[Path, Path]) -> None:
        write_json(global_file(dirs), {"sessionDir": "~/sessions"})
        assert load(dirs).settings.expanded_session_dir() == str(Path.home() / "sessions")
        assert Settings().expanded_session_dir() is None

    def test_overrides_apply_without_being_saved(self, dirs: tuple[Path, Path]) -> None:
        write_json(global_file(dirs), {"terminal": {"showImages": True, "imageWidthCells": 100}})
        manager = load(dirs)
        manager.apply_overrides({"terminal": {"showImages": False}})
        assert manager.settings.terminal.show_images is False
        assert manager.settings.terminal.image_width_cells == 100
        assert read_json(global_file(dirs)) == {"terminal": {"showImages": True, "imageWidthCells": 100}}

    def test_resource_entries_stay_per_scope(self, dirs: tuple[Path, Path]) -> None:
        write_json(global_file(dirs), {"skills": ["~/skills"], "prompts": "not-a-list"})
        write_json(project_file(dirs), {"skills": ["local"]})
        manager = load(dirs)
        assert manager.resource_entries("skills") == (["~/skills"], ["local"])
        assert manager.resource_entries("prompts") == ([], [])
        assert any("prompts: expected a list of paths" in issue.message for issue in manager.issues)
        load_untrusted = load(dirs, trusted=False)
        assert load_untrusted.resource_entries("skills") == (["~/skills"], [])


class TestMigrations:
    def test_old_keys_are_renamed(self, dirs: tuple[Path, Path]) -> None:
        write_json(
            global_file(dirs),
            {
                "queueMode": "all",
                "websockets": True,
                "skills": {"enableSkillCommands": False, "customDirectories": ["~/my-skills"]},
            },
        )
        manager = load(dirs)
        assert manager.raw("global") == {
            "steeringMode": "all",
            "transport": "websocket",
            "skills": ["~/my-skills"],
            "enableSkillCommands": False,
        }
        assert manager.settings.steering_mode == "all"

    def test_empty_skills_object_is_dropped(self, dirs: tuple[Path, Path]) -> None:
        write_json(global_file(dirs), {"skills": {"customDirectories": []}})
        assert load(dirs).raw("global") == {}


class TestBadFiles:
    def test_malformed_json_is_reported_ignored_and_never_overwritten(self, dirs: tuple[Path, Path]) -> None:
        broken = '{"theme": "dark",\n  "defaultModel": }'
        global_file(dirs).write_text(broken)
        write_json(project_file(dirs), {"defaultModel": "project-model"})
        manager = load(dirs)
        assert manager.settings.default_model == "project-model"
        (issue,) = manager.issues
        assert issue.scope == "global"
        assert issue.path == str(global_file(dirs))
        assert "is not valid JSON" in issue.message
        assert "line 2, column" in issue.message
        assert str(global_file(dirs)) in str(issue)
        assert manager.set_default_thinking_level("high") is False
        assert global_file(dirs).read_text() == broken
        assert manager.settings.default_thinking_level == "high"  # still applies for this session
        assert any("not saved" in issue.message for issue in manager.issues)

    def test_file_broken_after_loading_is_not_overwritten(self, dirs: tuple[Path, Path]) -> None:
        write_json(global_file(dirs), {"theme": "dark"})
        manager = load(dirs)
        global_file(dirs).write_text("{oops")
        assert manager.set("theme", "light") is False
        assert global_file(dirs).read_text() == "{oops"
        assert any("not saved" in issue.message for issue in manager.issues)

    def test_non_object_json(self, dirs: tuple[Path, Path]) -> None:
        global_file(dirs).write_text("[1, 2]")
        manager = load(dirs)
        assert manager.settings == Settings()
        assert "must hold a JSON object, not list" in manager.issues[0].message

    def test_empty_file_is_an_empty_object(self, dirs: tuple[Path, Path]) -> None:
        global_file(dirs).write_text("  \n")
        manager = load(dirs)
        assert manager.settings == Settings()
        assert manager.issues == ()

    def test_wrong_typed_values_fall_back_to_defaults(self, dirs: tuple[Path, Path]) -> None:
        write_json(
            global_file(dirs),
            {
                "terminal": {"showImages": "sometimes", "imageWidthCells": 1000},
                "steeringMode": "whenever",
                "skills": [1, 2],
                "defaultModel": "kept",
            },
        )
        manager = load(dirs)
        settings = manager.settings
        assert settings.terminal.show_images is True
        assert settings.terminal.image_width_cells == 1000
        assert settings.steering_mode == "one-at-a-time"
        assert settings.skills == []
        assert settings.default_model == "kept"
        shown = [issue.message for issue in manager.issues]
        assert any(m.startswith("terminal.showImages:") and m.endswith("using the default") for m in shown)
        assert any(m.startswith("steeringMode:") for m in shown)
        assert any(m.startswith("skills.0:") for m in shown)
        assert all(issue.scope == "global" for issue in manager.issues)

    def test_wrong_project_value_is_attributed_to_the_project_file(self, dirs: tuple[Path, Path]) -> None:
        write_json(project_file(dirs), {"terminal": {"imageWidthCells": "many"}})
        manager = load(dirs)
        assert manager.settings.terminal.image_width_cells == 60
        (issue,) = manager.issues
        assert (issue.scope, issue.path) == ("project", str(project_file(dirs)))

    def test_each_problem_is_reported_once(self, dirs: tuple[Path, Path]) -> None:
        write_json(global_file(dirs), {"terminal": {"showImages": "sometimes"}})
        manager = load(dirs)
        assert len(manager.drain_issues()) == 1
        manager.set_steering_mode("all")  # the value is still wrong after this change
        assert manager.settings.terminal.show_images is True
        assert manager.issues == ()

    def test_reload_keeps_previous_values_when_file_breaks(self, dirs: tuple[Path, Path]) -> None:
        write_json(global_file(dirs), {"defaultModel": "m1"})
        manager = load(dirs)
        write_json(global_file(dirs), {"defaultModel": "m2"})
        manager.reload()
        assert manager.settings.default_model == "m2"
        global_file(dirs).write_text("{")
        manager.reload()
        assert manager.settings.default_model == "m2"
        assert manager.drain_issues()
        assert manager.issues == ()


class TestWrites:
    def test_preserves_settings_added_externally(self, dirs: tuple[Path, Path]) -> None:
        write_json(global_file(dirs), {"theme": "dark", "defaultModel": "claude-sonnet"})
        manager = load(dirs)
        current = read_json(global_file(dirs))
        current["enabledModels"] = ["claude-opus-4-5", "gpt-5.2-codex"]
        write_json(global_file(dirs), current)
        assert manager.set_default_thinking_level("high") is True
        assert read_json(global_file(dirs)) == {
            "theme": "dark",
            "defaultModel": "claude-sonnet",
            "enabledModels": ["claude-opus-4-5", "gpt-5.2-codex"],
            "defaultThinkingLevel": "high",
        }

    def test_in_memory_change_wins_for_the_same_key(self, dirs: tuple[Path, Path]) -> None:
        write_json(global_file(dirs), {"theme": "dark"})
        manager = load(dirs)
        write_json(global_file(dirs), {"theme": "dark", "defaultThinkingLevel": "low"})
        manager.set_default_thinking_level("high")
        assert read_json(global_file(dirs))["defaultThinkingLevel"] == "high"

    def test_nested_set_keeps_sibling_keys(self, dirs: tuple[Path, Path]) -> None:
        write_json(global_file(dirs), {"terminal": {"showImages": True}, "shellCommandPrefix": "shopt -s x"})
        manager = load(dirs)
        manager.set("terminal.clearOnShrink", True)
        manager.set("compaction.enabled", False)
        assert read_json(global_file(dirs)) == {
            "terminal": {"showImages": True, "clearOnShrink": True},
            "shellCommandPrefix": "shopt -s x",
            "compaction": {"enabled": False},
        }
        assert manager.settings.terminal.clear_on_shrink is True
        assert manager.get("compaction.enabled") is False

    def test_update_several_keys_and_remove_with_none(self, dirs: tuple[Path, Path]) -> None:
        write_json(global_file(dirs), {"theme": "dark", "defaultModel": "old"})
        manager = load(dirs)
        assert manager.set_default_model("anthropic", "claude-x") is True
        manager.set("theme", None)
        assert read_json(global_file(dirs)) == {"defaultModel": "claude-x", "defaultProvider": "anthropic"}
        assert manager.settings.theme is None

    def test_creates_missing_directory_and_file(self, tmp_path: Path) -> None:
        agent = tmp_path / "fresh" / "agent"
        manager = SettingsManager.load(tmp_path, agent, project_trusted=False)
        manager.set("retry.enabled", False)
        assert read_json(agent / "settings.json") == {"retry": {"enabled": False}}
        assert stat.S_IMODE((agent / "settings.json").stat().st_mode) == 0o644

    def test_project_scope_write(self, dirs: tuple[Path, Path]) -> None:
        write_json(project_file(dirs), {"keep": 1})
        manager = load(dirs)
        manager.set("skills", ["./skills"], scope="project")
        assert read_json(project_file(dirs)) == {"keep": 1, "skills": ["./skills"]}
        assert manager.settings.skills == ["./skills"]

    def test_write_keeps_file_mode_and_leaves_no_temporary_files(self, dirs: tuple[Path, Path]) -> None:
        write_json(global_file(dirs), {})
        os.chmod(global_file(dirs), 0o600)
        load(dirs).set_steering_mode("all")
        assert stat.S_IMODE(global_file(dirs).stat().st_mode) == 0o600
        assert sorted(p.name for p in dirs[0].iterdir()) == ["settings.json", "settings.json.lock"]

    def test_two_managers_do_not_lose_each_others_changes(self, dirs: tuple[Path, Path]) -> None:
        first = load(dirs)
        second = load(dirs)
        first.set_steering_mode("all")
        second.set_follow_up_mode("all")
        assert read_json(global_file(dirs)) == {"steeringMode": "all", "followUpMode": "all"}

    def test_bad_arguments_raise_and_change_nothing(self, dirs: tuple[Path, Path]) -> None:
        manager = load(dirs)
        with pytest.raises(ValueError, match="invalid settings key"):
            manager.set("compaction..enabled", True)
        with pytest.raises(TypeError):
            manager.set("theme", object())
        with pytest.raises(ValueError):
            manager.set("retry.baseDelayMs", float("nan"))
        assert manager.raw("global") == {}
        assert not global_file(dirs).exists()

    def test_in_memory_manager_never_touches_files(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(tmp_path)
        manager = SettingsManager.in_memory({"theme": "dark"}, {"theme": "light"})
        assert manager.settings.theme == "light"
        assert manager.set("defaultModel", "m") is True
        assert manager.settings.default_model == "m"
        assert list(tmp_path.iterdir()) == []

    def test_constructor_is_private(self) -> None:
        with pytest.raises(TypeError, match=r"SettingsManager\.load"):
            SettingsManager(global_path=None, project_path=None, project_trusted=False)


class TestAgentDirectory:
    def test_default_and_override(self, tmp_path: Path) -> None:
        from pi_host.resources import agent_dir, expand_home

        assert agent_dir({}) == Path.home() / ".pi-host"
        assert agent_dir({"PI_HOST_DIR": "  "}) == Path.home() / ".pi-host"
        assert agent_dir({"PI_HOST_DIR": str(tmp_path / "x" / ".." / "pi")}) == tmp_path / "pi"
        assert agent_dir({"PI_HOST_DIR": "~/.pi/agent"}) == Path.home() / ".pi" / "agent"
        assert expand_home("~") == str(Path.home())
        assert expand_home("~rest") == str(Path.home() / "rest")
        assert expand_home(" /abs ") == "/abs"


class _PluginSection(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    enabled: bool = True
    reserve_tokens: int = 16384


class TestPluginSections:
    """A plugin's own section (``pi_register_settings``): merged, validated, reported by file."""

    def test_a_section_is_validated_key_by_key(self) -> None:
        section, problems = validate_section(
            "myPlugin", {"enabled": "sometimes", "reserveTokens": 8}, _PluginSection
        )
        assert (section.enabled, section.reserve_tokens) == (True, 8)
        ((keys, message),) = problems
        assert keys == ("myPlugin", "enabled")
        assert message.startswith("myPlugin.enabled: ") and message.endswith("using the default")

    def test_a_section_that_is_not_an_object_gives_the_defaults(self) -> None:
        section, problems = validate_section("myPlugin", [1], _PluginSection)
        assert section == _PluginSection()
        assert problems == [(("myPlugin",), "myPlugin: expected an object, got list; using the defaults")]
        assert validate_section("myPlugin", None, _PluginSection) == (_PluginSection(), [])

    def test_problems_name_the_file_that_set_the_value(self, dirs: tuple[Path, Path]) -> None:
        write_json(global_file(dirs), {"myPlugin": {"enabled": False}})
        write_json(project_file(dirs), {"myPlugin": {"reserveTokens": "lots"}})
        manager = load(dirs)
        extra = manager.settings.model_extra or {}
        section, problems = validate_section("myPlugin", extra.get("myPlugin"), _PluginSection)
        assert (section.enabled, section.reserve_tokens) == (False, 16384)
        manager.report_section_problems(problems)
        (issue,) = manager.issues
        assert (issue.scope, issue.path) == ("project", str(project_file(dirs)))
        assert issue.message.startswith("myPlugin.reserveTokens: ")
