"""The real pi 0.73 for side-by-side tests: find it, or install it from npm into a cache.

pi is looked for at ``PI073_ROOT`` (its ``pi-coding-agent`` package directory), then at
``/tmp/pi073``, then in the test cache (``PI_HOST_TEST_CACHE``, default
``~/.cache/pi-host-tests``). When none has it, ``npm install`` puts it in the cache once;
the calling test is skipped, saying why, only when node is missing or npm cannot install it.

Use it from a test module through a fixture of its own::

    @pytest.fixture(scope="session")
    def pi_cli() -> Path:
        return require_pi_cli()
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

__all__ = [
    "CACHE",
    "PI_HOST",
    "PI_PACKAGE",
    "PI_VERSION",
    "clean_env",
    "installed_pi_cli",
    "require_pi_cli",
    "require_pi_package",
]

PI_VERSION = "0.73.1"
PI_PACKAGE = "@mariozechner/pi-coding-agent"
PI_HOST = shutil.which("pi-host") or str(Path(sys.executable).parent / "pi-host")
CACHE = Path(os.environ.get("PI_HOST_TEST_CACHE", Path.home() / ".cache" / "pi-host-tests"))

# Why an earlier call could not provide pi: asked again, the answer is the same skip,
# without a second slow npm attempt.
_unavailable: list[str] = []


def installed_pi_cli() -> Path | None:
    """pi's ``dist/cli.js`` if some known location has it, else None."""
    roots = [
        os.environ.get("PI073_ROOT"),
        f"/tmp/pi073/node_modules/{PI_PACKAGE}",
        str(CACHE / f"pi-{PI_VERSION}" / "node_modules" / PI_PACKAGE),
    ]
    for root in roots:
        if root and (Path(root) / "dist" / "cli.js").exists():
            return Path(root) / "dist" / "cli.js"
    return None


def require_pi_cli() -> Path:
    """pi's ``cli.js``, installed with npm into the test cache the first time if needed.

    :raises pytest.skip.Exception: when node is missing or npm cannot install pi.
    """
    if _unavailable:
        pytest.skip(_unavailable[0])
    if shutil.which("node") is None:
        _unavailable.append("node is not installed: the real pi cannot run")
        pytest.skip(_unavailable[0])
    cli = installed_pi_cli()
    if cli is not None:
        return cli
    npm = shutil.which("npm")
    if npm is None:
        _unavailable.append(f"pi {PI_VERSION} is not installed and npm is not available to install it")
        pytest.skip(_unavailable[0])
    prefix = CACHE / f"pi-{PI_VERSION}"
    prefix.mkdir(parents=True, exist_ok=True)
    install = subprocess.run(
        [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", f"{PI_PACKAGE}@{PI_VERSION}"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    cli = installed_pi_cli()
    if install.returncode != 0 or cli is None:
        _unavailable.append(
            f"npm could not install {PI_PACKAGE}@{PI_VERSION}: {install.stderr.strip()[-500:]}"
        )
        pytest.skip(_unavailable[0])
    return cli


def require_pi_package() -> Path:
    """pi's ``pi-coding-agent`` package directory (``dist/`` inside), installed as
    :func:`require_pi_cli` does."""
    return require_pi_cli().parent.parent


def clean_env() -> dict[str, str]:
    """This process's environment without anything that would point either agent elsewhere:
    agent directories and real provider credentials; the opt-in pi-subagents and
    pi-checkpoints disabled."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_HOST", "PI_CODING_AGENT"))}
    for key in ("ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN", "OPENAI_API_KEY"):
        env.pop(key, None)
    # The side-by-side tests compare pi with pi-host's default plugin set. An opt-in plugin
    # installed in the dev environment for its own tests must not take part: pi-subagents adds
    # a tool pi does not have (task), pi-checkpoints snapshots and appends session entries
    # around every write; pi ignores the variable.
    env["PI_HOST_DISABLE_PLUGINS"] = "subagents,checkpoints"
    return env
