"""``grep`` and ``find``: pi's scenarios, and the same output from the ripgrep/fd backends
and the pure-Python backend on a tree that exercises the ignore rules."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pi_tools_fs import create_find_tool, create_grep_tool

from pi_host import AbortedError, AbortSignal, Tool

if TYPE_CHECKING:
    from conftest import Caller

RG = shutil.which("rg")
FD = shutil.which("fd") or shutil.which("fdfind")

python_grep = create_grep_tool(backend="python")
python_find = create_find_tool(backend="python")
GREPS = [pytest.param(python_grep, id="python")] + (
    [pytest.param(create_grep_tool(backend="ripgrep"), id="ripgrep")] if RG else []
)
FINDS = (
    [pytest.param(python_find, id="python")]
    + ([pytest.param(create_find_tool(backend="fd"), id="fd")] if FD else [])
    + ([pytest.param(create_find_tool(backend="ripgrep"), id="ripgrep")] if RG else [])
)


# -- tools.test.ts scenarios ----------------------------------------------------------------


@pytest.mark.parametrize("grep", GREPS)
async def test_grep_single_file_shows_its_name(call: Caller, tmp_path: Path, grep: Tool[Any]) -> None:
    (tmp_path / "example.txt").write_text("first line\nmatch line\nlast line")
    output = await call.text(grep, {"pattern": "match", "path": str(tmp_path / "example.txt")})
    assert output == "example.txt:2: match line"


@pytest.mark.parametrize("grep", GREPS)
async def test_grep_limit_and_context(call: Caller, tmp_path: Path, grep: Tool[Any]) -> None:
    (tmp_path / "context.txt").write_text("before\nmatch one\nafter\nmiddle\nmatch two\nafter two")
    result = await call(grep, {"pattern": "match", "path": "context.txt", "limit": 1, "context": 1})
    assert call.text_of(result) == (
        "context.txt-1- before\ncontext.txt:2: match one\ncontext.txt-3- after\n\n"
        "[1 matches limit reached. Use limit=2 for more, or refine pattern]"
    )
    assert result.details == {"matchLimitReached": 1}


@pytest.mark.parametrize("grep", GREPS)
async def test_grep_flag_like_pattern_is_text(call: Caller, tmp_path: Path, grep: Tool[Any]) -> None:
    marker = tmp_path / "marker"
    payload = tmp_path / "payload.sh"
    payload.write_text(f'#!/bin/sh\necho executed > {marker}\ncat "$1"\n')
    payload.chmod(0o755)
    (tmp_path / "target.txt").write_text("target\n")
    output = await call.text(grep, {"pattern": f"--pre={payload}", "path": str(tmp_path)})
    assert output == "No matches found"
    assert not marker.exists()


@pytest.mark.parametrize("grep", GREPS)
async def test_grep_missing_path(call: Caller, tmp_path: Path, grep: Tool[Any]) -> None:
    with pytest.raises(Exception, match=f"^Path not found: {tmp_path}/nope$"):
        await call(grep, {"pattern": "x", "path": "nope"})


@pytest.mark.parametrize("grep", GREPS)
async def test_grep_long_lines_and_byte_cap(call: Caller, tmp_path: Path, grep: Tool[Any]) -> None:
    (tmp_path / "long.txt").write_text("\n".join(f"hit {i} " + "x" * 600 for i in range(99)))
    result = await call(grep, {"pattern": "hit", "path": "long.txt"})
    text = call.text_of(result)
    assert text.startswith("long.txt:1: hit 0 " + "x" * 494 + "... [truncated]\n")
    assert text.endswith(
        "\n\n[50.0KB limit reached. Some lines truncated to 500 chars. Use read tool to see full lines]"
    )
    assert result.details["linesTruncated"] is True
    assert result.details["truncation"]["truncatedBy"] == "bytes"


@pytest.mark.parametrize("find", FINDS)
async def test_find_includes_hidden_files(call: Caller, tmp_path: Path, find: Tool[Any]) -> None:
    (tmp_path / ".secret").mkdir()
    (tmp_path / ".secret" / "hidden.txt").write_text("hidden")
    (tmp_path / "visible.txt").write_text("visible")
    (tmp_path / ".git").mkdir()  # fd 8 honours .gitignore only inside repositories
    output = await call.text(find, {"pattern": "**/*.txt", "path": str(tmp_path)})
    assert output.split("\n") == [".secret/hidden.txt", "visible.txt"]


@pytest.mark.parametrize("find", FINDS)
async def test_find_respects_gitignore(call: Caller, tmp_path: Path, find: Tool[Any]) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("ignored.txt\n")
    (tmp_path / "ignored.txt").write_text("ignored")
    (tmp_path / "kept.txt").write_text("kept")
    assert await call.text(find, {"pattern": "**/*.txt", "path": str(tmp_path)}) == "kept.txt"


async def test_find_respects_gitignore_outside_repositories(call: Caller, tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("ignored.txt\n")
    (tmp_path / "ignored.txt").write_text("ignored")
    (tmp_path / "kept.txt").write_text("kept")
    from pi_tools_fs import find_tool

    assert await call.text(find_tool, {"pattern": "*.txt"}) == "kept.txt"


@pytest.mark.parametrize("find", FINDS)
async def test_find_glob_parse_error(call: Caller, tmp_path: Path, find: Tool[Any]) -> None:
    with pytest.raises(Exception, match=r"error parsing glob '\[': unclosed character class"):
        await call(find, {"pattern": "[", "path": str(tmp_path)})


@pytest.mark.parametrize("find", FINDS)
async def test_find_flag_like_pattern(call: Caller, tmp_path: Path, find: Tool[Any]) -> None:
    assert (
        await call.text(find, {"pattern": "--help", "path": str(tmp_path)})
        == "No files found matching pattern"
    )


@pytest.mark.parametrize("find", FINDS)
async def test_find_limit_notice(call: Caller, tmp_path: Path, find: Tool[Any]) -> None:
    (tmp_path / ".git").mkdir()
    for i in range(5):
        (tmp_path / f"f{i}.txt").write_text("")
    result = await call(find, {"pattern": "*.txt", "limit": 3})
    assert call.text_of(result) == (
        "f0.txt\nf1.txt\nf2.txt\n\n[3 results limit reached. Use limit=6 for more, or refine pattern]"
    )
    assert result.details == {"resultLimitReached": 3}


async def test_find_errors_for_missing_path_and_file(call: Caller, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(Exception, match=r"^Path not found: "):
        await call(python_find, {"pattern": "*", "path": "missing"})
    with pytest.raises(Exception, match=r"^Not a directory: "):
        await call(python_find, {"pattern": "*", "path": "file"})


# -- both backends agree --------------------------------------------------------------------

TREE: dict[str, str | bytes] = {
    ".git/info/exclude": "excluded.txt\n",
    ".git/HEAD": "ref: hello\n",
    ".gitignore": (
        "# comment\n*.log\n!keep.log\n/build/\ndocs/**/*.tmp\nnode_modules/\n\\#hash.txt\n"
        "trailing.txt   \ndironly/\na/**/deep.txt\n"
    ),
    ".ignore": "by_dotignore.txt\n",
    ".rgignore": "by_rgignore.txt\n",
    ".fdignore": "by_fdignore.txt\n",
    "app.py": "hello world\nprint('hello')\n",
    "debug.log": "hello log\n",
    "keep.log": "hello keep\n",
    "build/out.txt": "hello build\n",
    "src/build/inner.txt": "hello inner\n",
    "src/Main.PY": "HELLO upper\n",
    "docs/x/y.tmp": "hello tmp\n",
    "docs/y.tmp": "hello tmp\n",
    "docs/guide.md": "say hello\n",
    "node_modules/pkg/index.js": "hello nm\n",
    "sub/node_modules/x.js": "hello nm\n",
    "#hash.txt": "hello hash\n",
    "trailing.txt": "hello trailing\n",
    "dironly": "hello file named dironly\n",
    "other/dironly/f.txt": "hello\n",
    "a/b/c/deep.txt": "hello\n",
    "a/deep.txt": "hello\n",
    "a/shallow.txt": "hello shallow\n",
    "excluded.txt": "hello excluded\n",
    "by_dotignore.txt": "hello\n",
    "by_rgignore.txt": "hello rg\n",
    "by_fdignore.txt": "hello fd\n",
    ".hidden/secret.txt": "hello hidden\n",
    ".env": "HELLO=1\n",
    "sub/.gitignore": "!debug2.log\n*.txt\n!important.txt\n!notes.txt\n",
    "sub/.ignore": "notes.txt\n",
    "sub/debug2.log": "hello debug2\n",
    "sub/other.txt": "hello\n",
    "sub/important.txt": "hello important\n",
    "sub/notes.txt": "hello notes\n",
    "nested/.git/HEAD": "x\n",
    "nested/x.log": "hello nested repo\n",
    "ünï code.txt": "hello unicode ü\n",
    "bin.dat": b"hello\x00binary\n",
    "crlf.txt": b"hello\r\nworld hello\r\n",
    "bad.txt": b"hello \xff\xfe\n",
    "bom.txt": b"\xef\xbb\xbfhello bom\n",
    "with space.txt": "hello space\n",
    "long.txt": "hello " + "y" * 600 + "\n",
    "emptydir/": "",
}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for name, content in TREE.items():
        path = root / name
        if name.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    os.symlink("app.py", root / "link.py")
    return root


async def test_python_grep_honours_every_rule(call: Caller, tree: Path) -> None:
    output = await call.text(python_grep, {"pattern": "hello"}, cwd=tree)
    matched, notice = output.split("\n\n")
    assert [line.split(":")[0] for line in matched.split("\n")] == [
        ".hidden/secret.txt",  # hidden files are searched
        "a/shallow.txt",  # a/deep.txt and a/b/c/deep.txt: a/**/deep.txt
        "app.py",
        "app.py",  # link.py: symbolic links are not followed
        "bad.txt",
        "bom.txt",
        "by_fdignore.txt",  # .fdignore is fd's; .rgignore and .ignore hide the other two
        "crlf.txt",
        "crlf.txt",  # bin.dat: binary
        "dironly",  # a file: dironly/ matches directories only
        "docs/guide.md",  # docs/**/*.tmp
        "keep.log",  # !keep.log re-includes; debug.log stays out
        "long.txt",
        "nested/x.log",  # a nested repository does not see the outer *.log
        "src/build/inner.txt",  # /build/ is anchored to the root
        "sub/debug2.log",  # sub/.gitignore re-includes
        "sub/important.txt",  # notes.txt: sub/.ignore outranks sub/.gitignore's !notes.txt
        "with space.txt",
        "ünï code.txt",
    ]
    assert notice == "[Some lines truncated to 500 chars. Use read tool to see full lines]"


async def test_python_find_honours_every_rule(call: Caller, tree: Path) -> None:
    output = await call.text(python_find, {"pattern": "*"}, cwd=tree)
    assert output.split("\n") == [
        ".env",
        ".fdignore",
        ".gitignore",
        ".hidden/",
        ".hidden/secret.txt",
        ".ignore",
        ".rgignore",
        "a/",
        "a/b/",
        "a/b/c/",
        "a/shallow.txt",
        "app.py",
        "bad.txt",
        "bin.dat",
        "bom.txt",
        "by_rgignore.txt",
        "crlf.txt",
        "dironly",
        "docs/",
        "docs/guide.md",
        "docs/x/",
        "emptydir/",
        "keep.log",
        "link.py",
        "long.txt",
        "nested/",
        "nested/x.log",
        "other/",
        "src/",
        "src/Main.PY",
        "src/build/",
        "src/build/inner.txt",
        "sub/",
        "sub/.gitignore",
        "sub/.ignore",
        "sub/debug2.log",
        "sub/important.txt",
        "with space.txt",
        "ünï code.txt",
    ]


GREP_CASES: list[dict[str, Any]] = [
    {"pattern": "hello"},
    {"pattern": "HELLO", "ignoreCase": True},
    {"pattern": "hel+o \\w+$"},
    {"pattern": "print('hello')", "literal": True},
    {"pattern": "hello", "glob": "*.py"},
    {"pattern": "hello", "glob": "sub/**"},
    {"pattern": "hello", "glob": "*.log"},
    {"pattern": "hello", "glob": "!*.txt"},
    {"pattern": "hello", "context": 1},
    {"pattern": "hello", "limit": 3},
    {"pattern": "hello", "path": "sub"},
    {"pattern": "hello", "path": "crlf.txt", "context": 2},
    {"pattern": "hello", "path": "bin.dat"},
    {"pattern": "world", "path": "a"},
    {"pattern": "nothing-matches-this"},
]


@pytest.mark.skipif(RG is None, reason="ripgrep not installed")
@pytest.mark.parametrize("args", GREP_CASES, ids=lambda a: "-".join(f"{k}={v}" for k, v in a.items()))
async def test_grep_backends_agree(call: Caller, tree: Path, args: dict[str, Any]) -> None:
    from_rg = await call(create_grep_tool(backend="ripgrep"), args, cwd=tree)
    from_python = await call(python_grep, args, cwd=tree)
    assert from_python.to_json_dict() == from_rg.to_json_dict()


@pytest.mark.skipif(RG is None, reason="ripgrep not installed")
async def test_grep_backends_agree_outside_repositories(call: Caller, tree: Path) -> None:
    shutil.rmtree(tree / ".git")
    from_rg = await call(create_grep_tool(backend="ripgrep"), {"pattern": "hello"}, cwd=tree)
    from_python = await call(python_grep, {"pattern": "hello"}, cwd=tree)
    assert call.text_of(from_python) == call.text_of(from_rg)
    assert "excluded.txt:1:" in call.text_of(from_python)  # only .git/info/exclude named it
    assert "debug.log" not in call.text_of(from_python)  # .gitignore applies without a repository


@pytest.mark.skipif(RG is None, reason="ripgrep not installed")
async def test_grep_binary_cut_matches_ripgrep(call: Caller, tmp_path: Path) -> None:
    lines = "".join(f"line hello {i}\n" for i in range(20000))
    (tmp_path / "late.txt").write_bytes(lines.encode() + b"\x00\nafter hello\n")
    args = {"pattern": "hello", "limit": 100000}
    from_rg = await call(create_grep_tool(backend="ripgrep"), args)
    from_python = await call(python_grep, args)
    assert call.text_of(from_python) == call.text_of(from_rg)


FIND_CASES: list[dict[str, Any]] = [
    {"pattern": "*"},
    {"pattern": "*.txt"},
    {"pattern": "**/*.txt"},
    {"pattern": "sub/**"},
    {"pattern": "*.py"},  # smart case: matches Main.PY
    {"pattern": "*.PY"},
    {"pattern": "**/deep.txt"},
    {"pattern": "build"},
    {"pattern": "{app,keep}.*"},
    {"pattern": "[a-c]*"},
    {"pattern": "src/*"},
    {"pattern": "*", "path": "sub"},
    {"pattern": "*", "limit": 5},
    {"pattern": "nothing-matches"},
]


@pytest.mark.skipif(FD is None, reason="fd not installed")
@pytest.mark.parametrize("args", FIND_CASES, ids=lambda a: "-".join(f"{k}={v}" for k, v in a.items()))
async def test_find_backends_agree(call: Caller, tree: Path, args: dict[str, Any]) -> None:
    from_fd = await call(create_find_tool(backend="fd"), args, cwd=tree)
    from_python = await call(python_find, args, cwd=tree)
    assert from_python.to_json_dict() == from_fd.to_json_dict()


@pytest.mark.skipif(RG is None, reason="ripgrep not installed")
@pytest.mark.parametrize(
    "args",
    [a for a in FIND_CASES if "limit" not in a],
    ids=lambda a: "-".join(f"{k}={v}" for k, v in a.items()),
)
async def test_find_with_ripgrep_agrees_with_the_walk(call: Caller, tree: Path, args: dict[str, Any]) -> None:
    # The walk honours .fdignore, ripgrep .rgignore: with both moved away, the listings agree
    # but for symbolic links and the directories that hold no listed file, which ripgrep's
    # file list cannot show.
    (tree / ".rgignore").unlink()
    (tree / ".fdignore").unlink()
    base = tree / args.get("path", ".")
    everything = (await call.text(python_find, {"pattern": "*", "path": str(base)}, cwd=tree)).split("\n")
    holding = {entry.rpartition("/")[0] + "/" for entry in everything if not entry.endswith("/")}
    hollow = {
        entry for entry in everything if entry.endswith("/") and not any(h.startswith(entry) for h in holding)
    }
    assert hollow == {"a/b/", "a/b/c/", "docs/x/", "emptydir/", "other/"} or args.get("path")
    from_rg = await call.text(create_find_tool(backend="ripgrep"), args, cwd=tree)
    from_python = await call.text(python_find, args, cwd=tree)
    unseen = hollow | {"link.py"}
    expected = [line for line in from_python.split("\n") if line not in unseen] or [
        "No files found matching pattern"
    ]
    assert from_rg.split("\n") == expected


@pytest.mark.skipif(RG is None, reason="ripgrep not installed")
async def test_find_with_ripgrep_lists_rgignore_rules_not_fdignore(call: Caller, tree: Path) -> None:
    listed = (await call.text(create_find_tool(backend="ripgrep"), {"pattern": "by_*"}, cwd=tree)).split("\n")
    assert listed == ["by_fdignore.txt"]


class AbortAfterChecks(AbortSignal):
    """A signal that reads as aborted from its ``checks``-th look on: an abort mid-walk."""

    def __init__(self, checks: int) -> None:
        self._remaining = checks
        self._flag = False
        super().__init__()

    @property
    def aborted(self) -> bool:
        self._remaining -= 1
        return self._flag or self._remaining < 0

    @aborted.setter
    def aborted(self, value: bool) -> None:
        self._flag = value


@pytest.mark.parametrize("tool", [python_grep, python_find], ids=["grep", "find"])
async def test_python_walk_stops_on_abort(call: Caller, tmp_path: Path, tool: Tool[Any]) -> None:
    for d in range(20):
        (tmp_path / f"d{d}").mkdir()
        for f in range(30):
            (tmp_path / f"d{d}" / f"f{f}.txt").write_text("hello\n")
    with pytest.raises(AbortedError, match=r"^Operation aborted$"):
        await call(
            tool,
            {"pattern": "*" if tool is python_find else "hello", "limit": 10**6},
            signal=AbortAfterChecks(3),
        )


@pytest.mark.parametrize("tool", [t.values[0] for t in GREPS + FINDS])
async def test_aborted_before_start(call: Caller, tmp_path: Path, tool: Tool[Any]) -> None:
    signal = AbortSignal()
    signal.abort()
    with pytest.raises(AbortedError, match=r"^Operation aborted$"):
        await call(tool, {"pattern": "x"}, signal=signal)
