"""``spawn`` and ``collect``: a child started for ripgrep or fd is killed and reaped when its
block ends (or the collecting call is cancelled), however early the abort came."""

from __future__ import annotations

import os
import shutil
import time

import anyio
import pytest
from pi_tools_fs._external import collect, spawn

SLEEP = shutil.which("sleep")
pytestmark = pytest.mark.skipif(SLEEP is None or not os.path.isdir("/proc"), reason="needs sleep and /proc")


def _children(name: str) -> list[int]:
    """Our child processes named ``name``, zombies (killed, not reaped yet) included."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/comm") as handle:
                comm = handle.read().strip()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and comm == name:
            found.append(int(entry))
    return found


@pytest.mark.timeout(120)
async def test_a_cancelled_spawn_leaves_no_child_at_any_moment() -> None:
    # Cancelled after 0 to 1.5 ms: before the child exists, while its pipes are being connected
    # (the window where asyncio's own clean-up is itself cancelled), and inside the block.
    assert SLEEP is not None
    for step in range(150):
        with anyio.move_on_after(step * 0.00001):
            async with spawn([SLEEP, "30"], cwd=None):
                await anyio.sleep(30)
        assert _children("sleep") == [], f"a child outlived its block (cancelled at {step * 0.01:.2f} ms)"


@pytest.mark.timeout(120)
async def test_a_cancelled_collect_leaves_no_child_and_skips_its_work() -> None:
    assert SLEEP is not None
    made: list[bytes] = []
    for step in range(100):
        with anyio.move_on_after(step * 0.00002):
            await collect([SLEEP, "30"], None, made.append)
        assert _children("sleep") == [], f"a child outlived collect (cancelled at {step * 0.02:.2f} ms)"
    assert made == []  # the work on the output is skipped once the caller is gone


async def test_collect_hands_the_whole_output_to_its_work_and_an_abort_ends_it_at_once() -> None:
    done = await collect(["sh", "-c", "printf 'a\\0b\\0'; echo oops >&2; exit 2"], None, bytes.split)
    assert (done.returncode, done.stdout, done.stderr) == (2, b"a\0b\0", b"oops\n")
    assert done.result == [b"a\0b\0"]
    assert SLEEP is not None
    started = time.monotonic()
    with anyio.move_on_after(0.2):
        await collect([SLEEP, "30"], None, bytes.split)
    assert time.monotonic() - started < 5  # the kill ended the thread's read, not sleep's 30 s
    assert _children("sleep") == []
