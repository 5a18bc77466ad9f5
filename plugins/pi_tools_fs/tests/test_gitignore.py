"""gitignore semantics of the pure-Python walk (checked against ripgrep/fd where installed)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from pi_tools_fs._glob import GlobError, compile_glob, glob_to_regex
from pi_tools_fs._ignore import Gitignore, Match, Override
from pi_tools_fs._walk import IgnoreFiles, walk

IGNORE, WHITELIST, NONE = Match.IGNORE, Match.WHITELIST, Match.NONE


@pytest.mark.parametrize(
    ("lines", "path", "is_dir", "expected"),
    [
        (["*.log"], "a.log", False, IGNORE),
        (["*.log"], "deep/dir/a.log", False, IGNORE),
        (["*.log", "!keep.log"], "keep.log", False, WHITELIST),
        (["!keep.log", "*.log"], "keep.log", False, IGNORE),  # the last matching rule decides
        (["/build"], "build", True, IGNORE),
        (["/build"], "src/build", True, NONE),  # anchored to the file's directory
        (["build/"], "build", False, NONE),  # directory-only
        (["build/"], "src/build", True, IGNORE),
        (["docs/*.md"], "docs/a.md", False, IGNORE),
        (["docs/*.md"], "x/docs/a.md", False, NONE),  # a middle slash anchors too
        (["docs/*.md"], "docs/sub/a.md", False, NONE),  # * does not cross /
        (["a/**/b"], "a/b", False, IGNORE),
        (["a/**/b"], "a/x/y/b", False, IGNORE),
        (["**/foo"], "foo", True, IGNORE),
        (["**/foo"], "x/foo", False, IGNORE),
        (["foo/**"], "foo", True, NONE),  # what is inside, not the directory itself
        (["foo/**"], "foo/x/y", False, IGNORE),
        (["# comment", "", "x"], "# comment", False, NONE),
        (["\\#hash"], "#hash", False, IGNORE),
        (["\\!bang"], "!bang", False, IGNORE),
        (["trailing   "], "trailing", False, IGNORE),
        (["space\\ "], "space ", False, IGNORE),
        (["f?o"], "foo", False, IGNORE),
        (["f[a-c]o"], "fbo", False, IGNORE),
        (["f[!a-c]o"], "fbo", False, NONE),
        (["*.{js,ts}"], "a.ts", False, IGNORE),
        (["[unclosed", "ok"], "ok", False, IGNORE),  # a bad line is skipped, not fatal
    ],
)
def test_rules(lines: list[str], path: str, is_dir: bool, expected: Match) -> None:
    assert Gitignore("/root", lines).matched_relative(path, is_dir) is expected


def test_matching_absolute_paths_strips_the_root() -> None:
    rules = Gitignore("/repo/sub", ["/only-here.txt"])
    assert rules.matched("/repo/sub/only-here.txt", False) is IGNORE
    assert rules.matched("/repo/sub/x/only-here.txt", False) is NONE


def test_override_selects_and_excludes() -> None:
    override = Override("/cwd", ["!.git", "*.py"])
    assert override.matched("/cwd/a.py", False) is WHITELIST
    assert override.matched("/cwd/a.txt", False) is IGNORE  # not selected
    assert override.matched("/cwd/dir", True) is NONE  # directories are still entered
    assert override.matched("/cwd/.git", True) is IGNORE


@pytest.mark.parametrize(
    ("glob", "subject", "matches"),
    [
        ("*.ts", "a.ts", True),
        ("*.ts", "a/b.ts", False),
        ("**/*.ts", "/abs/a/b.ts", True),
        ("src/**/*.spec.ts", "src/x/y/a.spec.ts", True),
        ("src/**/*.spec.ts", "src/a.spec.ts", True),
        ("{a,b}.md", "b.md", True),
        ("a**b", "axxb", True),
        ("a**b", "ax/xb", False),
        ("\\*", "*", True),
        ("**", "any/thing", True),
    ],
)
def test_glob_syntax(glob: str, subject: str, matches: bool) -> None:
    assert bool(compile_glob(glob).match(subject)) is matches


@pytest.mark.parametrize(
    ("glob", "message"),
    [
        ("[", "error parsing glob '[': unclosed character class; missing ']'"),
        (
            "{a",
            "error parsing glob '{a': unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)",
        ),
        ("[z-a]", "error parsing glob '[z-a]': invalid range; 'z' > 'a'"),
    ],
)
def test_glob_errors(glob: str, message: str) -> None:
    with pytest.raises(GlobError) as info:
        glob_to_regex(glob)
    assert str(info.value) == message


def build(root: Path, files: dict[str, str]) -> None:
    for name, content in files.items():
        path = root / name
        if name.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)


def names(root: Path, **kwargs: object) -> list[str]:
    prefix = len(str(root)) + 1
    return [entry.path[prefix:] + ("/" if entry.is_dir else "") for entry in walk(str(root), **kwargs)]  # type: ignore[arg-type]


def test_nested_files_negation_and_order(tmp_path: Path) -> None:
    build(
        tmp_path,
        {
            ".gitignore": "*.log\n/build/\n",
            "a.log": "",
            "b.txt": "",
            "build/x": "",
            "src/build/y": "",
            "sub/.gitignore": "!keep.log\n",
            "sub/keep.log": "",
            "sub/drop.log": "",
            ".hidden/h": "",
        },
    )
    assert names(tmp_path) == [
        ".gitignore",
        ".hidden/",
        ".hidden/h",
        "b.txt",
        "src/",
        "src/build/",
        "src/build/y",
        "sub/",
        "sub/.gitignore",
        "sub/keep.log",
    ]


def test_dot_ignore_outranks_gitignore_and_custom_outranks_both(tmp_path: Path) -> None:
    build(
        tmp_path,
        {
            ".gitignore": "a.txt\n",
            ".ignore": "!a.txt\nb.txt\n",
            ".rgignore": "!b.txt\n",
            "a.txt": "",
            "b.txt": "",
        },
    )
    assert "a.txt" in names(tmp_path)
    assert "b.txt" not in names(tmp_path)
    assert "b.txt" in names(tmp_path, files=IgnoreFiles(custom=(".rgignore",)))


def test_parent_gitignore_applies_up_to_the_repository_root(tmp_path: Path) -> None:
    build(
        tmp_path,
        {
            ".gitignore": "outer.txt\n",
            "repo/.git/info/exclude": "excluded.txt\n",
            "repo/.gitignore": "*.tmp\n",
            "repo/src/a.tmp": "",
            "repo/src/outer.txt": "",
            "repo/src/excluded.txt": "",
            "repo/src/kept.txt": "",
            "plain/.ignore": "dot.txt\n",
            "plain/sub/dot.txt": "",
            "plain/sub/outer.txt": "",
        },
    )
    # Searching below the repository root still honours the repository's ignore files, but
    # not the .gitignore above the repository.
    assert names(tmp_path / "repo" / "src") == ["kept.txt", "outer.txt"]
    # Outside a repository every parent .gitignore counts; .ignore files always do.
    assert names(tmp_path / "plain" / "sub") == []


def test_git_directory_is_not_special_without_override(tmp_path: Path) -> None:
    build(tmp_path, {".git/HEAD": "", "a": ""})
    assert names(tmp_path) == [".git/", ".git/HEAD", "a"]
    assert names(tmp_path, overrides=Override(str(tmp_path), ["!.git"])) == ["a"]


@pytest.mark.parametrize("outer_repository", [True, False], ids=["in-repo", "no-repo"])
def test_nested_repository_is_a_boundary_only_inside_a_repository(
    tmp_path: Path, outer_repository: bool
) -> None:
    # ripgrep 15 (the one pi-tools-fs installs): inside a repository a nested one (a submodule)
    # keeps the outer .gitignore out; outside any repository (--no-require-git) it does not.
    build(tmp_path, {".gitignore": "*.log\n", "nested/.git/HEAD": "x\n", "nested/x.log": "", "y.log": ""})
    if outer_repository:
        build(tmp_path, {".git/HEAD": "ref: refs/heads/main\n"})
    found = [name for name in names(tmp_path) if name.endswith(".log")]
    assert found == (["nested/x.log"] if outer_repository else [])
    rg = shutil.which("rg")
    if rg is None:
        return
    version = subprocess.run([rg, "--version"], capture_output=True, text=True, check=True).stdout
    if not outer_repository and int(version.split()[1].split(".")[0]) < 14:
        return  # ripgrep 13 still stopped at the nested repository here
    args = [rg, "--files", "--hidden", "--no-config", "--glob", "!.git"]
    listed = subprocess.run(
        [*args, *([] if outer_repository else ["--no-require-git"])],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    assert sorted(name for name in listed if name.endswith(".log")) == found
