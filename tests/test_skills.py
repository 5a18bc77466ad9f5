"""Skills: SKILL.md frontmatter, validation, discovery, the prompt section and /skill: expansion.

Ported from pi's ``skills.test.ts`` and ``frontmatter.test.ts`` scenarios, on real files.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_host.resources import (
    FrontmatterError,
    Skill,
    SkillExpansionError,
    discover_skills,
    expand_skill_command,
    format_skills_for_prompt,
    load_skill_file,
    load_skills,
    load_skills_from_dir,
    parse_frontmatter,
    strip_frontmatter,
)


def write_skill(directory: Path, header: str | None, body: str = "# Skill\n\nDo the thing.\n") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "SKILL.md"
    text = body if header is None else f"---\n{header}\n---\n\n{body}"
    path.write_text(text, encoding="utf-8")
    return path


def messages(result_diagnostics: object) -> list[str]:
    return [d.message for d in result_diagnostics]  # type: ignore[attr-defined]


def make_skill(name: str, description: str = "A test skill.", *, hidden: bool = False) -> Skill:
    return Skill(
        name=name,
        description=description,
        file_path=f"/path/{name}/SKILL.md",
        base_dir=f"/path/{name}",
        disable_model_invocation=hidden,
    )


# --- frontmatter ----------------------------------------------------------------------------


class TestFrontmatter:
    def test_parses_keys_strips_quotes_and_returns_body(self) -> None:
        parsed = parse_frontmatter(
            "---\nname: \"skill-name\"\ndescription: 'A desc'\nfoo-bar: value\n---\n\nBody text"
        )
        assert parsed.data == {"name": "skill-name", "description": "A desc", "foo-bar": "value"}
        assert parsed.body == "Body text"

    def test_normalizes_crlf(self) -> None:
        parsed = parse_frontmatter("---\r\nname: test\r\n---\r\nLine one\r\nLine two")
        assert parsed.data == {"name": "test"}
        assert parsed.body == "Line one\nLine two"

    def test_literal_block_scalar_keeps_lines_and_final_newline(self) -> None:
        parsed = parse_frontmatter("---\ndescription: |\n  Line one\n  Line two\n---\n\nBody")
        assert parsed.data["description"] == "Line one\nLine two\n"
        assert parsed.body == "Body"

    def test_folded_block_scalar_and_chomping(self) -> None:
        parsed = parse_frontmatter("---\na: >\n  one\n  two\n\n  para\nb: |-\n  x\n    y\nc: >-\n  z\n---\n")
        assert parsed.data == {"a": "one two\npara\n", "b": "x\n  y", "c": "z"}

    def test_plain_scalar_continues_on_indented_lines(self) -> None:
        parsed = parse_frontmatter("---\ndescription: first part\n  second part # note\nname: x\n---\n")
        assert parsed.data == {"description": "first part second part", "name": "x"}

    def test_core_schema_types_and_nested_collections(self) -> None:
        parsed = parse_frontmatter(
            "---\nflag: true\nnone: ~\nint: 12\nfloat: 1.0\nword: yes\n"
            "metadata:\n  author: me\n  tags:\n  - a\n  - key: v\n    other: w\n"
            "tools: [Bash, 'Read', \"Edit\"]\nmap: {a: 1, b: [x]}\n---\n"
        )
        assert parsed.data == {
            "flag": True,
            "none": None,
            "int": 12,
            "float": 1.0,
            "word": "yes",
            "metadata": {"author": "me", "tags": ["a", {"key": "v", "other": "w"}]},
            "tools": ["Bash", "Read", "Edit"],
            "map": {"a": 1, "b": ["x"]},
        }

    def test_quoted_scalars_fold_and_unescape(self) -> None:
        parsed = parse_frontmatter(
            "---\nd: \"line one\n  line two\n\n  three \\u00e9\\t!\"\ns: 'it''s\n  folded'\n---\n"
        )
        assert parsed.data == {"d": "line one line two\nthree é\t!", "s": "it's folded"}

    def test_missing_or_unterminated_frontmatter_leaves_text_untrimmed(self) -> None:
        assert parse_frontmatter("Just text\nsecond line").body == "Just text\nsecond line"
        unterminated = parse_frontmatter("---\nname: test\nBody without terminator")
        assert unterminated.data == {}
        assert unterminated.body == "---\nname: test\nBody without terminator"

    def test_empty_frontmatter_gives_empty_mapping_and_trimmed_body(self) -> None:
        assert parse_frontmatter("---\n---\n\nBody\n") == parse_frontmatter("---\n---\n\nBody\n")
        parsed = parse_frontmatter("---\n---\n\nBody\n")
        assert parsed.data == {}
        assert parsed.body == "Body"

    def test_strip_frontmatter(self) -> None:
        assert strip_frontmatter("---\nkey: value\n---\n\nBody\n") == "Body"
        assert strip_frontmatter("\n  No frontmatter body  \n") == "\n  No frontmatter body  \n"

    @pytest.mark.parametrize(
        ("yaml", "expected"),
        [
            # Found by comparing with pi's YAML parser (the npm "yaml" package) on random documents.
            ("k:\n- \n- a\n- #c\n- b", {"k": [None, "a", None, "b"]}),
            ("k: |+\n  x\n\n", {"k": "x\n\n"}),
            ("k: |+\n  x\n  ", {"k": "x\n"}),
            ("k: >+\n  ", {"k": "\n"}),
            ("k: |+\n", {"k": ""}),
            ("k: a\n\n  b", {"k": "a\nb"}),
        ],
    )
    def test_edge_cases_match_pis_parser(self, yaml: str, expected: dict[str, object]) -> None:
        assert parse_frontmatter(f"---\n{yaml}\n---\nBody").data == expected

    @pytest.mark.parametrize(
        ("header", "reason"),
        [
            ("foo: [bar", "Flow sequence must end with a ]"),
            ("name: a: b", "Nested mappings are not allowed"),
            ("name: x\nname: y", "Map keys must be unique"),
            ("\tname: x", "Tabs are not allowed"),
            ("name: &anchor x", "anchors are not supported"),
            ('name: "open', "Missing closing"),
            ("key: v\nnot a pair", "Implicit map keys"),
            ("just a line\nkey: v", "single line"),
            ("key: v\n  bad: indent", "single line"),
            ('d: "bad \\q escape"', "Invalid escape"),
            ("k: a\n  {x: y}", "single line"),
            ('k: "open\nnext: "', "Missing closing"),
            ("k: #\n  ]", "Unexpected ']'"),
        ],
    )
    def test_invalid_yaml_raises_with_position(self, header: str, reason: str) -> None:
        with pytest.raises(FrontmatterError) as info:
            parse_frontmatter(f"---\n{header}\n---\nBody")
        assert reason in str(info.value)
        assert " at line " in str(info.value)
        assert info.value.line >= 2  # positions count from the file's first line


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab :-#'\"|>[]{},\n\t\\&*!?%@~0.1")), max_size=60))
def test_any_frontmatter_either_parses_or_raises_frontmatter_error(text: str) -> None:
    try:
        parse_frontmatter(f"---\n{text}\n---\nBody")
    except FrontmatterError:
        pass


# --- loading one directory ------------------------------------------------------------------


class TestLoadSkillsFromDir:
    def test_loads_a_valid_skill(self, tmp_path: Path) -> None:
        write_skill(
            tmp_path / "valid-skill", "name: valid-skill\ndescription: A valid skill for testing purposes."
        )
        result = load_skills_from_dir(tmp_path / "valid-skill")
        assert [s.name for s in result.skills] == ["valid-skill"]
        skill = result.skills[0]
        assert skill.description == "A valid skill for testing purposes."
        assert skill.file_path == str(tmp_path / "valid-skill" / "SKILL.md")
        assert skill.base_dir == str(tmp_path / "valid-skill")
        assert skill.disable_model_invocation is False
        assert result.diagnostics == ()

    def test_warns_when_name_does_not_match_directory(self, tmp_path: Path) -> None:
        write_skill(tmp_path / "name-mismatch", "name: different-name\ndescription: Mismatch.")
        result = load_skills_from_dir(tmp_path / "name-mismatch")
        assert [s.name for s in result.skills] == ["different-name"]
        assert messages(result.diagnostics) == [
            'name "different-name" does not match parent directory "name-mismatch"'
        ]

    def test_warns_on_invalid_characters(self, tmp_path: Path) -> None:
        write_skill(tmp_path / "Invalid_Name", "name: Invalid_Name\ndescription: Bad chars.")
        result = load_skills_from_dir(tmp_path / "Invalid_Name")
        assert len(result.skills) == 1
        assert any("invalid characters" in m for m in messages(result.diagnostics))

    def test_warns_when_name_exceeds_64_characters(self, tmp_path: Path) -> None:
        name = "a" * 70
        write_skill(tmp_path / name, f"name: {name}\ndescription: Long name.")
        result = load_skills_from_dir(tmp_path / name)
        assert len(result.skills) == 1
        assert "name exceeds 64 characters (70)" in messages(result.diagnostics)

    def test_warns_on_hyphen_rules(self, tmp_path: Path) -> None:
        write_skill(tmp_path / "a--b", "name: a--b\ndescription: Hyphens.")
        write_skill(tmp_path / "-edge-", "name: -edge-\ndescription: Hyphens.")
        found = messages(load_skills_from_dir(tmp_path).diagnostics)
        assert "name must not contain consecutive hyphens" in found
        assert "name must not start or end with a hyphen" in found

    def test_skips_skill_without_description(self, tmp_path: Path) -> None:
        write_skill(tmp_path / "missing-description", "name: missing-description")
        result = load_skills_from_dir(tmp_path / "missing-description")
        assert result.skills == ()
        assert "description is required" in messages(result.diagnostics)

    def test_skips_files_without_frontmatter(self, tmp_path: Path) -> None:
        write_skill(tmp_path / "no-frontmatter", None)
        result = load_skills_from_dir(tmp_path / "no-frontmatter")
        assert result.skills == ()
        assert "description is required" in messages(result.diagnostics)

    def test_skips_skill_with_invalid_yaml(self, tmp_path: Path) -> None:
        write_skill(tmp_path / "invalid-yaml", "name: invalid-yaml\ndescription: [unclosed bracket")
        result = load_skills_from_dir(tmp_path / "invalid-yaml")
        assert result.skills == ()
        assert any("at line" in m for m in messages(result.diagnostics))

    def test_warns_but_loads_overlong_description(self, tmp_path: Path) -> None:
        write_skill(tmp_path / "wordy", "description: " + "x" * 1030)
        result = load_skills_from_dir(tmp_path / "wordy")
        assert len(result.skills) == 1
        assert messages(result.diagnostics) == ["description exceeds 1024 characters (1030)"]

    def test_ignores_unknown_frontmatter_fields(self, tmp_path: Path) -> None:
        write_skill(
            tmp_path / "unknown-field",
            "name: unknown-field\ndescription: Unknown field.\nauthor: someone\nversion: 1.0\n"
            "metadata:\n  team: x\nallowed-tools: Bash Read",
        )
        result = load_skills_from_dir(tmp_path / "unknown-field")
        assert len(result.skills) == 1
        assert result.diagnostics == ()

    def test_preserves_multiline_descriptions(self, tmp_path: Path) -> None:
        write_skill(
            tmp_path / "multiline-description",
            "name: multiline-description\n"
            "description: |\n  This is a multiline description.\n  It spans lines.",
        )
        result = load_skills_from_dir(tmp_path / "multiline-description")
        assert result.skills[0].description == "This is a multiline description.\nIt spans lines.\n"
        assert result.diagnostics == ()

    def test_loads_nested_skills_recursively(self, tmp_path: Path) -> None:
        write_skill(tmp_path / "nested" / "child-skill", "name: child-skill\ndescription: Child.")
        result = load_skills_from_dir(tmp_path / "nested")
        assert [s.name for s in result.skills] == ["child-skill"]
        assert result.diagnostics == ()

    def test_root_skill_md_wins_over_nested_ones(self, tmp_path: Path) -> None:
        root = tmp_path / "root-skill-preferred"
        write_skill(root, "name: root-skill-preferred\ndescription: Root skill should win.")
        write_skill(root / "nested-child", "name: nested-child\ndescription: Never loaded.")
        result = load_skills_from_dir(root)
        assert [(s.name, s.description) for s in result.skills] == [
            ("root-skill-preferred", "Root skill should win.")
        ]

    def test_directory_name_used_when_name_missing(self, tmp_path: Path) -> None:
        write_skill(tmp_path / "valid-skill", "description: Named by its directory.")
        result = load_skills_from_dir(tmp_path / "valid-skill")
        assert [s.name for s in result.skills] == ["valid-skill"]
        assert result.diagnostics == ()

    def test_non_text_name_falls_back_to_directory(self, tmp_path: Path) -> None:
        write_skill(tmp_path / "numbers", "name: 123\ndescription: Numeric name.")
        result = load_skills_from_dir(tmp_path / "numbers")
        assert [s.name for s in result.skills] == ["numbers"]
        assert messages(result.diagnostics) == ["name must be text; using the directory name"]

    def test_parses_disable_model_invocation(self, tmp_path: Path) -> None:
        write_skill(
            tmp_path / "disable-model-invocation",
            "name: disable-model-invocation\ndescription: Hidden.\ndisable-model-invocation: true",
        )
        result = load_skills_from_dir(tmp_path / "disable-model-invocation")
        assert result.skills[0].disable_model_invocation is True
        assert result.diagnostics == ()

    def test_only_literal_true_disables_model_invocation(self, tmp_path: Path) -> None:
        write_skill(tmp_path / "quoted", 'name: quoted\ndescription: Q.\ndisable-model-invocation: "true"')
        assert load_skills_from_dir(tmp_path / "quoted").skills[0].disable_model_invocation is False

    def test_missing_directory_gives_nothing(self, tmp_path: Path) -> None:
        result = load_skills_from_dir(tmp_path / "non" / "existent")
        assert result.skills == ()
        assert result.diagnostics == ()

    def test_root_markdown_files_are_skills(self, tmp_path: Path) -> None:
        (tmp_path / "quick.md").write_text("---\ndescription: A root file skill.\n---\nBody\n")
        (tmp_path / "notes.txt").write_text("not a skill")
        result = load_skills_from_dir(tmp_path)
        assert [s.name for s in result.skills] == [tmp_path.name]
        assert result.skills[0].file_path == str(tmp_path / "quick.md")

    def test_only_root_markdown_files_count(self, tmp_path: Path) -> None:
        (tmp_path / "sub").mkdir()
        (tmp_path / "sub" / "deep.md").write_text("---\ndescription: Not a skill.\n---\n")
        assert load_skills_from_dir(tmp_path).skills == ()

    def test_skips_dot_entries_node_modules_and_ignored_paths(self, tmp_path: Path) -> None:
        write_skill(tmp_path / ".hidden" / "secret", "description: Hidden.")
        write_skill(tmp_path / "node_modules" / "dep", "description: Dependency.")
        write_skill(tmp_path / "build" / "generated", "description: Ignored.")
        write_skill(tmp_path / "kept", "description: Kept.")
        write_skill(tmp_path / "group" / "drafts" / "draft", "description: Ignored by a nested rule.")
        write_skill(tmp_path / "group" / "final", "description: Kept too.")
        (tmp_path / ".gitignore").write_text("# build output\nbuild/\n")
        (tmp_path / "group" / ".ignore").write_text("drafts\n")
        result = load_skills_from_dir(tmp_path)
        assert sorted(s.name for s in result.skills) == ["final", "kept"]

    def test_negated_ignore_rule_re_includes(self, tmp_path: Path) -> None:
        write_skill(tmp_path / "alpha", "description: A.")
        write_skill(tmp_path / "beta", "description: B.")
        (tmp_path / ".gitignore").write_text("*\n!beta/\n!beta/SKILL.md\n")
        assert [s.name for s in load_skills_from_dir(tmp_path).skills] == ["beta"]

    def test_symlink_loop_terminates(self, tmp_path: Path) -> None:
        write_skill(tmp_path / "group" / "real", "description: Real.")
        os.symlink(tmp_path / "group", tmp_path / "group" / "loop")
        assert [s.name for s in load_skills_from_dir(tmp_path).skills] == ["real"]

    def test_unreadable_invalid_utf8_still_loads(self, tmp_path: Path) -> None:
        directory = tmp_path / "bytes"
        directory.mkdir()
        (directory / "SKILL.md").write_bytes(b"---\ndescription: caf\xe9\n---\nBody\n")
        result = load_skills_from_dir(directory)
        assert result.skills[0].description == "caf\ufffd"


# --- the prompt section ---------------------------------------------------------------------


class TestFormatSkillsForPrompt:
    def test_empty_for_no_skills(self) -> None:
        assert format_skills_for_prompt([]) == ""

    def test_exact_format(self) -> None:
        assert format_skills_for_prompt([make_skill("test-skill")]) == (
            "\n\nThe following skills provide specialized instructions for specific tasks.\n"
            "Use the read tool to load a skill's file when the task matches its description.\n"
            "When a skill file references a relative path, resolve it against the skill directory "
            "(parent of SKILL.md / dirname of the path) and use that absolute path in tool commands.\n"
            "\n"
            "<available_skills>\n"
            "  <skill>\n"
            "    <name>test-skill</name>\n"
            "    <description>A test skill.</description>\n"
            "    <location>/path/test-skill/SKILL.md</location>\n"
            "  </skill>\n"
            "</available_skills>"
        )

    def test_escapes_xml(self) -> None:
        result = format_skills_for_prompt([make_skill("x", "A skill with <special> & \"characters\" 'q'.")])
        assert "A skill with &lt;special&gt; &amp; &quot;characters&quot; &apos;q&apos;." in result

    def test_formats_several_and_hides_disabled(self) -> None:
        result = format_skills_for_prompt(
            [make_skill("skill-one"), make_skill("hidden", hidden=True), make_skill("skill-two")]
        )
        assert result.count("<skill>") == 2
        assert "<name>hidden</name>" not in result
        assert result.index("skill-one") < result.index("skill-two")

    def test_empty_when_every_skill_is_hidden(self) -> None:
        assert format_skills_for_prompt([make_skill("hidden", hidden=True)]) == ""


# --- explicit paths and discovery -----------------------------------------------------------


class TestLoadSkills:
    def test_loads_explicit_directory_and_file(self, tmp_path: Path) -> None:
        write_skill(tmp_path / "valid-skill", "description: Valid.")
        single = write_skill(tmp_path / "other", "description: Other.")
        result = load_skills(["valid-skill", single], cwd=tmp_path)
        assert [s.name for s in result.skills] == ["valid-skill", "other"]
        assert all(s.scope == "temporary" for s in result.skills)
        assert result.diagnostics == ()

    def test_reports_missing_path_and_non_markdown(self, tmp_path: Path) -> None:
        (tmp_path / "notes.txt").write_text("x")
        result = load_skills(["/non/existent/path", "notes.txt"], cwd=tmp_path)
        assert result.skills == ()
        assert messages(result.diagnostics) == [
            "skill path does not exist",
            "skill path is not a markdown file",
        ]

    def test_expands_tilde(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("HOME", str(tmp_path))
        write_skill(tmp_path / "skills" / "homey", "description: From home.")
        with_tilde = load_skills(["~/skills"], cwd="/")
        assert [s.name for s in with_tilde.skills] == ["homey"]

    def test_name_collision_keeps_first(self, tmp_path: Path) -> None:
        first = write_skill(tmp_path / "first" / "calendar", "description: First.")
        second = write_skill(tmp_path / "second" / "calendar", "description: Second.")
        result = load_skills([tmp_path / "first", tmp_path / "second"], cwd=tmp_path)
        assert [s.description for s in result.skills] == ["First."]
        (collision,) = result.diagnostics
        assert collision.type == "collision"
        assert collision.message == 'name "calendar" collision'
        assert collision.collision is not None
        assert collision.collision.winner_path == str(first)
        assert collision.collision.loser_path == str(second)

    def test_same_file_through_symlink_is_loaded_once_silently(self, tmp_path: Path) -> None:
        write_skill(tmp_path / "real" / "tool", "description: Real.")
        os.symlink(tmp_path / "real", tmp_path / "alias")
        result = load_skills([tmp_path / "real", tmp_path / "alias"], cwd=tmp_path)
        assert [s.name for s in result.skills] == ["tool"]
        assert result.diagnostics == ()


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    home = tmp_path / "home"
    agent = home / ".pi-host"
    repo = tmp_path / "work" / "repo"
    cwd = repo / "pkg"
    for path in (agent, cwd, repo / ".git"):
        path.mkdir(parents=True)
    return {"home": home, "agent": agent, "repo": repo, "cwd": cwd, "outside": tmp_path / "work"}


def discover(layout: dict[str, Path], *, trusted: bool = True, **kwargs: object) -> list[tuple[str, str]]:
    result = discover_skills(
        cwd=layout["cwd"],
        agent_dir=layout["agent"],
        project_trusted=trusted,
        home=layout["home"],
        **kwargs,  # type: ignore[arg-type]
    )
    return [(s.name, s.scope) for s in result.skills]


class TestDiscoverSkills:
    def test_all_default_locations_in_precedence_order(self, layout: dict[str, Path]) -> None:
        write_skill(layout["cwd"] / ".pi" / "skills" / "proj-pi", "description: P.")
        write_skill(layout["cwd"] / ".agents" / "skills" / "proj-agents", "description: PA.")
        write_skill(layout["repo"] / ".agents" / "skills" / "repo-agents", "description: RA.")
        write_skill(layout["outside"] / ".agents" / "skills" / "above-git-root", "description: No.")
        write_skill(layout["agent"] / "skills" / "user-pi", "description: U.")
        write_skill(layout["home"] / ".agents" / "skills" / "user-agents", "description: UA.")
        assert discover(layout) == [
            ("proj-pi", "project"),
            ("proj-agents", "project"),
            ("repo-agents", "project"),
            ("user-pi", "user"),
            ("user-agents", "user"),
        ]

    def test_untrusted_project_contributes_nothing(self, layout: dict[str, Path]) -> None:
        write_skill(layout["cwd"] / ".pi" / "skills" / "proj-pi", "description: P.")
        write_skill(layout["cwd"] / ".agents" / "skills" / "proj-agents", "description: PA.")
        write_skill(layout["agent"] / "skills" / "user-pi", "description: U.")
        assert discover(layout, trusted=False) == [("user-pi", "user")]

    def test_project_skill_wins_name_collision(self, layout: dict[str, Path]) -> None:
        write_skill(layout["cwd"] / ".pi" / "skills" / "same", "description: Project.")
        write_skill(layout["agent"] / "skills" / "same", "description: User.")
        result = discover_skills(
            cwd=layout["cwd"], agent_dir=layout["agent"], project_trusted=True, home=layout["home"]
        )
        assert [s.description for s in result.skills] == ["Project."]
        assert [d.type for d in result.diagnostics] == ["collision"]

    def test_agents_dirs_ignore_root_markdown_files(self, layout: dict[str, Path]) -> None:
        (layout["home"] / ".agents" / "skills").mkdir(parents=True)
        (layout["home"] / ".agents" / "skills" / "loose.md").write_text("---\ndescription: Loose.\n---\n")
        (layout["agent"] / "skills").mkdir()
        (layout["agent"] / "skills" / "loose-pi.md").write_text("---\ndescription: Loose.\n---\n")
        assert discover(layout) == [("skills", "user")]

    def test_settings_entries_resolve_against_their_scope(self, layout: dict[str, Path]) -> None:
        write_skill(layout["agent"] / "extra" / "from-global", "description: G.")
        write_skill(layout["cwd"] / ".pi" / "more" / "from-project", "description: P.")
        assert discover(layout, global_entries=["extra"], project_entries=["more"]) == [
            ("from-project", "project"),
            ("from-global", "user"),
        ]

    def test_settings_overrides_filter_auto_discovered_skills(self, layout: dict[str, Path]) -> None:
        for name in ("keep", "drop", "drafty"):
            write_skill(layout["agent"] / "skills" / name, "description: X.")
        entries = ["!drop", "!draft*", "+skills/drafty"]
        assert sorted(discover(layout, global_entries=entries)) == [("drafty", "user"), ("keep", "user")]

    def test_settings_globs_filter_listed_paths(self, layout: dict[str, Path]) -> None:
        for name in ("alpha", "beta"):
            write_skill(layout["agent"] / "lib" / name, "description: X.")
        assert discover(layout, global_entries=["lib", "lib/alpha/*"]) == [("alpha", "user")]

    def test_force_exclude_beats_everything(self, layout: dict[str, Path]) -> None:
        write_skill(layout["agent"] / "skills" / "gone", "description: X.")
        assert discover(layout, global_entries=["+skills/gone", "-skills/gone"]) == []

    def test_no_defaults_still_loads_extra_paths(self, layout: dict[str, Path], tmp_path: Path) -> None:
        write_skill(layout["agent"] / "skills" / "user-pi", "description: U.")
        write_skill(tmp_path / "cli" / "from-cli", "description: C.")
        result = discover_skills(
            cwd=layout["cwd"],
            agent_dir=layout["agent"],
            project_trusted=True,
            home=layout["home"],
            extra_paths=[tmp_path / "cli", "missing-dir"],
            include_defaults=False,
        )
        assert [(s.name, s.scope) for s in result.skills] == [("from-cli", "temporary")]
        (missing,) = result.diagnostics
        assert missing.type == "error"
        assert missing.path == str(layout["cwd"] / "missing-dir")

    def test_extra_paths_lose_collisions_to_discovered_skills(
        self, layout: dict[str, Path], tmp_path: Path
    ) -> None:
        write_skill(layout["agent"] / "skills" / "dup", "description: Discovered.")
        write_skill(tmp_path / "cli" / "dup", "description: Explicit.")
        result = discover_skills(
            cwd=layout["cwd"],
            agent_dir=layout["agent"],
            project_trusted=True,
            home=layout["home"],
            extra_paths=[tmp_path / "cli"],
        )
        assert [s.description for s in result.skills] == ["Discovered."]


# --- /skill: expansion ----------------------------------------------------------------------


class TestExpandSkillCommand:
    @pytest.fixture
    def skill(self, tmp_path: Path) -> Skill:
        path = write_skill(
            tmp_path / "brave", "name: brave\ndescription: Search.", "\n# Brave\n\nRun it.\n\n"
        )
        loaded, _ = load_skill_file(path)
        assert loaded is not None
        return loaded

    def test_expands_to_skill_block_with_arguments(self, skill: Skill) -> None:
        assert expand_skill_command("/skill:brave   find cats  ", [skill]) == (
            f'<skill name="brave" location="{skill.file_path}">\n'
            f"References are relative to {skill.base_dir}.\n\n"
            "# Brave\n\nRun it.\n</skill>\n\nfind cats"
        )

    def test_without_arguments(self, skill: Skill) -> None:
        assert expand_skill_command("/skill:brave", [skill]).endswith("Run it.\n</skill>")

    def test_unknown_skill_and_other_text_pass_through(self, skill: Skill) -> None:
        assert expand_skill_command("/skill:nope go", [skill]) == "/skill:nope go"
        assert expand_skill_command("hello /skill:brave", [skill]) == "hello /skill:brave"
        assert expand_skill_command("/brave", [skill]) == "/brave"

    def test_unreadable_skill_raises(self, skill: Skill) -> None:
        Path(skill.file_path).unlink()
        with pytest.raises(SkillExpansionError) as info:
            expand_skill_command("/skill:brave", [skill])
        assert info.value.skill == skill
        assert skill.file_path in str(info.value)


def test_the_diagnostic_models_resolve_lazily_to_one_set_of_classes() -> None:
    import pi_host
    import pi_host.resources
    from pi_host.resources import _diagnostic_models, _diagnostics

    for name in ("ResourceCollision", "ResourceDiagnostic"):
        model = getattr(_diagnostic_models, name)
        assert getattr(_diagnostics, name) is model
        assert getattr(pi_host.resources, name) is model
    assert not hasattr(pi_host, "ResourceDiagnostic")  # a resource-loader internal, not public
    found = _diagnostics.diagnostic("warning", "unreadable", Path("a") / "b.md")
    assert found == _diagnostic_models.ResourceDiagnostic(
        type="warning", message="unreadable", path=str(Path("a") / "b.md")
    )
