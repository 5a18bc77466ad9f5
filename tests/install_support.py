"""Real environments for the installation tests: pip venvs, ``uv tool`` and pipx applications.

Each is filled from this checkout, pinned to the versions of the environment running the
tests, and never from the network: pip and uv both have no index and find third-party wheels in
a folder packed from the running environment (:mod:`tests.wheelhouse`). uv's cache cannot stand
in for that folder: ``uv sync`` installs from the lockfile and keeps no index pages, so an
offline resolution from the cache alone fails on a fresh machine. Commands run with an isolated
``HOME``; uv's cache stays the user's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import distributions
from pathlib import Path

from tests.wheelhouse import build_wheelhouse

ROOT = Path(__file__).resolve().parent.parent
# What the tests' environments install from outside this checkout: pi-host's dependencies, its
# testing extra, the build backend of every project here, and pipx.
WHEELHOUSE_ROOTS = (
    "pi-host[default,testing]",
    "pi-tools-fs",
    "pi-bash",
    "pi-compaction",
    "pi-retry",
    "hatchling",
    "editables",
    "pipx",
)
UV = shutil.which("uv") or os.environ.get("UV")  # uv run names itself; a bootstrapped uv is off PATH
TIMEOUT = 600
_LOCAL = ("pi-", "code-reviewer")


def _cache_dirs() -> dict[str, str]:
    """The user's uv cache, kept when ``HOME`` is replaced."""
    found = {}
    if UV is not None:
        uv_cache = subprocess.run([UV, "cache", "dir"], capture_output=True, text=True, check=False)
        if uv_cache.returncode == 0:
            found["UV_CACHE_DIR"] = uv_cache.stdout.strip()
    return found


def write_constraints(path: Path) -> Path:
    """Pins for every third-party distribution, as installed where the tests run."""
    pins = sorted(
        {
            f"{dist.metadata['Name']}=={dist.version}"
            for dist in distributions()
            if dist.metadata["Name"] and not dist.metadata["Name"].lower().startswith(_LOCAL)
        }
    )
    path.write_text("\n".join(pins) + "\n")
    return path


@dataclass
class Sandbox:
    """An isolated home with uv's cache, a bin folder first on ``PATH``, pins, and no network:
    uv offline, pip and uv with no index and :attr:`wheels` as their ``--find-links``."""

    root: Path
    extra_path: list[Path] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        self.bin.mkdir(parents=True, exist_ok=True)
        if UV is not None and not (self.bin / "uv").exists():
            # uv on PATH, as it is for whoever uses `uv tool` (the suite's may be off PATH).
            (self.bin / "uv").symlink_to(UV)
        self.constraints = write_constraints(self.root / "constraints.txt")
        self.wheels = build_wheelhouse(self.root / "wheels", WHEELHOUSE_ROOTS)
        self._caches = _cache_dirs()

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    def environ(self, **extra: str) -> dict[str, str]:
        keep = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("PI_HOST", "VIRTUAL_ENV", "PYTHON", "UV_", "PIP_", "PIPX_"))
            and k not in ("ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN", "OPENAI_API_KEY", "PYTEST_ADDOPTS")
        }
        path = [str(p) for p in (self.bin, *self.extra_path)]
        keep.update(
            self._caches,
            HOME=str(self.home),
            PATH=os.pathsep.join([*path, os.environ.get("PATH", "")]),
            NO_COLOR="1",
            PIP_CONFIG_FILE=os.devnull,  # the machine's pip configuration may name an index
            PIP_NO_INDEX="1",
            PIP_FIND_LINKS=str(self.wheels),
            PIP_DISABLE_PIP_VERSION_CHECK="1",
            UV_OFFLINE="1",
            UV_NO_INDEX="1",
            UV_FIND_LINKS=str(self.wheels),
            UV_TOOL_DIR=str(self.root / "uv-tools"),
            UV_TOOL_BIN_DIR=str(self.bin),
            PIPX_HOME=str(self.root / "pipx"),
            PIPX_BIN_DIR=str(self.root / "pipx-bin"),
        )
        keep.update(extra)
        return keep

    def run(
        self,
        *args: str | Path,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = TIMEOUT,
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(arg) for arg in args],
            cwd=cwd or self.home,
            env=self.environ(**dict(env or {})),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )


def pip_venv(sandbox: Sandbox, name: str, requirements: Sequence[str]) -> Path:
    """A ``python -m venv`` environment (with pip), ``requirements`` installed; returns its bin."""
    venv = sandbox.root / name
    created = sandbox.run(sys.executable, "-m", "venv", venv)
    assert created.returncode == 0, created.stderr
    python = venv / "bin" / "python"
    if requirements:
        assert UV is not None
        command = [UV, "pip", "install", "--python", str(python), "-c", str(sandbox.constraints)]
        result = sandbox.run(*command, *requirements)
        assert result.returncode == 0, result.stderr
    return venv / "bin"


def copy_tree(source: Path, destination: Path) -> Path:
    """A clean copy of a project (no caches or build output)."""
    shutil.copytree(
        source,
        destination,
        ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", "build", "dist", "*.egg-info", ".venv"),
    )
    return destination


def copy_repository(destination: Path) -> Path:
    """The working tree's tracked and new files (not .venv or caches)."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if not source.is_file():
            continue
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    return destination
