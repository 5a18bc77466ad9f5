"""Whether fd knows ``--no-require-git`` is asked without blocking the event loop: many
sessions may share one loop (``create_session``), and fd's ``--help`` is a process start."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from pi_tools_fs._external import FdBinary, find_fd


def _fake_fd(directory: Path, marker: Path) -> Path:
    """An ``fd`` whose ``--help`` names ``--no-require-git`` only once ``marker`` exists,
    which another task of the loop creates: the probe sees it only if the loop ran meanwhile.
    It gives up after 5 s (a blocked loop never creates it)."""
    directory.mkdir()
    fake = directory / "fd"
    fake.write_text(
        "#!/bin/sh\n"
        "i=0\n"
        f'while [ ! -e "{marker}" ] && [ "$i" -lt 100 ]; do sleep 0.05; i=$((i + 1)); done\n'
        f'if [ -e "{marker}" ]; then echo "      --no-require-git"; fi\n'
    )
    fake.chmod(0o755)
    return fake


async def test_the_fd_probe_leaves_the_loop_to_other_sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "the-loop-ran"
    fake = _fake_fd(tmp_path / "bin", marker)
    monkeypatch.setenv("PATH", str(fake.parent))
    found: list[FdBinary | None] = []

    async def probe() -> None:
        found.append(await find_fd())

    async def another_session() -> None:
        marker.write_text("ran while fd was being asked\n")

    async with anyio.create_task_group() as tg:
        tg.start_soon(probe)  # starts first: a blocking probe would hold the loop until it ends
        tg.start_soon(another_session)
    assert found == [FdBinary(str(fake), True)]
    marker.unlink()
    assert await find_fd() == FdBinary(str(fake), True)  # asked once per path


async def test_an_fd_that_cannot_start_counts_as_old(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    directory = tmp_path / "bin"
    directory.mkdir()
    broken = directory / "fd"
    broken.write_text("#!/nonexistent/interpreter\n")
    broken.chmod(0o755)
    monkeypatch.setenv("PATH", str(directory))
    assert await find_fd() == FdBinary(str(broken), False)
