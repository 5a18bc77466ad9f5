"""Prompt templates: argument splitting, substitution, loading, discovery and /name expansion.

Ported from pi's ``prompt-templates.test.ts`` scenarios, plus discovery on real files.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_host.resources import (
    PromptTemplate,
    discover_prompt_templates,
    expand_prompt_template,
    load_prompt_template,
    load_prompt_templates,
    parse_command_args,
    substitute_args,
)


class TestSubstituteArgs:
    @pytest.mark.parametrize(
        ("template", "args", "expected"),
        [
            ("Test: $ARGUMENTS", ["a", "b", "c"], "Test: a b c"),
            ("Test: $@", ["a", "b", "c"], "Test: a b c"),
            ("$1: $ARGUMENTS", ["prefix", "a", "b"], "prefix: prefix a b"),
            ("$1: $@", ["prefix", "a", "b"], "prefix: prefix a b"),
            ("Test: $ARGUMENTS", [], "Test: "),
            ("Test: $@", [], "Test: "),
            ("Test: $1", [], "Test: "),
            ("$ARGUMENTS and $ARGUMENTS", ["a", "b"], "a b and a b"),
            ("$@ and $ARGUMENTS", ["a", "b"], "a b and a b"),
            ("$1 $2: $ARGUMENTS", ["arg100", "@user"], "arg100 @user: arg100 @user"),
            ("$1 $2 $3 $4 $5", ["a", "b"], "a b   "),
            ("$ARGUMENTS", ["日本語", "🎉", "café"], "日本語 🎉 café"),
            ("$1 $2", ["line1\nline2", "tab\tthere"], "line1\nline2 tab\tthere"),
            ("$1$2", ["a", "b"], "ab"),
            ("$0", ["a", "b"], ""),
            ("$1.5", ["a"], "a.5"),
            ("pre$ARGUMENTS", ["a", "b"], "prea b"),
            ("pre$@", ["a", "b"], "prea b"),
            ("$ARGUMENTS", ["a", "", "c"], "a  c"),
            ("$ARGUMENTS", ["  leading  ", "trailing  "], "  leading   trailing  "),
            ("Prefix $ARGUMENTS suffix", ["ARGUMENTS"], "Prefix ARGUMENTS suffix"),
            ("$A $$ $ $ARGS", ["a"], "$A $$ $ $ARGS"),
            ("$arguments $Arguments $ARGUMENTS", ["a", "b"], "$arguments $Arguments a b"),
            ("Price: \\$100", [], "Price: \\"),
            (
                "$1: $@ ($ARGUMENTS)",
                ["first", "second", "third"],
                "first: first second third (first second third)",
            ),
            ("Just plain text", ["a", "b"], "Just plain text"),
            ("$1 $2 $@", ["a", "b", "c"], "a b a b c"),
        ],
    )
    def test_placeholders(self, template: str, args: list[str], expected: str) -> None:
        assert substitute_args(template, args) == expected

    def test_multi_digit_positions(self) -> None:
        args = [f"val{i}" for i in range(15)]
        assert substitute_args("$10 $12 $15", args) == "val9 val11 val14"

    def test_very_long_argument_list(self) -> None:
        args = [f"arg{i}" for i in range(100)]
        assert substitute_args("$ARGUMENTS", args) == " ".join(args)

    @pytest.mark.parametrize(
        ("template", "args", "expected"),
        [
            ("$ARGUMENTS", ["$1", "$ARGUMENTS"], "$1 $ARGUMENTS"),
            ("$@", ["$100", "$1"], "$100 $1"),
            ("$1 $2", ["$@", "x"], "$@ x"),
            ("${@:1}", ["${@:2}", "test"], "${@:2} test"),
            ("${@:2}", ["a", "${@:3}", "c"], "${@:3} c"),
        ],
    )
    def test_argument_values_are_never_substituted(
        self, template: str, args: list[str], expected: str
    ) -> None:
        assert substitute_args(template, args) == expected

    @pytest.mark.parametrize(
        ("template", "args", "expected"),
        [
            ("${@:2}", ["a", "b", "c", "d"], "b c d"),
            ("${@:1}", ["a", "b", "c"], "a b c"),
            ("${@:2:2}", ["a", "b", "c", "d"], "b c"),
            ("${@:1:1}", ["a", "b", "c"], "a"),
            ("${@:2:3}", ["a", "b", "c", "d", "e"], "b c d"),
            ("${@:99}", ["a", "b"], ""),
            ("${@:10:5}", ["a", "b"], ""),
            ("${@:2:0}", ["a", "b", "c"], ""),
            ("${@:2:99}", ["a", "b", "c"], "b c"),
            ("${@:2} vs $@", ["a", "b", "c"], "b c vs a b c"),
            ("First: ${@:1:1}, All: $@", ["x", "y", "z"], "First: x, All: x y z"),
            ("$1: ${@:2}", ["cmd", "arg1", "arg2"], "cmd: arg1 arg2"),
            ("${@:0}", ["a", "b", "c"], "a b c"),
            ("${@:2}", [], ""),
            ("prefix${@:2}suffix", ["a", "b", "c"], "prefixb csuffix"),
            ("${@:1:2} vs ${@:3:2}", ["a", "b", "c", "d", "e"], "a b vs c d"),
            (
                "Run $1 on ${@:2:2}, then process $@",
                ["eslint", "file1.ts", "file2.ts", "file3.ts"],
                "Run eslint on file1.ts file2.ts, then process eslint file1.ts file2.ts file3.ts",
            ),
        ],
    )
    def test_slices(self, template: str, args: list[str], expected: str) -> None:
        assert substitute_args(template, args) == expected

    @pytest.mark.parametrize(
        ("template", "args", "expected"),
        [
            ("Focus: ${2:-everything}", ["a"], "Focus: everything"),
            ("Focus: ${2:-everything}", ["a", "tests"], "Focus: tests"),
            ("${1:-}", [], ""),
            ("${2:-same as $1}", ["x"], "same as x"),
            ("${1:-$ARGUMENTS}", [], ""),
        ],
    )
    def test_defaults(self, template: str, args: list[str], expected: str) -> None:
        assert substitute_args(template, args) == expected

    def test_default_used_for_empty_argument(self) -> None:
        assert substitute_args("[${1:-none}]", [""]) == "[none]"


class TestParseCommandArgs:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("a b c", ["a", "b", "c"]),
            ('"first arg" second', ["first arg", "second"]),
            ("'first arg' second", ["first arg", "second"]),
            ('"double" \'single\' "double again"', ["double", "single", "double again"]),
            ("", []),
            ("a  b   c", ["a", "b", "c"]),
            ("a\tb\tc", ["a", "b", "c"]),
            ('"" " "', [" "]),
            ("$100 @user #tag", ["$100", "@user", "#tag"]),
            ("日本語 🎉 café", ["日本語", "🎉", "café"]),
            ('"line1\nline2" second', ["line1\nline2", "second"]),
            ('"quoted \\"text\\""', ["quoted \\text\\"]),
            ("a b c   ", ["a", "b", "c"]),
            ("   a b c", ["a", "b", "c"]),
            ("it's here", ["its here"]),
            ("a\nb", ["a\nb"]),
        ],
    )
    def test_splitting(self, text: str, expected: list[str]) -> None:
        assert parse_command_args(text) == expected

    def test_readme_example(self) -> None:
        args = parse_command_args('Button "onClick handler" "disabled support"')
        result = substitute_args("Create a React component named $1 with features: $ARGUMENTS", args)
        assert (
            result
            == "Create a React component named Button with features: Button onClick handler disabled support"
        )


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


class TestLoadPromptTemplate:
    def test_frontmatter_description_and_argument_hint(self, tmp_path: Path) -> None:
        path = write(
            tmp_path / "review.md",
            "---\ndescription: Code review\n"
            'argument-hint: "[file | #PR | PR-URL]"\n---\nReview the code for $1\n',
        )
        template, problems = load_prompt_template(path)
        assert problems == []
        assert template == PromptTemplate(
            name="review",
            description="Code review",
            argument_hint="[file | #PR | PR-URL]",
            content="Review the code for $1",
            file_path=str(path),
        )

    def test_description_falls_back_to_first_non_empty_line(self, tmp_path: Path) -> None:
        template, _ = load_prompt_template(write(tmp_path / "a.md", "\n\n  Summarise the diff\nmore\n"))
        assert template is not None
        assert template.description == "  Summarise the diff"
        assert template.argument_hint is None
        # Without frontmatter the body is the file as it is (pi trims only after frontmatter).
        assert template.content == "\n\n  Summarise the diff\nmore\n"

    def test_long_first_line_is_cut_at_60_characters(self, tmp_path: Path) -> None:
        template, _ = load_prompt_template(write(tmp_path / "long.md", "x" * 61))
        assert template is not None
        assert template.description == "x" * 60 + "..."

    def test_empty_file(self, tmp_path: Path) -> None:
        template, _ = load_prompt_template(write(tmp_path / "empty.md", ""))
        assert template is not None
        assert (template.description, template.content) == ("", "")

    def test_invalid_frontmatter_skips_template_with_warning(self, tmp_path: Path) -> None:
        template, problems = load_prompt_template(
            write(tmp_path / "bad.md", "---\ndescription: [oops\n---\nBody")
        )
        assert template is None
        assert problems[0].type == "warning"
        assert "at line 2" in problems[0].message


class TestLoadPromptTemplates:
    def test_directory_is_not_searched_recursively(self, tmp_path: Path) -> None:
        write(tmp_path / "prompts" / "top.md", "Top")
        write(tmp_path / "prompts" / "sub" / "deep.md", "Deep")
        write(tmp_path / "prompts" / "notes.txt", "Not a template")
        result = load_prompt_templates(["prompts"], cwd=tmp_path)
        assert [t.name for t in result.templates] == ["top"]

    def test_missing_path_is_an_error_and_collisions_keep_first(self, tmp_path: Path) -> None:
        first = write(tmp_path / "one" / "fix.md", "First")
        second = write(tmp_path / "two" / "fix.md", "Second")
        result = load_prompt_templates([tmp_path / "one", tmp_path / "nowhere", second], cwd=tmp_path)
        assert [t.content for t in result.templates] == ["First"]
        missing, collision = result.diagnostics
        assert (missing.type, missing.message) == ("error", "Prompt template path does not exist")
        assert collision.message == 'name "/fix" collision'
        assert collision.collision is not None
        assert collision.collision.winner_path == str(first)


class TestDiscoverPromptTemplates:
    @pytest.fixture
    def dirs(self, tmp_path: Path) -> tuple[Path, Path]:
        agent = tmp_path / "agent"
        cwd = tmp_path / "project"
        agent.mkdir()
        cwd.mkdir()
        return agent, cwd

    def test_project_before_user_and_untrusted_project_ignored(self, dirs: tuple[Path, Path]) -> None:
        agent, cwd = dirs
        write(agent / "prompts" / "shared.md", "User version")
        write(agent / "prompts" / "mine.md", "Mine")
        write(cwd / ".pi" / "prompts" / "shared.md", "Project version")
        trusted = discover_prompt_templates(cwd=cwd, agent_dir=agent, project_trusted=True)
        assert [(t.name, t.content, t.scope) for t in trusted.templates] == [
            ("shared", "Project version", "project"),
            ("mine", "Mine", "user"),
        ]
        assert [d.type for d in trusted.diagnostics] == ["collision"]
        untrusted = discover_prompt_templates(cwd=cwd, agent_dir=agent, project_trusted=False)
        assert [(t.name, t.content) for t in untrusted.templates] == [
            ("mine", "Mine"),
            ("shared", "User version"),
        ]

    def test_settings_directories_are_recursive_and_filterable(self, dirs: tuple[Path, Path]) -> None:
        agent, cwd = dirs
        write(agent / "library" / "a.md", "A")
        write(agent / "library" / "nested" / "b.md", "B")
        write(agent / "library" / "drafts" / "c.md", "C")
        result = discover_prompt_templates(
            cwd=cwd, agent_dir=agent, project_trusted=True, global_entries=["library", "!**/drafts/**"]
        )
        assert sorted(t.name for t in result.templates) == ["a", "b"]

    def test_no_defaults_keeps_extra_paths(self, dirs: tuple[Path, Path]) -> None:
        agent, cwd = dirs
        write(agent / "prompts" / "mine.md", "Mine")
        extra = write(cwd / "tmp.md", "Extra")
        result = discover_prompt_templates(
            cwd=cwd, agent_dir=agent, project_trusted=True, extra_paths=[extra], include_defaults=False
        )
        assert [(t.name, t.scope) for t in result.templates] == [("tmp", "temporary")]


class TestExpandPromptTemplate:
    templates = (
        PromptTemplate(
            name="component", description="", content="Create $1 with: $ARGUMENTS", file_path="/c.md"
        ),
        PromptTemplate(name="plain", description="", content="Just do it", file_path="/p.md"),
    )

    def test_expands_with_arguments(self) -> None:
        result = expand_prompt_template('/component Button "onClick handler"', self.templates)
        assert result == "Create Button with: Button onClick handler"

    def test_expands_without_arguments(self) -> None:
        assert expand_prompt_template("/plain", self.templates) == "Just do it"

    def test_other_text_passes_through(self) -> None:
        assert expand_prompt_template("/unknown x", self.templates) == "/unknown x"
        assert expand_prompt_template("plain text", self.templates) == "plain text"
        assert expand_prompt_template("/plain\nmore", self.templates) == "/plain\nmore"
