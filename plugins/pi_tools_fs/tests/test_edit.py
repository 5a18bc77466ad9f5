"""``edit`` and ``write``: pi's tools.test.ts scenarios, every edit error, fuzzy matching,
line endings, property tests and parallel edits on one file (pi#2327)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pi_tools_fs import edit_tool, prepare_edit_arguments, write_tool

from pi_host import AbortSignal, TextContent, ToolArgumentsError, ToolCallContext

if TYPE_CHECKING:
    from conftest import Caller


def one(old: str, new: str) -> list[dict[str, str]]:
    return [{"oldText": old, "newText": new}]


# -- write ----------------------------------------------------------------------------------


async def test_write_file(call: Caller, tmp_path: Path) -> None:
    target = tmp_path / "write-test.txt"
    result = await call(write_tool, {"path": str(target), "content": "Test content"})
    assert call.text_of(result) == f"Successfully wrote 12 bytes to {target}"
    assert result.details is None
    assert target.read_text() == "Test content"


async def test_write_creates_parent_directories(call: Caller, tmp_path: Path) -> None:
    result = await call(write_tool, {"path": "nested/dir/test.txt", "content": "Nested content"})
    assert call.text_of(result) == "Successfully wrote 14 bytes to nested/dir/test.txt"
    assert (tmp_path / "nested" / "dir" / "test.txt").read_text() == "Nested content"


async def test_write_counts_utf16_units_like_pi(call: Caller, tmp_path: Path) -> None:
    text = "héllo 😀"
    result = await call(write_tool, {"path": "u.txt", "content": text})
    assert call.text_of(result) == "Successfully wrote 8 bytes to u.txt"
    assert (tmp_path / "u.txt").read_bytes() == text.encode()


async def test_write_lone_surrogate_becomes_replacement_character(call: Caller, tmp_path: Path) -> None:
    args = json.loads('{"path": "s.txt", "content": "a\\ud800b"}')
    await call(write_tool, args)
    assert (tmp_path / "s.txt").read_text() == "a\ufffdb"


async def test_write_into_a_file_as_directory_fails(call: Caller, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(Exception, match=r"^(ENOTDIR|EEXIST): .*, mkdir '"):
        await call(write_tool, {"path": "file/child.txt", "content": "y"})


# -- edit: tools.test.ts --------------------------------------------------------------------


async def test_replace_text(call: Caller, tmp_path: Path) -> None:
    (tmp_path / "edit-test.txt").write_text("Hello, world!")
    result = await call(edit_tool, {"path": "edit-test.txt", "edits": one("world", "testing")})
    assert call.text_of(result) == "Successfully replaced 1 block(s) in edit-test.txt."
    assert result.details["diff"] == "-1 Hello, world!\n+1 Hello, testing!"
    assert result.details["firstChangedLine"] == 1
    patch = result.details["patch"]
    assert patch.startswith("--- edit-test.txt\n+++ edit-test.txt\n@@ -1,1 +1,1 @@\n")
    assert "-Hello, world!\n\\ No newline at end of file\n+Hello, testing!" in patch


async def test_text_not_found(call: Caller, tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("Hello, world!")
    with pytest.raises(Exception) as info:
        await call(edit_tool, {"path": "f.txt", "edits": one("nonexistent", "testing")})
    assert str(info.value) == (
        "Could not find the exact text in f.txt. "
        "The old text must match exactly including all whitespace and newlines."
    )


async def test_missing_file_enoent(call: Caller, tmp_path: Path) -> None:
    missing = tmp_path / "missing.txt"
    with pytest.raises(Exception) as info:
        await call(edit_tool, {"path": str(missing), "edits": one("hello", "world")})
    assert str(info.value) == f"Could not edit file: {missing}. Error code: ENOENT."


async def test_duplicates(call: Caller, tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("foo foo foo")
    with pytest.raises(Exception) as info:
        await call(edit_tool, {"path": "f.txt", "edits": one("foo", "bar")})
    assert str(info.value) == (
        "Found 3 occurrences of the text in f.txt. "
        "The text must be unique. Please provide more context to make it unique."
    )


async def test_multiple_disjoint_edits(call: Caller, tmp_path: Path) -> None:
    path = tmp_path / "multi.txt"
    path.write_text("alpha\nbeta\ngamma\ndelta\n")
    edits = [{"oldText": "alpha\n", "newText": "ALPHA\n"}, {"oldText": "gamma\n", "newText": "GAMMA\n"}]
    result = await call(edit_tool, {"path": "multi.txt", "edits": edits})
    assert call.text_of(result) == "Successfully replaced 2 block(s) in multi.txt."
    assert path.read_text() == "ALPHA\nbeta\nGAMMA\ndelta\n"
    assert result.details["diff"] == "-1 alpha\n+1 ALPHA\n 2 beta\n-3 gamma\n+3 GAMMA\n 4 delta"


async def test_large_gaps_are_collapsed_in_diff(call: Caller, tmp_path: Path) -> None:
    (tmp_path / "gap.txt").write_text("".join(f"line {i:03}\n" for i in range(1, 601)))
    edits = [{"oldText": f"line {n}\n", "newText": f"LINE {n}\n"} for n in (100, 300, 500)]
    diff = (await call(edit_tool, {"path": "gap.txt", "edits": edits})).details["diff"]
    assert "LINE 100" in diff and "LINE 300" in diff and "LINE 500" in diff
    assert "     ..." in diff and "line 250" not in diff
    assert len(diff.split("\n")) < 50


async def test_edits_match_the_original_not_incrementally(call: Caller, tmp_path: Path) -> None:
    path = tmp_path / "orig.txt"
    path.write_text("foo\nbar\nbaz\n")
    edits = [{"oldText": "foo\n", "newText": "foo bar\n"}, {"oldText": "bar\n", "newText": "BAR\n"}]
    await call(edit_tool, {"path": "orig.txt", "edits": edits})
    assert path.read_text() == "foo bar\nBAR\nbaz\n"


async def test_empty_edits(call: Caller, tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("hello\n")
    with pytest.raises(
        Exception, match=r"^Edit tool input is invalid. edits must contain at least one replacement.$"
    ):
        await call(edit_tool, {"path": "f.txt", "edits": []})


async def test_overlap(call: Caller, tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("one\ntwo\nthree\n")
    edits = [{"oldText": "one\ntwo\n", "newText": "X"}, {"oldText": "two\nthree\n", "newText": "Y"}]
    with pytest.raises(Exception) as info:
        await call(edit_tool, {"path": "f.txt", "edits": edits})
    assert str(info.value) == (
        "edits[0] and edits[1] overlap in f.txt. Merge them into one edit or target disjoint regions."
    )


async def test_all_or_nothing(call: Caller, tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_text("alpha\nbeta\ngamma\n")
    edits = [{"oldText": "alpha\n", "newText": "ALPHA\n"}, {"oldText": "missing\n", "newText": "M\n"}]
    with pytest.raises(Exception) as info:
        await call(edit_tool, {"path": "f.txt", "edits": edits})
    assert str(info.value) == (
        "Could not find edits[1] in f.txt. "
        "The oldText must match exactly including all whitespace and newlines."
    )
    assert path.read_text() == "alpha\nbeta\ngamma\n"


@pytest.mark.parametrize(
    ("edits", "message"),
    [
        (one("", "x"), "oldText must not be empty in f.txt."),
        (
            [{"oldText": "a", "newText": "b"}, {"oldText": "", "newText": "x"}],
            "edits[1].oldText must not be empty in f.txt.",
        ),
        (
            one("abc", "abc"),
            "No changes made to f.txt. The replacement produced identical content. "
            "This might indicate an issue with special characters or the text not existing as expected.",
        ),
        (
            [{"oldText": "abc", "newText": "abc"}, {"oldText": "def", "newText": "def"}],
            "No changes made to f.txt. The replacements produced identical content.",
        ),
        (
            [{"oldText": "abc", "newText": "x"}, {"oldText": "a", "newText": "y"}],
            "Found 2 occurrences of edits[1] in f.txt. Each oldText must be unique. "
            "Please provide more context to make it unique.",
        ),
    ],
)
async def test_error_texts(call: Caller, tmp_path: Path, edits: list[dict[str, str]], message: str) -> None:
    (tmp_path / "f.txt").write_text("abc\ndef\na\n")
    with pytest.raises(Exception) as info:
        await call(edit_tool, {"path": "f.txt", "edits": edits})
    assert str(info.value) == message
    assert (tmp_path / "f.txt").read_text() == "abc\ndef\na\n"


NOBODY = 65534


def unprivileged_python() -> tuple[str, dict[str, str], Callable[[], object] | None]:
    """A Python that runs this test's code as an ordinary user (root may write anywhere).

    As root, the test drops to ``nobody``; the venv's interpreter may live in root's home, so
    a system interpreter of the same version runs with the venv's import path.
    """
    env = dict(os.environ)
    if os.geteuid() != 0:
        return sys.executable, env, None
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"):
        if os.path.exists(candidate):
            break
    else:
        pytest.skip(f"no system python{version} to run as an ordinary user")
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))
    return candidate, env, lambda: os.setuid(NOBODY)


@pytest.mark.skipif(not hasattr(os, "setuid"), reason="needs POSIX users")
def test_read_only_file_eacces(tmp_path: Path) -> None:
    directory = tempfile.mkdtemp(prefix="pi-tools-fs-")
    try:
        target = Path(directory) / "readonly.txt"
        target.write_text("hello\n")
        target.chmod(0o444)
        os.chmod(directory, 0o777)
        script = textwrap.dedent(
            """
            import sys, anyio
            from pi_host import AbortSignal, ToolCallContext
            from pi_tools_fs import edit_tool
            async def main():
                edits = [{"oldText": "hello", "newText": "x"}]
                params = edit_tool.validate_arguments({"path": sys.argv[1], "edits": edits})
                ctx = ToolCallContext(tool_call_id="e", signal=AbortSignal(), cwd="/")
                try:
                    await edit_tool.execute(params, ctx)
                except Exception as exc:
                    print(exc)
            anyio.run(main)
            """
        )
        python, env, preexec = unprivileged_python()
        out = subprocess.run(
            [python, "-c", script, str(target)],
            capture_output=True,
            text=True,
            timeout=60,
            preexec_fn=preexec,
            check=False,
            env=env,
        )
        assert out.stdout.strip() == f"Could not edit file: {target}. Error code: EACCES.", out.stderr
        assert target.read_text() == "hello\n"
    finally:
        shutil.rmtree(directory)


# -- legacy argument shapes -----------------------------------------------------------------


def test_prepare_arguments_folds_legacy_and_json_string() -> None:
    assert prepare_edit_arguments({"path": "p", "oldText": "a", "newText": "b"}) == {
        "path": "p",
        "edits": [{"oldText": "a", "newText": "b"}],
    }
    assert prepare_edit_arguments({"path": "p", "edits": '[{"oldText": "a", "newText": "b"}]'}) == {
        "path": "p",
        "edits": [{"oldText": "a", "newText": "b"}],
    }
    folded = prepare_edit_arguments(
        {"path": "p", "edits": [{"oldText": "x", "newText": "y"}], "oldText": "a", "newText": "b"}
    )
    assert folded["edits"] == [{"oldText": "x", "newText": "y"}, {"oldText": "a", "newText": "b"}]
    assert prepare_edit_arguments({"path": "p", "edits": "not json"}) == {"path": "p", "edits": "not json"}


async def test_legacy_single_edit_call(call: Caller, tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("Hello, world!")
    await call(edit_tool, {"path": "f.txt", "oldText": "world", "newText": "there"})
    assert (tmp_path / "f.txt").read_text() == "Hello, there!"


def test_unknown_arguments_are_rejected() -> None:
    with pytest.raises(ToolArgumentsError):
        edit_tool.validate_arguments({"path": "p", "edits": [{"oldText": "a", "newText": "b", "x": 1}]})
    with pytest.raises(ToolArgumentsError):
        edit_tool.validate_arguments({"path": "p", "edits": [], "extra": True})


# -- line endings and BOM -------------------------------------------------------------------


LINE_ENDING_CASES = [
    ("line one\r\nline two\r\nline three\r\n", "line two\n", "new\n", "line one\r\nnew\r\nline three\r\n"),
    ("first\r\nsecond\r\nthird\r\n", "second\n", "REPLACED\n", "first\r\nREPLACED\r\nthird\r\n"),
    ("first\nsecond\nthird\n", "second\n", "REPLACED\n", "first\nREPLACED\nthird\n"),
    ("\ufefffirst\r\nsecond\r\n", "second\n", "REPLACED\n", "\ufefffirst\r\nREPLACED\r\n"),
    ("single line content", "line", "LINE", "single LINE content"),
    ("first\rsecond\rthird\r", "second\n", "REPLACED\n", "first\nREPLACED\nthird\n"),
]


@pytest.mark.parametrize(("original", "old", "new", "expected"), LINE_ENDING_CASES)
async def test_line_endings(
    call: Caller, tmp_path: Path, original: str, old: str, new: str, expected: str
) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(original.encode())
    await call(edit_tool, {"path": "f.txt", "edits": one(old, new)})
    assert path.read_bytes().decode() == expected


async def test_crlf_and_bom_in_multi_edit(call: Caller, tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes("\ufefffirst\r\nsecond\r\nthird\r\nfourth\r\n".encode())
    edits = [{"oldText": "second\n", "newText": "SECOND\n"}, {"oldText": "fourth\n", "newText": "FOURTH\n"}]
    await call(edit_tool, {"path": "f.txt", "edits": edits})
    assert path.read_bytes().decode() == "\ufefffirst\r\nSECOND\r\nthird\r\nFOURTH\r\n"


async def test_duplicates_across_crlf_and_lf(call: Caller, tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_bytes(b"hello\r\nworld\r\n---\r\nhello\nworld\n")
    with pytest.raises(Exception, match="Found 2 occurrences"):
        await call(edit_tool, {"path": "f.txt", "edits": one("hello\nworld\n", "replaced\n")})


# -- fuzzy matching -------------------------------------------------------------------------


# Chinese text with fullwidth punctuation.
FULLWIDTH = "\u4f60\u597d\uff0c\u4e16\u754c\n\u4f60\u597d\uff08\u4e16\u754c\uff09\n"
FUZZY_CASES = [
    ("line one   \nline two  \nline three\n", one("line one\nline two\n", "new\n"), "new\nline three\n"),
    (FULLWIDTH, one("\u4f60\u597d,\u4e16\u754c\n\u4f60\u597d(\u4e16\u754c)\n", "pi\n"), "pi\n"),
    ("\uff21\uff22\uff23\uff11\uff12\uff13\ncafe\u0301\n", one("ABC123\ncaf\u00e9\n", "XYZ\n"), "XYZ\n"),
    ("log(\u2018hello\u2019);\n", one("log('hello');", "log('world');"), "log('world');\n"),
    ("m = \u201cHello World\u201d;\n", one('m = "Hello World";', 'm = "Bye";'), 'm = "Bye";\n'),
    (
        "range: 1\u20135\nbreak\u2014here\n",
        one("range: 1-5\nbreak-here", "r: 10-50\nb--h"),
        "r: 10-50\nb--h\n",
    ),
    ("hello\u00a0world\n", one("hello world", "hello universe"), "hello universe\n"),
    ("x = 'exact';\ny = 'other';\n", one("x = 'exact';", "x = 'changed';"), "x = 'changed';\ny = 'other';\n"),
    (
        "console.log(\u2018hello\u2019);\nhello\u00a0world\n",
        [
            {"oldText": "console.log('hello');\n", "newText": "console.log('world');\n"},
            {"oldText": "hello world\n", "newText": "hello universe\n"},
        ],
        "console.log('world');\nhello universe\n",
    ),
    ("replace me   \nafter   \n", one("replace me\n", "after\n"), "after\nafter   \n"),
    (
        "keep before  \nfirst target  \nfirst after\nkeep middle   \n"
        "second target  \nsecond after\nkeep after  \n",
        [
            {"oldText": "first target\nfirst after", "newText": "FIRST\nFIRST2"},
            {"oldText": "second target\nsecond after", "newText": "SECOND\nSECOND2"},
        ],
        "keep before  \nFIRST\nFIRST2\nkeep middle   \nSECOND\nSECOND2\nkeep after  \n",
    ),
]


@pytest.mark.parametrize(("original", "edits", "expected"), FUZZY_CASES)
async def test_fuzzy_matching(
    call: Caller, tmp_path: Path, original: str, edits: list[dict[str, str]], expected: str
) -> None:
    path = tmp_path / "f.txt"
    path.write_text(original)
    result = await call(edit_tool, {"path": "f.txt", "edits": edits})
    assert path.read_text() == expected
    assert apply_patch(tmp_path, original, result.details["patch"]) == expected


async def test_fuzzy_still_fails_and_detects_duplicates(call: Caller, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("completely different content\n")
    with pytest.raises(Exception, match="Could not find the exact text"):
        await call(edit_tool, {"path": "a.txt", "edits": one("this does not exist", "x")})
    (tmp_path / "b.txt").write_text("hello world   \nhello world\n")
    with pytest.raises(Exception, match="Found 2 occurrences"):
        await call(edit_tool, {"path": "b.txt", "edits": one("hello world", "replaced")})


def apply_patch(tmp_path: Path, original: str, patch: str) -> str:
    """Apply ``patch`` to ``original`` with GNU patch (the patch must be standard)."""
    if shutil.which("patch") is None:
        pytest.skip("GNU patch not installed")
    work = Path(tempfile.mkdtemp(dir=tmp_path))
    target = work / "target.txt"
    target.write_text(original)
    subprocess.run(["patch", "-s", str(target)], input=patch, text=True, check=True, capture_output=True)
    return target.read_text()


# -- properties -----------------------------------------------------------------------------

alphabet = st.sampled_from(["a", "b", "c", "\n", " ", "ab", "\u2019", "é"])
chunks = st.lists(alphabet, max_size=30).map("".join)


@settings(max_examples=150, deadline=None)
@given(content=chunks, data=st.data())
def test_random_edit_lists_apply_exactly_or_change_nothing(content: str, data: st.DataObject) -> None:
    """Either the file becomes exactly the independent expectation, or it is untouched."""
    edits = []
    for _ in range(data.draw(st.integers(min_value=1, max_value=4))):
        if content and data.draw(st.booleans()):
            start = data.draw(st.integers(min_value=0, max_value=len(content) - 1))
            end = data.draw(st.integers(min_value=start, max_value=min(len(content), start + 6)))
            old = content[start:end]
        else:
            old = data.draw(chunks)
        edits.append({"oldText": old, "newText": data.draw(chunks)})
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "f.txt"
        path.write_bytes(content.encode())
        error = anyio.run(run_edit, path, edits)
        after = path.read_bytes().decode()
    expected = exact_expectation(content, edits)
    if error is None:
        if expected is not None:
            assert after == expected
        else:
            # Only a normalised (fuzzy) match can succeed where exact matching cannot.
            assert after != content
    else:
        # Uniqueness is judged in normalised text (as in pi), so even an edit that matches
        # exactly once can be refused, e.g. deleting a trailing space; refused means untouched.
        assert after == content


def exact_expectation(content: str, edits: list[dict[str, str]]) -> str | None:
    """The result when every edit matches exactly, uniquely and disjointly; None otherwise."""
    spans = []
    for edit in edits:
        old = edit["oldText"]
        if not old or content.count(old) != 1:
            return None
        start = content.index(old)
        spans.append((start, start + len(old), edit["newText"]))
    spans.sort()
    for (_, end, _), (start, _, _) in pairwise(spans):
        if end > start:
            return None
    out, cursor = [], 0
    for start, end, new in spans:
        out.append(content[cursor:start])
        out.append(new)
        cursor = end
    out.append(content[cursor:])
    return "".join(out)


async def run_edit(path: Path, edits: list[dict[str, str]]) -> str | None:
    ctx = ToolCallContext(tool_call_id="p", signal=AbortSignal(), cwd=str(path.parent))
    try:
        await edit_tool.execute(edit_tool.validate_arguments({"path": path.name, "edits": edits}), ctx)
    except Exception as exc:
        return str(exc)
    return None


# -- concurrency ----------------------------------------------------------------------------


async def test_twenty_parallel_edits_to_one_file_all_land(tmp_path: Path) -> None:
    path = tmp_path / "shared.txt"
    path.write_text("".join(f"slot {i}\n" for i in range(20)))
    results: list[str] = []

    async def edit(index: int) -> None:
        ctx = ToolCallContext(tool_call_id=f"c{index}", signal=AbortSignal(), cwd=str(tmp_path))
        params = edit_tool.validate_arguments(
            {"path": "shared.txt", "edits": one(f"slot {index}\n", f"done {index}\n")}
        )
        result = await edit_tool.execute(params, ctx)
        block = result.content[0]
        assert isinstance(block, TextContent)
        results.append(block.text)

    async with anyio.create_task_group() as group:
        for index in range(20):
            group.start_soon(edit, index)
    assert path.read_text() == "".join(f"done {i}\n" for i in range(20))
    assert len(results) == 20


async def test_parallel_writes_and_edits_through_a_symlink_are_serialised(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_text("")
    (tmp_path / "link.txt").symlink_to(real)
    ctx = ToolCallContext(tool_call_id="w", signal=AbortSignal(), cwd=str(tmp_path))
    await write_tool.execute(write_tool.validate_arguments({"path": "real.txt", "content": "a\nb\n"}), ctx)

    async def edit(name: str, old: str, new: str) -> None:
        await edit_tool.execute(edit_tool.validate_arguments({"path": name, "edits": one(old, new)}), ctx)

    async with anyio.create_task_group() as group:
        group.start_soon(edit, "real.txt", "a\n", "A\n")
        group.start_soon(edit, "link.txt", "b\n", "B\n")
    assert real.read_text() == "A\nB\n"


async def test_abort_before_edit_leaves_file(call: Caller, tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("x")
    signal = AbortSignal()
    signal.abort()
    with pytest.raises(Exception, match="Operation aborted"):
        await call(edit_tool, {"path": "f.txt", "edits": one("x", "y")}, signal=signal)
    assert (tmp_path / "f.txt").read_text() == "x"


# -- files that are not UTF-8: the bytes the edit does not touch stay as they were ----------


async def test_edit_keeps_a_latin1_file_in_latin1(call: Caller, tmp_path: Path) -> None:
    # pi decodes with U+FFFD and writes UTF-8: every é below became EF BF BD.
    original = "café au lait\nprix: 3€ — déjà vu\nfin\n".replace("€", "E").replace("—", "-")
    path = tmp_path / "latin1.txt"
    path.write_bytes(original.encode("latin-1"))
    result = await call(edit_tool, {"path": "latin1.txt", "edits": [{"oldText": "fin", "newText": "end"}]})
    assert call.text_of(result) == "Successfully replaced 1 block(s) in latin1.txt."
    assert path.read_bytes() == original.replace("fin", "end").encode("latin-1")
    # The diff is shown with U+FFFD for the bytes that are not UTF-8, and stays valid text.
    assert "+3 end" in result.details["diff"]
    assert " caf\ufffd au lait" in result.details["patch"].split("\n")
    json.dumps(result.to_json_dict(), ensure_ascii=False).encode("utf-8")


async def test_edit_next_to_invalid_bytes_keeps_them(call: Caller, tmp_path: Path) -> None:
    path = tmp_path / "mixed.txt"
    path.write_bytes(b"head \xff\xfe tail\r\nsecond line\r\n")
    await call(edit_tool, {"path": "mixed.txt", "edits": [{"oldText": "tail", "newText": "TAIL"}]})
    assert path.read_bytes() == b"head \xff\xfe TAIL\r\nsecond line\r\n"


async def test_old_text_over_undecodable_bytes_is_refused_with_a_hint(call: Caller, tmp_path: Path) -> None:
    path = tmp_path / "mixed.txt"
    path.write_bytes(b"head \xff tail\n")
    with pytest.raises(Exception, match=r"^Could not find the exact text") as info:
        await call(
            edit_tool, {"path": "mixed.txt", "edits": [{"oldText": "head \ufffd tail", "newText": "x"}]}
        )
    assert str(info.value).endswith(
        "The file is not valid UTF-8: read shows its other bytes as \ufffd, which the old text "
        "cannot match. Choose old text that avoids them; the edit keeps them as they are."
    )
    assert path.read_bytes() == b"head \xff tail\n"


async def test_lone_surrogates_from_the_model_are_written_as_replacement(
    call: Caller, tmp_path: Path
) -> None:
    # A JSON "\udcff" must not pass for the file's own undecodable byte 0xFF.
    path = tmp_path / "f.txt"
    path.write_bytes(b"a \xff b\n")
    await call(edit_tool, {"path": "f.txt", "edits": [{"oldText": "b", "newText": "\udcff"}]})
    assert path.read_bytes() == b"a \xff \xef\xbf\xbd\n"
