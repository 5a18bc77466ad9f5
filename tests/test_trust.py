"""Project trust: trust.json, defaultProjectTrust, --approve, and never prompting unasked."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pi_host.resources import (
    ProjectTrust,
    ProjectTrustStore,
    TrustOption,
    has_trust_requiring_resources,
    trust_prompt_text,
)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, Path]:
    home = tmp_path / "home"
    agent = home / ".pi-host"
    parent = tmp_path / "code"
    project = parent / "repo"
    agent.mkdir(parents=True)
    (project / ".pi").mkdir(parents=True)
    (project / ".pi" / "settings.json").write_text("{}")
    return {"home": home, "agent": agent, "parent": parent, "project": project, "tmp": tmp_path}


def trust(env: dict[str, Path], **kwargs: object) -> ProjectTrust:
    return ProjectTrust(env["agent"], home=env["home"], **kwargs)  # type: ignore[arg-type]


def trust_file(env: dict[str, Path]) -> Path:
    return env["agent"] / "trust.json"


class TestWhatNeedsTrust:
    @pytest.mark.parametrize(
        "entry",
        [
            "settings.json",
            "extensions",
            "skills",
            "prompts",
            "themes",
            "SYSTEM.md",
            "APPEND_SYSTEM.md",
            "plugins",
            "mcp.json",
            "agents",
        ],
    )
    def test_project_config_entries(self, tmp_path: Path, entry: str) -> None:
        (tmp_path / ".pi").mkdir()
        target = tmp_path / ".pi" / entry
        if "." in entry:
            target.write_text("x")
        else:
            target.mkdir()
        assert has_trust_requiring_resources(tmp_path, home=tmp_path / "home") is True

    def test_a_root_mcp_json_alone_needs_trust(self, tmp_path: Path) -> None:
        # A cloned repository's MCP servers are programs: they must not start untrusted.
        (tmp_path / ".mcp.json").write_text('{"mcpServers": {}}')
        assert has_trust_requiring_resources(tmp_path, home=tmp_path / "home") is True

    def test_claude_code_agent_definitions_need_trust(self, tmp_path: Path) -> None:
        # Agent files are system prompts and tool lists a cloned repository chooses.
        (tmp_path / ".claude" / "agents").mkdir(parents=True)
        assert has_trust_requiring_resources(tmp_path, home=tmp_path / "home") is True

    def test_plain_directories_and_context_files_do_not(self, tmp_path: Path) -> None:
        (tmp_path / "AGENTS.md").write_text("rules")
        (tmp_path / ".pi").mkdir()
        (tmp_path / ".pi" / "sessions").mkdir()
        assert has_trust_requiring_resources(tmp_path, home=tmp_path / "home") is False

    def test_agents_skills_in_an_ancestor_up_to_the_git_root(self, tmp_path: Path) -> None:
        repo = tmp_path / "repo"
        cwd = repo / "sub"
        cwd.mkdir(parents=True)
        (tmp_path / ".agents" / "skills").mkdir(parents=True)  # above the repository: not ours
        (repo / ".git").mkdir()
        assert has_trust_requiring_resources(cwd, home=tmp_path / "home") is False
        (repo / ".agents" / "skills").mkdir(parents=True)
        assert has_trust_requiring_resources(cwd, home=tmp_path / "home") is True

    def test_users_own_agents_skills_does_not(self, tmp_path: Path) -> None:
        (tmp_path / ".agents" / "skills").mkdir(parents=True)
        assert has_trust_requiring_resources(tmp_path, home=tmp_path) is False


class TestDecisions:
    def test_nothing_to_gate_is_trusted(self, env: dict[str, Path]) -> None:
        plain = env["tmp"] / "plain"
        plain.mkdir()
        assert trust(env).decision(plain) is True

    def test_undecided_under_ask_means_untrusted_without_prompting(self, env: dict[str, Path]) -> None:
        decisions = trust(env)
        assert decisions.decision(env["project"]) is None
        assert decisions.is_trusted(env["project"]) is False
        assert decisions.needs_prompt(env["project"]) is True
        assert decisions.resolve(env["project"]) is False
        assert not trust_file(env).exists()

    @pytest.mark.parametrize(("default", "expected"), [("always", True), ("never", False)])
    def test_default_setting(self, env: dict[str, Path], default: str, expected: bool) -> None:
        decisions = trust(env, default=default)
        assert decisions.is_trusted(env["project"]) is expected
        assert decisions.needs_prompt(env["project"]) is False

    def test_override_beats_everything(self, env: dict[str, Path]) -> None:
        ProjectTrustStore(env["agent"]).set(env["project"], False)
        assert trust(env, override=True, default="never").is_trusted(env["project"]) is True
        ProjectTrustStore(env["agent"]).set(env["project"], True)
        assert trust(env, override=False, default="always").is_trusted(env["project"]) is False

    def test_remembered_decision_beats_the_default(self, env: dict[str, Path]) -> None:
        ProjectTrustStore(env["agent"]).set(env["project"], True)
        assert trust(env, default="never").is_trusted(env["project"]) is True

    def test_nearest_remembered_ancestor_wins(self, env: dict[str, Path]) -> None:
        store = ProjectTrustStore(env["agent"])
        store.set(env["parent"], True)
        assert trust(env).is_trusted(env["project"]) is True
        store.set(env["project"], False)
        assert trust(env).is_trusted(env["project"]) is False
        entry = store.get_entry(env["project"])
        assert entry is not None and entry.path == str(env["project"].resolve())


class TestRecording:
    def test_remembered_decision_is_written_in_pis_format(self, env: dict[str, Path]) -> None:
        assert trust(env).set_trusted(env["project"], True) is True
        trust(env).set_trusted(env["parent"], False)
        text = trust_file(env).read_text()
        expected = {str(env["parent"].resolve()): False, str(env["project"].resolve()): True}
        assert text == json.dumps(expected, indent=2) + "\n"
        assert trust(env).is_trusted(env["project"]) is True

    def test_session_only_decision_is_not_written(self, env: dict[str, Path]) -> None:
        decisions = trust(env)
        assert decisions.set_trusted(env["project"], True, remember=False) is False
        assert decisions.is_trusted(env["project"]) is True
        assert not trust_file(env).exists()
        assert trust(env).is_trusted(env["project"]) is False

    def test_symlinked_directory_shares_the_decision(self, env: dict[str, Path]) -> None:
        link = env["tmp"] / "link"
        os.symlink(env["project"], link)
        trust(env).set_trusted(link, True)
        assert json.loads(trust_file(env).read_text()) == {str(env["project"].resolve()): True}
        assert trust(env).is_trusted(env["project"]) is True

    def test_store_forgets_with_none_and_ignores_null_entries(self, env: dict[str, Path]) -> None:
        trust_file(env).write_text(json.dumps({str(env["project"]): None, "/elsewhere": True}))
        store = ProjectTrustStore(env["agent"])
        assert store.get(env["project"]) is None
        store.set("/elsewhere", None)
        assert store.entries() == {}


class TestPrompting:
    def test_options_in_pis_order(self, env: dict[str, Path]) -> None:
        options = trust(env).options(env["project"])
        assert [o.label for o in options] == [
            "Trust",
            f"Trust parent folder ({env['parent']})",
            "Trust (this session only)",
            "Do not trust",
            "Do not trust (this session only)",
        ]
        assert [o.trusted for o in options] == [True, True, True, False, False]
        assert [o.label for o in trust(env).options(env["project"], include_session_only=False)] == [
            "Trust",
            f"Trust parent folder ({env['parent']})",
            "Do not trust",
        ]

    def test_trust_parent_records_parent_and_clears_own_entry(self, env: dict[str, Path]) -> None:
        decisions = trust(env)
        decisions.set_trusted(env["project"], False)
        parent_option = decisions.options(env["project"])[1]
        assert decisions.choose(env["project"], parent_option) is True
        assert json.loads(trust_file(env).read_text()) == {str(env["parent"].resolve()): True}

    def test_resolve_asks_only_when_undecided(self, env: dict[str, Path]) -> None:
        asked: list[str] = []

        def ask(question: str, options: list[TrustOption]) -> TrustOption | None:
            asked.append(question)
            return options[0]

        decisions = trust(env)
        assert decisions.resolve(env["project"], ask=ask) is True
        assert asked == [trust_prompt_text(env["project"])]
        assert trust(env).resolve(env["project"], ask=ask) is True  # remembered: not asked again
        assert len(asked) == 1

    def test_dismissed_question_means_untrusted(self, env: dict[str, Path]) -> None:
        assert trust(env).resolve(env["project"], ask=lambda question, options: None) is False
        assert not trust_file(env).exists()

    def test_prompt_text_names_the_folder(self, env: dict[str, Path]) -> None:
        text = trust_prompt_text(env["project"])
        assert text.startswith(f"Trust project folder?\n{env['project']}\n\n")
        assert ".pi" in text


class TestBrokenTrustFile:
    def test_malformed_file_counts_as_undecided_and_is_never_overwritten(self, env: dict[str, Path]) -> None:
        trust_file(env).write_text("{not json")
        decisions = trust(env)
        assert decisions.is_trusted(env["project"]) is False
        assert decisions.needs_prompt(env["project"]) is True
        assert str(trust_file(env)) in decisions.issues[0]
        assert "not valid JSON" in decisions.issues[0]
        assert decisions.set_trusted(env["project"], True) is False
        assert trust_file(env).read_text() == "{not json"
        assert decisions.is_trusted(env["project"]) is True  # holds for the session
        assert any("this session only" in issue for issue in decisions.issues)

    @pytest.mark.parametrize("content", ['["a"]', '{"/x": "yes"}'])
    def test_wrong_shapes_are_reported(self, env: dict[str, Path], content: str) -> None:
        trust_file(env).write_text(content)
        decisions = trust(env, default="always")
        assert decisions.is_trusted(env["project"]) is True  # falls through to the default
        assert decisions.issues and str(trust_file(env)) in decisions.issues[0]
