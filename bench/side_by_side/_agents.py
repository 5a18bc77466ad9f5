"""The two agents under test: how to find or install them, and how to start them.

Each agent gets its own agent directory (pi: ``PI_CODING_AGENT_DIR``, pi-host: ``PI_HOST_DIR``)
holding a ``models.json`` that points a custom provider at the fake server, and an environment
without provider keys, so nothing reaches the network.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "DEFAULT_PLUGINS",
    "MODEL",
    "PI_PACKAGE",
    "PROVIDER",
    "Agent",
    "PiUnavailable",
    "ensure_pi",
    "pi_agent",
    "pi_host_agent",
    "write_models_json",
]

PROVIDER = "bench"
MODEL_ID = "fake-model"
MODEL = f"{PROVIDER}/{MODEL_ID}"
PI_PACKAGE = "@mariozechner/pi-coding-agent"
_PI_CLI = Path("node_modules/@mariozechner/pi-coding-agent/dist/cli.js")

# Variables that would change either agent's behaviour or send it to a real provider.
_SCRUBBED_PREFIXES = ("PI_", "ANTHROPIC_", "OPENAI_")


class PiUnavailable(RuntimeError):
    """pi could not be found or installed (no node/npm, no registry access, wrong version)."""


@dataclass
class Agent:
    """A command to run, its environment and its agent directory."""

    name: str
    argv: list[str]
    agent_dir: Path
    env: dict[str, str] = field(default_factory=dict)
    version: str = ""


def _base_env() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(_SCRUBBED_PREFIXES)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["NO_COLOR"] = "1"
    return env


def write_models_json(agent_dir: Path, base_url: str) -> None:
    """Point the custom provider ``bench`` at ``base_url`` (pi's ``models.json`` format)."""
    agent_dir.mkdir(parents=True, exist_ok=True)
    config = {
        "providers": {
            PROVIDER: {
                "baseUrl": base_url,
                "api": "anthropic-messages",
                "apiKey": "bench",
                "models": [{"id": MODEL_ID, "name": "Fake model", "contextWindow": 200000}],
            }
        }
    }
    (agent_dir / "models.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


#: The plugins of ``pi-host[default]``, the counterpart of what pi ships built in. The
#: development environment also installs opt-in plugins (pi-guard, pi-shell-hooks) whose hooks
#: pi has no equivalent of; the comparison leaves them out unless asked (``--all-plugins``).
DEFAULT_PLUGINS = ("bash", "compaction", "retry", "tools_fs")


def pi_host_agent(
    agent_dir: Path, cache: Path, command: Path | None = None, *, plugins: tuple[str, ...] | None = None
) -> Agent:
    """pi-host from the environment the runner runs in (``.venv/bin/pi-host``).

    Bytecode caches go to ``cache/pycache``: an installed pi-host has them after its first run,
    and a development environment with ``PYTHONDONTWRITEBYTECODE`` set would otherwise compile
    every module on every start.

    :param plugins: the allow-list of plugins (``PI_HOST_PLUGINS``); ``None`` loads every
        installed plugin.
    """
    executable = command or Path(sys.executable).with_name("pi-host")
    if not executable.exists():
        found = shutil.which("pi-host")
        if found is None:
            raise FileNotFoundError(
                f"pi-host is not installed next to {sys.executable}; run `uv sync` first "
                "or pass --pi-host PATH"
            )
        executable = Path(found)
    env = _base_env()
    env["PI_HOST_DIR"] = str(agent_dir)
    env["PYTHONPYCACHEPREFIX"] = str(cache / "pycache")
    if plugins is not None:
        env["PI_HOST_PLUGINS"] = ",".join(plugins)
    agent = Agent(name="pi-host", argv=[str(executable)], agent_dir=agent_dir, env=env)
    agent.version = _version(agent)
    return agent


def ensure_pi(cache: Path, version: str = "0.73", *, install: bool = True) -> Path:
    """The path of pi's ``cli.js`` in ``cache``, installing ``PI_PACKAGE@version`` there if missing.

    :raises PiUnavailable: with the reason, when node or npm is missing or the install fails.
    """
    cli = cache / _PI_CLI
    if cli.exists():
        return cli
    if shutil.which("node") is None:
        raise PiUnavailable("node is not installed; install Node.js 20+ to compare with pi")
    npm = shutil.which("npm")
    if npm is None:
        raise PiUnavailable("npm is not installed; install Node.js 20+ (with npm) to compare with pi")
    if not install:
        raise PiUnavailable(f"pi is not installed in {cache} and --no-install was given")
    cache.mkdir(parents=True, exist_ok=True)
    print(f"installing {PI_PACKAGE}@{version} into {cache} ...", file=sys.stderr, flush=True)
    result = subprocess.run(
        [npm, "install", f"{PI_PACKAGE}@{version}", "--prefix", str(cache), "--no-audit", "--no-fund"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if result.returncode != 0 or not cli.exists():
        tail = (result.stderr or result.stdout).strip().splitlines()[-5:]
        raise PiUnavailable(f"npm install {PI_PACKAGE}@{version} failed: " + " / ".join(tail))
    return cli


def pi_agent(agent_dir: Path, cli: Path) -> Agent:
    """pi run by node, offline (no update check, no telemetry, no tool downloads)."""
    node = shutil.which("node")
    if node is None:
        raise PiUnavailable("node is not installed; install Node.js 20+ to compare with pi")
    env = _base_env()
    env.update(
        PI_CODING_AGENT_DIR=str(agent_dir), PI_OFFLINE="1", PI_SKIP_VERSION_CHECK="1", PI_TELEMETRY="0"
    )
    agent = Agent(name="pi", argv=[node, str(cli)], agent_dir=agent_dir, env=env)
    agent.version = _version(agent)
    return agent


def _version(agent: Agent) -> str:
    result = subprocess.run(
        [*agent.argv, "--version"], env=agent.env, capture_output=True, text=True, timeout=120
    )
    if result.returncode != 0:
        raise RuntimeError(f"{agent.name} --version failed: {result.stderr.strip()[-500:]}")
    # pi prints its version (and its help) on stderr.
    return (result.stdout.strip() or result.stderr.strip()).splitlines()[-1]
