"""The system prompt: pi's layout (ported from ``system-prompt.test.ts``) and its sources."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from pi_host import Tool, ToolResult
from pi_host.resources import (
    DEFAULT_IDENTITY,
    ContextFile,
    DocsPaths,
    ResourceOptions,
    SettingsManager,
    Skill,
    build_system_prompt,
    find_docs,
    format_skills_for_prompt,
    load_resources,
    load_system_prompt_sources,
    resolve_prompt_input,
)
from tests.pi_reference import require_pi_package

DAY = date(2026, 3, 4)
NO_DOCS = DocsPaths()


@dataclass(frozen=True)
class FakeTool:
    name: str
    prompt_snippet: str | None = None
    prompt_guidelines: tuple[str, ...] = ()


READ = FakeTool("read", "Read file contents", ("Use read to examine files instead of cat or sed.",))
BASH = FakeTool("bash", "Execute bash commands (ls, grep, find, etc.)")
EDIT = FakeTool("edit", "Make precise file edits with exact text replacement")
WRITE = FakeTool(
    "write", "Create or overwrite files", ("Use write only for new files or complete rewrites.",)
)
DEFAULT_TOOLS = (READ, BASH, EDIT, WRITE)


def build(**kwargs: object) -> str:
    options: dict[str, object] = {"cwd": "/home/user/project", "today": DAY, "docs": NO_DOCS}
    options.update(kwargs)
    return build_system_prompt(**options)  # type: ignore[arg-type]


def skill(name: str, *, hidden: bool = False) -> Skill:
    return Skill(
        name=name,
        description=f"{name} things",
        file_path=f"/skills/{name}/SKILL.md",
        base_dir=f"/skills/{name}",
        disable_model_invocation=hidden,
    )


class TestDefaultPrompt:
    def test_exact_layout(self) -> None:
        prompt = build(
            tools=DEFAULT_TOOLS,
            docs=DocsPaths(
                readme=Path("/pkg/README.md"), docs=Path("/pkg/docs"), examples=Path("/pkg/examples")
            ),
            append_system_prompt="Extra rules.",
            context_files=[ContextFile(path="/home/user/AGENTS.md", content="Use tabs.")],
            skills=[skill("pdf")],
            identity="You are Bob.",
        )
        assert prompt == (
            "You are Bob.\n"
            "\n"
            "Available tools:\n"
            "- read: Read file contents\n"
            "- bash: Execute bash commands (ls, grep, find, etc.)\n"
            "- edit: Make precise file edits with exact text replacement\n"
            "- write: Create or overwrite files\n"
            "\n"
            "In addition to the tools above, you may have access to other custom tools "
            "depending on the project.\n"
            "\n"
            "Guidelines:\n"
            "- Use bash for file operations like ls, rg, find\n"
            "- Use read to examine files instead of cat or sed.\n"
            "- Use write only for new files or complete rewrites.\n"
            "- Be concise in your responses\n"
            "- Show file paths clearly when working with files\n"
            "\n"
            "pi-host documentation (read it only when the user asks about pi-host itself: its plugins, "
            "hooks, settings, skills or prompt templates):\n"
            "- Main documentation: /pkg/README.md\n"
            "- Additional docs: /pkg/docs\n"
            "- Examples: /pkg/examples (plugins, custom tools, distributions)\n"
            "- Read the relevant .md files completely and follow their cross-references "
            "before building on pi-host\n"
            "\n"
            "Extra rules.\n"
            "\n"
            "# Project Context\n"
            "\n"
            "Project-specific instructions and guidelines:\n"
            "\n"
            "## /home/user/AGENTS.md\n"
            "\n"
            "Use tabs.\n"
            "\n"
            "\n"
            "\n"
            "The following skills provide specialized instructions for specific tasks.\n"
            "Use the read tool to load a skill's file when the task matches its description.\n"
            "When a skill file references a relative path, resolve it against the skill directory "
            "(parent of SKILL.md / dirname of the path) and use that absolute path in tool commands.\n"
            "\n"
            "<available_skills>\n"
            "  <skill>\n"
            "    <name>pdf</name>\n"
            "    <description>pdf things</description>\n"
            "    <location>/skills/pdf/SKILL.md</location>\n"
            "  </skill>\n"
            "</available_skills>\n"
            "Current date: 2026-03-04\n"
            "Current working directory: /home/user/project"
        )

    def test_identity_names_pi_host_by_default(self) -> None:
        assert build().startswith("You are an expert coding assistant running inside pi-host")

    def test_shows_none_for_no_tools_and_keeps_fixed_guidelines(self) -> None:
        prompt = build(tools=[])
        assert "Available tools:\n(none)\n" in prompt
        assert "- Be concise in your responses\n- Show file paths clearly when working with files" in prompt

    def test_lists_custom_tool_snippets_in_order(self) -> None:
        prompt = build(tools=[READ, FakeTool("dynamic_tool", "Run dynamic test behavior")])
        assert "- read: Read file contents\n- dynamic_tool: Run dynamic test behavior\n" in prompt

    def test_tools_without_snippet_are_not_listed(self) -> None:
        prompt = build(tools=[FakeTool("hidden"), FakeTool("blank", "   ")])
        assert "Available tools:\n(none)" in prompt

    def test_snippet_is_collapsed_to_one_line(self) -> None:
        prompt = build(tools=[FakeTool("multi", "First line\n  second\tline ")])
        assert "- multi: First line second line\n" in prompt

    def test_guidelines_are_trimmed_and_deduplicated(self) -> None:
        tools = [
            FakeTool(
                "a", None, ("Use dynamic_tool for summaries.", "  Use dynamic_tool for summaries.  ", "   ")
            ),
            FakeTool("b", None, ("Be concise in your responses",)),
        ]
        prompt = build(tools=tools)
        assert prompt.count("- Use dynamic_tool for summaries.") == 1
        assert prompt.count("- Be concise in your responses") == 1
        assert "-    \n" not in prompt

    @pytest.mark.parametrize(
        ("names", "expected", "absent"),
        [
            (("bash",), "Use bash for file operations like ls, rg, find", "Prefer grep/find/ls"),
            (
                ("bash", "grep"),
                "Prefer grep/find/ls tools over bash for file exploration",
                "Use bash for file",
            ),
            (("bash", "ls"), "Prefer grep/find/ls tools over bash for file exploration", "Use bash for file"),
            (("read", "grep"), None, "bash"),
        ],
    )
    def test_file_exploration_guideline_follows_active_tools(
        self, names: tuple[str, ...], expected: str | None, absent: str
    ) -> None:
        guidelines = build(tools=[FakeTool(n) for n in names]).split("Guidelines:\n", 1)[1]
        if expected is not None:
            assert expected in guidelines
        assert absent not in guidelines.split("\n\n", 1)[0]

    def test_documentation_section_only_lists_existing_entries(self) -> None:
        prompt = build(docs=DocsPaths(readme=Path("/pkg/README.md")))
        assert "- Main documentation: /pkg/README.md\n- Read the relevant" in prompt
        assert "Additional docs" not in prompt
        assert "pi-host documentation" not in build(docs=NO_DOCS)

    def test_find_docs_returns_existing_paths(self) -> None:
        docs = find_docs()
        for path in (docs.readme, docs.docs, docs.examples):
            assert path is None or path.exists()

    def test_several_appended_pieces_are_separated_by_blank_lines(self) -> None:
        prompt = build(append_system_prompt=["One.", "Two."])
        assert "\n\nOne.\n\nTwo.\nCurrent date" in prompt
        assert build(append_system_prompt=[]) == build()

    def test_pi_host_tool_fits_the_protocol(self) -> None:
        class NoParams(BaseModel):
            pass

        async def execute(params: NoParams, ctx: object) -> ToolResult:
            raise NotImplementedError

        tool = Tool(
            name="read",
            description="Read a file",
            parameters=NoParams,
            execute=execute,
            prompt_snippet="Read file contents",
            prompt_guidelines=("Use read to examine files.",),
        )
        prompt = build(tools=[tool])
        assert "- read: Read file contents" in prompt
        assert "- Use read to examine files." in prompt


class TestTailSections:
    def test_skills_need_the_read_tool(self) -> None:
        assert "<available_skills>" in build(tools=[READ], skills=[skill("pdf")])
        assert "<available_skills>" not in build(tools=[BASH], skills=[skill("pdf")])
        assert "<available_skills>" not in build(custom_prompt="Custom.", tools=[BASH], skills=[skill("pdf")])

    def test_hidden_skills_are_not_listed(self) -> None:
        prompt = build(tools=[READ], skills=[skill("shown"), skill("secret", hidden=True)])
        assert "<name>shown</name>" in prompt
        assert "secret" not in prompt

    def test_date_defaults_to_today_and_cwd_uses_forward_slashes(self) -> None:
        prompt = build_system_prompt(cwd="C:\\Users\\me\\proj", docs=NO_DOCS)
        assert prompt.endswith(
            f"\nCurrent date: {date.today().isoformat()}\nCurrent working directory: C:/Users/me/proj"
        )


class TestCustomPrompt:
    def test_replaces_the_body_but_keeps_the_tail(self) -> None:
        prompt = build(
            custom_prompt="You are a pirate.",
            tools=[READ],
            append_system_prompt="Say arr.",
            context_files=[ContextFile(path="/AGENTS.md", content="Rules.")],
            skills=[skill("map")],
        )
        assert prompt.startswith("You are a pirate.\n\nSay arr.\n\n# Project Context\n\n")
        assert "## /AGENTS.md\n\nRules.\n\n" in prompt
        assert "<name>map</name>" in prompt
        assert "Available tools" not in prompt
        assert "Guidelines" not in prompt
        assert prompt.endswith("\nCurrent date: 2026-03-04\nCurrent working directory: /home/user/project")

    def test_bare_custom_prompt(self) -> None:
        assert build(custom_prompt="Hi.") == (
            "Hi.\nCurrent date: 2026-03-04\nCurrent working directory: /home/user/project"
        )

    def test_empty_custom_prompt_means_default(self) -> None:
        assert build(custom_prompt="") == build()


class TestPromptSources:
    @pytest.fixture
    def dirs(self, tmp_path: Path) -> tuple[Path, Path]:
        agent = tmp_path / "agent"
        cwd = tmp_path / "project"
        (cwd / ".pi").mkdir(parents=True)
        agent.mkdir()
        return agent, cwd

    def test_nothing_configured(self, dirs: tuple[Path, Path]) -> None:
        agent, cwd = dirs
        sources = load_system_prompt_sources(cwd=cwd, agent_dir=agent, project_trusted=True)
        assert (sources.custom_prompt, sources.append, sources.diagnostics) == (None, (), ())

    def test_project_files_win_when_trusted(self, dirs: tuple[Path, Path]) -> None:
        agent, cwd = dirs
        (agent / "SYSTEM.md").write_text("global system")
        (agent / "APPEND_SYSTEM.md").write_text("global append")
        (cwd / ".pi" / "SYSTEM.md").write_text("project system")
        (cwd / ".pi" / "APPEND_SYSTEM.md").write_text("project append")
        trusted = load_system_prompt_sources(cwd=cwd, agent_dir=agent, project_trusted=True)
        assert (trusted.custom_prompt, trusted.append) == ("project system", ("project append",))
        untrusted = load_system_prompt_sources(cwd=cwd, agent_dir=agent, project_trusted=False)
        assert (untrusted.custom_prompt, untrusted.append) == ("global system", ("global append",))

    def test_command_line_values_override_discovered_files(self, dirs: tuple[Path, Path]) -> None:
        agent, cwd = dirs
        (agent / "SYSTEM.md").write_text("global system")
        (agent / "APPEND_SYSTEM.md").write_text("global append")
        (cwd / "extra.md").write_text("from a file")
        sources = load_system_prompt_sources(
            cwd=cwd,
            agent_dir=agent,
            project_trusted=True,
            system_prompt="Be a poet.",
            append_system_prompt=["extra.md", "Inline."],
        )
        assert sources.custom_prompt == "Be a poet."
        assert sources.append == ("from a file", "Inline.")

    def test_unreadable_file_is_reported_and_its_name_used(self, dirs: tuple[Path, Path]) -> None:
        agent, cwd = dirs
        (agent / "SYSTEM.md").mkdir()  # exists, cannot be read
        sources = load_system_prompt_sources(cwd=cwd, agent_dir=agent, project_trusted=True)
        assert sources.custom_prompt == str(agent / "SYSTEM.md")
        (problem,) = sources.diagnostics
        assert problem.message.startswith(f"Could not read system prompt file {agent / 'SYSTEM.md'}")


class TestResolvePromptInput:
    def test_file_relative_to_cwd(self, tmp_path: Path) -> None:
        (tmp_path / "prompt.md").write_text("from file")
        assert resolve_prompt_input("prompt.md", cwd=tmp_path) == "from file"
        assert resolve_prompt_input(str(tmp_path / "prompt.md")) == "from file"

    def test_text_that_is_not_a_file(self, tmp_path: Path) -> None:
        assert resolve_prompt_input("Be brief.", cwd=tmp_path) == "Be brief."
        long_text = "word " * 2000
        assert resolve_prompt_input(long_text, cwd=tmp_path) == long_text
        assert resolve_prompt_input("nul\x00inside", cwd=tmp_path) == "nul\x00inside"


class TestLoadResources:
    @pytest.fixture
    def dirs(self, tmp_path: Path) -> tuple[Path, Path, Path]:
        home = tmp_path / "home"
        agent = home / ".pi-host"
        cwd = tmp_path / "project"
        (agent / "skills" / "global-skill").mkdir(parents=True)
        (agent / "skills" / "global-skill" / "SKILL.md").write_text(
            "---\ndescription: Global skill.\n---\nG body"
        )
        (agent / "prompts").mkdir()
        (agent / "prompts" / "fix.md").write_text("Fix $1 carefully")
        (agent / "AGENTS.md").write_text("Global rules.")
        (cwd / ".pi" / "library" / "local-skill").mkdir(parents=True)
        (cwd / ".pi" / "library" / "local-skill" / "SKILL.md").write_text(
            "---\ndescription: Local.\n---\nL body"
        )
        (cwd / ".pi" / "settings.json").write_text('{"skills": ["library"]}')
        (cwd / ".pi" / "APPEND_SYSTEM.md").write_text("Project appendix.")
        (cwd / "AGENTS.md").write_text("Project rules.")
        return home, agent, cwd

    def test_trusted_project(self, dirs: tuple[Path, Path, Path]) -> None:
        home, agent, cwd = dirs
        settings = SettingsManager.load(cwd, agent, project_trusted=True)
        resources = load_resources(cwd=cwd, agent_dir=agent, settings=settings, home=home)
        assert [s.name for s in resources.skills] == ["local-skill", "global-skill"]
        assert [t.name for t in resources.prompt_templates] == ["fix"]
        assert [Path(f.path).name for f in resources.context_files] == ["AGENTS.md", "AGENTS.md"]
        assert resources.append_system_prompt == ("Project appendix.",)
        assert resources.diagnostics == ()
        prompt = resources.system_prompt([READ, BASH], today=DAY, docs=NO_DOCS)
        assert "\n\nProject appendix.\n\n# Project Context\n\n" in prompt
        assert "<name>local-skill</name>" in prompt
        assert prompt.endswith(f"Current working directory: {cwd}")
        assert resources.expand_input("/fix main.py") == "Fix main.py carefully"
        assert resources.expand_input("/skill:global-skill now").endswith("G body\n</skill>\n\nnow")

    def test_untrusted_project_and_switches(self, dirs: tuple[Path, Path, Path]) -> None:
        home, agent, cwd = dirs
        settings = SettingsManager.load(cwd, agent, project_trusted=False)
        options = ResourceOptions(
            context_files=False,
            prompt_templates=False,
            system_prompt="Custom.",
            append_system_prompt=("Flag appendix.",),
        )
        resources = load_resources(cwd=cwd, agent_dir=agent, settings=settings, options=options, home=home)
        assert [s.name for s in resources.skills] == ["global-skill"]
        assert resources.prompt_templates == ()
        assert resources.context_files == ()
        assert resources.system_prompt([READ], today=DAY) == (
            "Custom.\n\nFlag appendix."
            + format_skills_for_prompt(resources.skills)
            + f"\nCurrent date: 2026-03-04\nCurrent working directory: {cwd}"
        )


def test_package_exports_are_explicit() -> None:
    import pi_host.resources as resources

    for name in resources.__all__:
        getattr(resources, name)  # names are imported on first access
    helpers = {"annotations", "importlib", "TYPE_CHECKING", "Any"}
    public = {name for name in vars(resources) if not name.startswith("_")} - helpers
    assert set(resources.__all__) == public
    assert set(dir(resources)) == set(resources.__all__)
    assert len(resources.__all__) == len(set(resources.__all__))


def test_same_prompt_as_pi_apart_from_identity_and_docs(tmp_path: Path) -> None:
    script = tmp_path / "pi_prompt.mjs"
    module = (require_pi_package() / "dist" / "core" / "system-prompt.js").as_uri()
    script.write_text(
        f'import {{ buildSystemPrompt }} from "{module}";\n'
        "const cases = JSON.parse(process.argv[2]);\n"
        "process.stdout.write(JSON.stringify(cases.map((c) => buildSystemPrompt(c))));\n"
    )
    context = [{"path": "/repo/AGENTS.md", "content": "Tabs."}]
    skills: list[dict[str, Any]] = [
        {"name": "a&b", "description": "<x>", "filePath": "/s/SKILL.md", "baseDir": "/s"},
        {
            "name": "h",
            "description": "d",
            "filePath": "/h/SKILL.md",
            "baseDir": "/h",
            "disableModelInvocation": True,
        },
    ]
    cases: list[dict[str, Any]] = [
        {"selectedTools": [], "toolSnippets": {}},
        {
            "selectedTools": ["read", "bash", "edit", "write"],
            "toolSnippets": {t.name: t.prompt_snippet for t in DEFAULT_TOOLS},
            "promptGuidelines": [g for t in DEFAULT_TOOLS for g in t.prompt_guidelines],
            "appendSystemPrompt": "More.",
            "contextFiles": context,
            "skills": skills,
        },
        {"selectedTools": ["bash", "grep"], "toolSnippets": {"grep": "Search"}, "skills": skills},
        {"customPrompt": "Custom.", "selectedTools": ["read"], "contextFiles": context, "skills": skills},
        {"customPrompt": "Custom.", "selectedTools": ["bash"], "appendSystemPrompt": "A.", "skills": skills},
    ]
    for case in cases:
        case["cwd"] = "/repo/sub"
    output = subprocess.run(
        ["node", str(script), json.dumps(cases)], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    pi_prompts = json.loads(output)
    pi_skills = [
        Skill(
            name=s["name"],
            description=s["description"],
            file_path=s["filePath"],
            base_dir=s["baseDir"],
            disable_model_invocation=s.get("disableModelInvocation", False),
        )
        for s in skills
    ]
    for case, pi_prompt in zip(cases, pi_prompts, strict=True):
        snippets = case.get("toolSnippets", {})
        guidelines = case.get("promptGuidelines", [])
        tools = [
            FakeTool(name, snippets.get(name), tuple(guidelines) if i == 0 else ())
            for i, name in enumerate(case["selectedTools"])
        ]
        ours = build_system_prompt(
            cwd=case["cwd"],
            tools=tools,
            custom_prompt=case.get("customPrompt"),
            append_system_prompt=case.get("appendSystemPrompt"),
            context_files=[ContextFile(**c) for c in case.get("contextFiles", [])],
            skills=pi_skills if case.get("skills") else [],
            docs=NO_DOCS,
        )
        if "customPrompt" not in case:
            # Our identity line and documentation section are pi-host's own; the rest must agree.
            pi_identity, pi_rest = pi_prompt.split("\n", 1)
            assert pi_identity.startswith("You are an expert coding assistant operating inside pi")
            head, _, tail = pi_rest.partition("\n\nPi documentation")
            pi_prompt = DEFAULT_IDENTITY + "\n" + head + _after_docs(tail)
        assert ours == pi_prompt


def _after_docs(tail: str) -> str:
    """What follows pi's documentation section (its last bullet starts "- Always read pi")."""
    marker = "\n- Always read pi"
    rest = tail[tail.index(marker) + len(marker) :]
    return rest[rest.index("\n") :] if "\n" in rest else ""
