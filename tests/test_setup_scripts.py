"""``scripts/run.sh`` and ``scripts/test.sh`` on a Python that refuses ``pip install``, as Debian's does.

The interpreter is built for the test: the running Python's executable copied into a new
prefix whose standard library is a folder of links to the real one, plus PEP 668's
``EXTERNALLY-MANAGED`` marker, and a ``site-packages`` holding only pip (Debian's
python3-pip). It is no virtual environment, so pip honours the marker. The scripts run in a
copy of the repository with that Python first on ``PATH`` and no uv anywhere on it, so they
must bootstrap uv without touching that Python. Nothing comes from the network: pip finds uv
in a local wheel folder, and uv runs offline on its cache (see :mod:`tests.install_support`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.install_support import ROOT, UV, Sandbox, copy_repository
from tests.wheelhouse import add_uv_wheel

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(1200),
    pytest.mark.skipif(UV is None, reason="the uv cache makes these runs affordable"),
    pytest.mark.skipif(sys.platform != "linux", reason="builds a Linux interpreter prefix"),
]

MARKER = """\
[externally-managed]
Error=To install Python packages system-wide, try apt install python3-xyz.
 (a test interpreter of pi-host's suite, built like Debian's)
"""


@dataclass
class SystemPython:
    prefix: Path
    site_packages: Path

    @property
    def python(self) -> Path:
        return self.prefix / "bin" / "python3"

    def contents(self) -> list[str]:
        return sorted(str(p.relative_to(self.site_packages)) for p in self.site_packages.rglob("*"))


def build_system_python(prefix: Path) -> SystemPython:
    """An externally managed, non-venv interpreter, sharing the running one's files by link."""
    base = Path(sys.base_prefix)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    executable = base / "bin" / version
    assert executable.is_file(), executable
    (prefix / "bin").mkdir(parents=True)
    # A copy, not a link: Python finds its prefix from the executable's real location.
    shutil.copy2(executable, prefix / "bin" / version)
    (prefix / "bin" / "python3").symlink_to(version)
    stdlib = prefix / "lib" / version
    stdlib.mkdir(parents=True)
    real_stdlib = Path(sysconfig.get_paths(vars={"installed_base": str(base), "base": str(base)})["stdlib"])
    for entry in real_stdlib.iterdir():
        if entry.name != "site-packages":
            (stdlib / entry.name).symlink_to(entry)
    (stdlib / "EXTERNALLY-MANAGED").write_text(MARKER)
    site = stdlib / "site-packages"
    site.mkdir()
    real_site = real_stdlib / "site-packages"
    for entry in real_site.iterdir():
        if entry.name == "pip" or (entry.name.startswith("pip-") and entry.name.endswith(".dist-info")):
            (site / entry.name).symlink_to(entry)
    return SystemPython(prefix, site)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Sandbox, SystemPython, Path]:
    root = tmp_path_factory.mktemp("setup-scripts")
    system = build_system_python(root / "system-python")
    sandbox = Sandbox(root / "sandbox", extra_path=[system.prefix / "bin"])
    assert UV is not None
    # The scripts' `pip install uv` finds this uv, the suite's own, in the sandbox's wheel
    # folder: same version, so the uv cache it then runs offline on is one it can read.
    add_uv_wheel(sandbox.wheels, UV)
    repo = copy_repository(root / "repo")
    # mypy's cache from the suite's own test.sh run (the copy keeps the files' times, so it is
    # valid): test.sh still type-checks everything, without a cold start (~1 minute on 2 cores).
    if (ROOT / ".mypy_cache").is_dir():
        shutil.copytree(ROOT / ".mypy_cache", repo / ".mypy_cache")
    return sandbox, system, repo


def _environ(sandbox: Sandbox, system: SystemPython, **extra: str) -> dict[str, str]:
    """No uv and no other Python on PATH: the system Python, then the base tools."""
    environ = sandbox.environ(**extra)
    environ["PATH"] = os.pathsep.join([str(system.prefix / "bin"), "/usr/local/bin", "/usr/bin", "/bin"])
    environ.pop("CI", None)  # test.sh would install ripgrep with apt-get
    return environ


def _run(
    sandbox: Sandbox, system: SystemPython, repo: Path, *args: str, **extra: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", *args],
        cwd=repo,
        env=_environ(sandbox, system, **extra),
        capture_output=True,
        text=True,
        timeout=900,
        stdin=subprocess.DEVNULL,
    )


def test_the_built_python_refuses_pip_install(setup: tuple[Sandbox, SystemPython, Path]) -> None:
    sandbox, system, _ = setup
    probe = subprocess.run(
        [system.python, "-c", "import sys; print(sys.prefix == sys.base_prefix, sys.prefix)"],
        capture_output=True,
        text=True,
        env=_environ(sandbox, system),
    )
    assert probe.stdout.split() == ["True", str(system.prefix)], probe.stderr
    refused = subprocess.run(
        [system.python, "-m", "pip", "install", "--dry-run", "uv"],
        capture_output=True,
        text=True,
        env=_environ(sandbox, system),
    )
    assert refused.returncode != 0
    assert "externally-managed-environment" in refused.stderr
    assert shutil.which("uv", path=_environ(sandbox, system)["PATH"]) is None


def test_run_sh_bootstraps_uv_and_shows_the_offline_demo(setup: tuple[Sandbox, SystemPython, Path]) -> None:
    sandbox, system, repo = setup
    before = system.contents()
    result = _run(sandbox, system, repo, "scripts/run.sh", COLUMNS="200")  # no wrapped lines
    assert result.returncode == 0, result.stdout + result.stderr
    assert "uv is not installed: installing it into" in result.stderr
    out = result.stdout
    # The agent calls a tool, shows its result, and answers from what it returned.
    visible = [entry for entry in repo.iterdir() if not entry.name.startswith(".")]
    folders = sum(entry.is_dir() for entry in visible)
    assert re.search(r"● ls path='\.'\n(  \S.*\n)+", out), out
    assert "● read path='README.md' limit=5\n  # pi-host\n" in out, out
    assert f"This folder holds {len(visible) - folders} files and {folders} folders" in out, out
    assert "Its README introduces it as pi-host." in out
    assert system.contents() == before  # nothing installed into the system Python
    venv_python = repo / ".venv" / "bin" / "python"
    runtime = subprocess.run(
        [venv_python, "-c", "import pi_tools_fs, pi_bash, pi_retry, pi_compaction"], capture_output=True
    )
    assert runtime.returncode == 0, runtime.stderr
    for dev_tool in ("pytest", "mypy", "ruff", "hypothesis"):
        absent = subprocess.run([venv_python, "-c", f"import {dev_tool}"], capture_output=True)
        assert absent.returncode != 0, f"run.sh installed the dev tool {dev_tool}"

    # With arguments it is pi-host itself.
    script = repo / "replies.json"
    script.write_text('[{"text": "Hello from the script."}]')
    prompt = _run(
        sandbox,
        system,
        repo,
        "scripts/run.sh",
        "--provider",
        "faux",
        "-p",
        "hi",
        PI_HOST_FAUX_SCRIPT=str(script),
    )
    assert prompt.returncode == 0, prompt.stderr
    assert prompt.stdout == "Hello from the script.\n"
    assert "installing it" not in prompt.stderr  # the bootstrapped uv is reused


def test_test_sh_passes_with_the_same_python(setup: tuple[Sandbox, SystemPython, Path]) -> None:
    sandbox, system, repo = setup
    before = system.contents()
    result = _run(sandbox, system, repo, "scripts/test.sh", "tests/test_packaging.py")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert " passed" in result.stdout
    assert system.contents() == before
