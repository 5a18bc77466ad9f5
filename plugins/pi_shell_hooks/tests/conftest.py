"""Fixtures for pi-shell-hooks: the pi-host testing kit and hook scripts written to disk."""

from __future__ import annotations

import stat
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

Script = Callable[..., str]


@pytest.fixture
def script(tmp_path: Path) -> Script:
    """``script(body, lang="bash"|"python")``: an executable hook script; returns its path."""
    scripts = tmp_path / "hooks"
    scripts.mkdir(exist_ok=True)
    count = 0

    def make(body: str, lang: str = "bash") -> str:
        nonlocal count
        count += 1
        shebang = "#!/bin/bash" if lang == "bash" else f"#!{sys.executable}"
        path = scripts / f"hook{count}.{'sh' if lang == 'bash' else 'py'}"
        path.write_text(shebang + "\n" + textwrap.dedent(body).lstrip("\n"))
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
        return str(path)

    return make
