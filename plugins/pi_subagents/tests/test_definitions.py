"""Agent definitions: Claude Code's agents/*.md, where they come from, and broken files reported."""

from __future__ import annotations

import json
from pathlib import Path

from pi_subagents import BUILTIN_AGENT, DefinitionProblem, load_definitions, parse_definition

from pi_host.testing import CliRunner, script_json

REVIEWER = """---
name: code-reviewer
description: Reviews code for bugs.
tools: Read, Grep, Glob, Bash
model: sonnet
---
You review code.
"""


def test_claude_code_file_maps_tools_and_model_alias() -> None:
    found = parse_definition(REVIEWER, "/x/code-reviewer.md")
    assert not isinstance(found, DefinitionProblem)
    assert found.name == "code-reviewer"
    assert found.tools == ("read", "grep", "find", "bash")
    assert found.model == "anthropic/sonnet"
    assert found.system_prompt == "You review code."


def test_list_tools_inherit_model_and_worktree() -> None:
    text = (
        "---\nname: w\ndescription: d\ntools:\n  - read\n  - edit\n"
        "model: inherit\nisolation: worktree\n---\nGo.\n"
    )
    found = parse_definition(text, "w.md")
    assert not isinstance(found, DefinitionProblem)
    assert (found.tools, found.model, found.isolation) == (("read", "edit"), None, "worktree")


def test_malformed_files_name_the_line() -> None:
    broken_yaml = parse_definition("---\nname: a\ndescription: [unclosed\n---\nx\n", "a.md")
    assert isinstance(broken_yaml, DefinitionProblem)
    assert broken_yaml.path == "a.md" and broken_yaml.line == 3
    bad_tools = parse_definition("---\nname: b\ndescription: d\ntools: 7\n---\nx\n", "b.md")
    assert isinstance(bad_tools, DefinitionProblem) and bad_tools.line == 4
    assert "tools must be" in bad_tools.message
    no_name = parse_definition("---\ndescription: d\n---\nx\n", "c.md")
    assert isinstance(no_name, DefinitionProblem) and "name must be" in no_name.message
    plain = parse_definition("just text\n", "d.md")
    assert isinstance(plain, DefinitionProblem) and plain.line == 1


def test_project_agents_only_when_trusted_and_later_dirs_win(tmp_path: Path) -> None:
    agent_dir, project = tmp_path / "agent", tmp_path / "project"
    (agent_dir / "agents").mkdir(parents=True)
    (agent_dir / "agents" / "r.md").write_text(REVIEWER)
    for relative, description in ((".claude/agents", "from claude"), (".pi/agents", "from pi")):
        (project / relative).mkdir(parents=True)
        (project / relative / "r.md").write_text(
            f"---\nname: code-reviewer\ndescription: {description}\n---\nBody.\n"
        )
    untrusted = load_definitions(agent_dir=agent_dir, cwd=str(project), trusted=False)
    assert untrusted.agents["code-reviewer"].description == "Reviews code for bugs."
    assert len(untrusted.untrusted_dirs) == 2
    trusted = load_definitions(agent_dir=agent_dir, cwd=str(project), trusted=True)
    assert trusted.agents["code-reviewer"].description == "from pi"
    assert trusted.agents["general-purpose"] is BUILTIN_AGENT


def _broken_agent(run_cli: CliRunner) -> Path:
    agents = run_cli.agent_dir / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    broken = agents / "broken.md"
    broken.write_text("---\nname: broken\ndescription: [unclosed\n---\nBody.\n")
    (agents / "fine.md").write_text(REVIEWER)
    return broken


def test_malformed_file_reported_on_stderr_in_print_mode(run_cli: CliRunner, tmp_path: Path) -> None:
    broken = _broken_agent(run_cli)
    script = tmp_path / "script.json"
    script.write_text(json.dumps(script_json(["hello"])))
    result = run_cli(
        "--provider",
        "faux",
        "-p",
        "hi",
        env={"PI_HOST_FAUX_SCRIPT": str(script), "PI_HOST_PLUGINS": "subagents"},
    ).assert_success()
    assert result.stdout == "hello\n"
    assert f"pi-subagents: skipped agent definition {broken}:3: invalid YAML frontmatter" in result.stderr


def test_malformed_file_is_an_event_in_json_mode(run_cli: CliRunner, tmp_path: Path) -> None:
    broken = _broken_agent(run_cli)
    script = tmp_path / "script.json"
    script.write_text(json.dumps(script_json(["hello"])))
    result = run_cli(
        "--provider",
        "faux",
        "--mode",
        "json",
        "hi",
        env={"PI_HOST_FAUX_SCRIPT": str(script), "PI_HOST_PLUGINS": "subagents"},
    ).assert_success()
    errors = [e for e in result.events if e.get("type") == "subagent_definition_error"]
    assert len(errors) == 1
    assert errors[0]["path"] == str(broken) and errors[0]["line"] == 3
    assert "skipped agent definition" not in result.stderr


def test_claude_code_aliases_resolve_to_anthropic_models(tmp_path: Path) -> None:
    from pi_subagents import CLAUDE_MODEL_ALIASES

    from pi_host.providers._registry import ModelRegistry

    registry = ModelRegistry.create(tmp_path)
    for alias, pattern in CLAUDE_MODEL_ALIASES.items():
        resolved = registry.resolve(pattern, None)
        assert resolved.error is None and resolved.model is not None
        assert resolved.model.provider == "anthropic" and alias in resolved.model.id


def test_an_unquoted_colon_in_the_description_is_reported_as_claude_code_does() -> None:
    # Claude Code's own parser rejects these ("mapping values are not allowed"); quoting fixes it.
    unquoted = '---\nname: helper\ndescription: Use it when asked. user: "hi" assistant: "yo"\n---\nHelp.\n'
    found = parse_definition(unquoted, "helper.md")
    assert isinstance(found, DefinitionProblem) and found.line == 3
    quoted = '---\nname: helper\ndescription: "Use it when asked. user: \\"hi\\""\n---\nHelp.\n'
    parsed = parse_definition(quoted, "helper.md")
    assert not isinstance(parsed, DefinitionProblem)
    assert parsed.description == 'Use it when asked. user: "hi"'
