"""The examples, pip-installed for real into fresh virtual environments.

(The plugin tutorial is followed with plain pip by tests/test_docs_install.py.)

Each environment is made with ``uv venv`` and filled with ``uv pip install`` from this
repository, offline: third-party wheels come from a folder packed from the environment running
the tests (:mod:`tests.wheelhouse`), pinned to its versions. One environment per scenario,
shared by its tests.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import distributions
from pathlib import Path

import pytest

from tests.wheelhouse import build_wheelhouse

ROOT = Path(__file__).resolve().parent.parent
PLUGINS = ROOT / "plugins"
EXAMPLES = ROOT / "examples"
LOCAL_PACKAGES = (
    "pi-host",
    "pi-tools-fs",
    "pi-bash",
    "pi-compaction",
    "pi-retry",
    "pi-hello",
    "pi-patient-retry",
    "pi-brief-compaction",
    "code-reviewer",
)
INSTALL_TIMEOUT = 300
# What the environments install from outside this checkout: the examples' dependencies, their
# test extras and the build backend.
WHEELHOUSE_ROOTS = (
    "pi-host[default]",
    "pi-tools-fs",
    "pi-bash",
    "pi-compaction",
    "pi-retry",
    "pytest",
    "pytest-asyncio",
    "hatchling",
    "editables",
)

UV = shutil.which("uv") or os.environ.get("UV")  # uv run names itself; a bootstrapped uv is off PATH
needs_uv = pytest.mark.skipif(UV is None, reason="the example tests build environments with uv")
pytestmark = pytest.mark.timeout(900)


@dataclass
class Venv:
    """A fresh virtual environment and an isolated home for the commands run in it."""

    path: Path
    home: Path
    constraints: Path
    wheels: Path

    @property
    def bin(self) -> Path:
        return self.path / "bin"

    @property
    def python(self) -> Path:
        return self.bin / "python"

    def environ(self, **extra: str) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("PI_HOST", "VIRTUAL_ENV", "PYTHON"))}
        for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN", "OPENAI_API_KEY", "PYTEST_ADDOPTS"):
            keep.pop(name, None)
        keep.update(
            HOME=str(self.home),
            VIRTUAL_ENV=str(self.path),
            PATH=f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}",
            UV_CONSTRAINT=str(self.constraints),
            NO_COLOR="1",
        )
        keep.update(extra)
        return keep

    def install(self, *requirements: str) -> None:
        """``uv pip install`` into this environment; local packages are always rebuilt."""
        refresh = [arg for name in LOCAL_PACKAGES for arg in ("--refresh-package", name)]
        command = [str(UV), "pip", "install", "--python", str(self.python), *refresh, *requirements]
        offline = {"UV_NO_INDEX": "1", "UV_FIND_LINKS": str(self.wheels)}  # no network, yet --refresh
        result = subprocess.run(
            command, env=self.environ(**offline), capture_output=True, text=True, timeout=INSTALL_TIMEOUT
        )
        assert result.returncode == 0, f"installing {requirements} failed:\n{result.stderr}"

    def run(
        self, *args: str | Path, cwd: Path, env: Mapping[str, str] | None = None, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(arg) for arg in args],
            cwd=cwd,
            env=self.environ(**dict(env or {})),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )


def _constraints(directory: Path) -> Path:
    """Pins for every third-party package, as installed in the environment running the tests."""
    pins = sorted(
        {
            f"{dist.metadata['Name']}=={dist.version}"
            for dist in distributions()
            if dist.metadata["Name"]
            and dist.metadata["Name"].lower() not in LOCAL_PACKAGES
            and not dist.metadata["Name"].lower().startswith("pi-")
        }
    )
    path = directory / "constraints.txt"
    path.write_text("\n".join(pins) + "\n")
    return path


def make_venv(tmp_path_factory: pytest.TempPathFactory, name: str) -> Venv:
    root = tmp_path_factory.mktemp(name)
    home = root / "home"
    home.mkdir()
    venv = Venv(root / "venv", home, _constraints(root), build_wheelhouse(root / "wheels", WHEELHOUSE_ROOTS))
    created = subprocess.run(
        [str(UV), "venv", "--quiet", "--python", sys.executable, str(venv.path)],
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT,
    )
    assert created.returncode == 0, created.stderr
    return venv


def copy_example(name: str, destination: Path) -> Path:
    """A clean copy of an example (no caches or build output from the working tree)."""
    target = destination / name
    shutil.copytree(
        EXAMPLES / name,
        target,
        ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", "build", "*.egg-info"),
    )
    return target


def installed(venv: Venv) -> set[str]:
    result = venv.run(UV or "uv", "pip", "list", "--format", "json", "--python", venv.python, cwd=venv.home)
    return {entry["name"] for entry in json.loads(result.stdout)}


# -- examples/pi-hello: a third-party plugin, with nothing but pi-host -----------------------------


@pytest.fixture(scope="module")
def hello_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Venv, Path]]:
    venv = make_venv(tmp_path_factory, "pi-hello")
    source = copy_example("pi-hello", venv.home.parent)
    venv.install(str(ROOT), f"{source}[test]")
    yield venv, source


@needs_uv
def test_pi_hello_tests_pass_where_only_pi_host_and_the_example_are_installed(
    hello_env: tuple[Venv, Path],
) -> None:
    venv, source = hello_env
    assert {"pi-host", "pi-hello"} <= installed(venv)
    assert not {"pi-tools-fs", "pi-bash", "pi-compaction", "pi-retry"} & installed(venv)
    result = venv.run(venv.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=source)
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"\b8 passed\b", result.stdout), result.stdout


@needs_uv
def test_pi_host_picks_up_the_installed_example(hello_env: tuple[Venv, Path]) -> None:
    venv, source = hello_env
    result = venv.run(venv.bin / "pi-host", "plugins", "list", "--json", cwd=source)
    assert result.returncode == 0, result.stderr
    (hello,) = [info for info in json.loads(result.stdout) if info["name"] == "hello"]
    assert (hello["distribution"], hello["version"], hello["status"]) == ("pi-hello", "0.1.0", "enabled")


# -- examples/pi-patient-retry, pi-brief-compaction: third-party batteries -------------------------


@pytest.fixture(scope="module")
def batteries_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Venv, dict[str, Path]]]:
    """pi-host and the two example batteries, without pi-retry and pi-compaction."""
    venv = make_venv(tmp_path_factory, "batteries")
    sources = {
        name: copy_example(name, venv.home.parent) for name in ("pi-patient-retry", "pi-brief-compaction")
    }
    venv.install(str(ROOT), *(f"{source}[test]" for source in sources.values()))
    yield venv, sources


@needs_uv
@pytest.mark.parametrize(("example", "count"), [("pi-patient-retry", 8), ("pi-brief-compaction", 7)])
def test_third_party_batteries_replace_the_first_party_ones(
    batteries_env: tuple[Venv, dict[str, Path]], example: str, count: int
) -> None:
    """#14's acceptance: retry and compaction plugins written from the docs, public API only,
    replace pi-retry and pi-compaction in print, JSON and RPC modes and for /compact."""
    venv, sources = batteries_env
    assert not {"pi-compaction", "pi-retry"} & installed(venv)
    result = venv.run(venv.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=sources[example])
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(rf"\b{count} passed\b", result.stdout), result.stdout


# -- examples/distribution: a distribution beside plain pi-host --------------------------------------


@pytest.fixture(scope="module")
def side_by_side(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Venv, Path]]:
    venv = make_venv(tmp_path_factory, "distribution")
    source = copy_example("distribution", venv.home.parent)
    venv.install(
        str(ROOT),
        *(str(PLUGINS / name) for name in ("pi_tools_fs", "pi_bash", "pi_compaction", "pi_retry")),
        f"{source}[test]",
    )
    project = venv.home / "project"
    project.mkdir()
    yield venv, project


@needs_uv
def test_distribution_example_tests_pass(side_by_side: tuple[Venv, Path]) -> None:
    venv, _ = side_by_side
    source = venv.home.parent / "distribution"
    result = venv.run(venv.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=source)
    assert result.returncode == 0, result.stdout + result.stderr


def _plugin_status(venv: Venv, command: str, cwd: Path) -> dict[str, str]:
    result = venv.run(venv.bin / command, "plugins", "list", "--json", cwd=cwd)
    assert result.returncode == 0, result.stderr
    return {info["name"]: info["status"] for info in json.loads(result.stdout)}


@needs_uv
def test_each_command_has_its_own_plugin_set(side_by_side: tuple[Venv, Path]) -> None:
    venv, project = side_by_side
    plain = _plugin_status(venv, "pi-host", project)
    reviewer = _plugin_status(venv, "code-reviewer", project)
    assert plain["bash"] == "enabled" and reviewer["bash"] == "disabled"
    assert plain["tools_fs"] == reviewer["tools_fs"] == "enabled"


def _script(directory: Path, name: str, steps: Sequence[object]) -> str:
    path = directory / name
    path.write_text(json.dumps(steps))
    return str(path)


@needs_uv
def test_each_command_has_its_own_settings_sessions_and_tools(side_by_side: tuple[Venv, Path]) -> None:
    venv, project = side_by_side
    home = venv.home
    write = [
        {"toolCalls": [{"name": "write", "arguments": {"path": "out.txt", "content": "x"}}]},
        {"text": "done"},
    ]

    # Settings: only the reviewer's agent directory names a default model (the faux one).
    reviewer_dir = home / ".code-reviewer"
    reviewer_dir.mkdir(exist_ok=True)
    (reviewer_dir / "settings.json").write_text(
        json.dumps({"defaultProvider": "faux", "defaultModel": "faux-1"})
    )
    script = {"PI_HOST_FAUX_SCRIPT": _script(home, "write.json", write)}
    reviewer = venv.run(
        venv.bin / "code-reviewer", "--mode", "json", "-p", "write out.txt", cwd=project, env=script
    )
    assert reviewer.returncode == 0, reviewer.stderr
    plain_default = venv.run(venv.bin / "pi-host", "-p", "hi", cwd=project, env=script)
    assert plain_default.returncode != 0  # pi-host's own settings name no model, and there is no key

    # Tools: the same scripted write is refused by the reviewer, done by pi-host.
    ends = [e for e in map(json.loads, reviewer.stdout.splitlines()) if e.get("type") == "tool_execution_end"]
    assert [(e["toolName"], e["isError"]) for e in ends] == [("write", True)]
    assert not (project / "out.txt").exists()
    plain = venv.run(
        venv.bin / "pi-host", "--provider", "faux", "-p", "write out.txt", cwd=project, env=script
    )
    assert plain.returncode == 0, plain.stderr
    assert (project / "out.txt").read_text() == "x"

    # Sessions: one per command, each in its own agent directory; --continue stays in its own.
    reviewer_sessions = list((reviewer_dir / "sessions").rglob("*.jsonl"))
    plain_sessions = list((home / ".pi-host" / "sessions").rglob("*.jsonl"))
    assert len(reviewer_sessions) == 1 and len(plain_sessions) == 1
    before = reviewer_sessions[0].read_text().count("\n")
    again = venv.run(
        venv.bin / "code-reviewer",
        "-c",
        "-p",
        "and again",
        cwd=project,
        env={"PI_HOST_FAUX_SCRIPT": _script(home, "again.json", [{"text": "again"}])},
    )
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "again"
    assert list((reviewer_dir / "sessions").rglob("*.jsonl")) == reviewer_sessions
    assert reviewer_sessions[0].read_text().count("\n") > before
    assert plain_sessions[0].read_text().count('"role":"user"') == 1


# -- the Distribution API the example builds on (in-process, no environment needed) --------------


def test_distribution_validates_its_fields() -> None:
    from pi_host import Distribution

    with pytest.raises(ValueError, match="invalid distribution name"):
        Distribution(name="code reviewer")
    with pytest.raises(ValueError, match="'provider/model'"):
        Distribution(name="x", default_model="sonnet")
    with pytest.raises(TypeError, match="not the string"):
        Distribution(name="x", plugins="tools_fs")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not a string"):
        Distribution(name="x", tools="read")  # type: ignore[arg-type]
    dist = Distribution(name="x", plugins=["a"], tools=["read"], plugin_modules=["m"])  # type: ignore[arg-type]
    assert dist.plugins == frozenset({"a"}) and dist.tools == ("read",) and dist.plugin_modules == ("m",)


def test_distribution_environment_narrows_never_widens(tmp_path: Path) -> None:
    from pi_host import Distribution

    dist = Distribution(name="code-reviewer", plugins={"tools_fs", "retry"}, disabled_plugins={"retry"})
    env = {"HOME": str(tmp_path), "PI_HOST_DIR": "/elsewhere", "PI_HOST_DISABLE_PLUGINS": "compaction"}
    dist.apply_environment(env)
    assert env["PI_HOST_DIR"] == str(Path.home() / ".code-reviewer")
    assert env["PI_HOST_PLUGINS"] == "retry,tools_fs"
    assert env["PI_HOST_DISABLE_PLUGINS"] == "compaction,retry"

    narrowed = {"CODE_REVIEWER_DIR": str(tmp_path / "cr"), "PI_HOST_PLUGINS": "tools_fs,bash"}
    dist.apply_environment(narrowed)
    assert narrowed["PI_HOST_DIR"] == str(tmp_path / "cr")
    assert narrowed["PI_HOST_PLUGINS"] == "tools_fs"  # bash is not the distribution's to load
    safe = {"PI_HOST_PLUGINS": ""}
    dist.apply_environment(safe)
    assert safe["PI_HOST_PLUGINS"] == ""  # safe mode stays safe mode


def test_distribution_defaults_yield_to_the_users_flags(tmp_path: Path) -> None:
    from pi_host import Distribution, SessionOptions

    dist = Distribution(
        name="rev",
        tools=("read",),
        system_prompt="Review.",
        append_system_prompt=("Be brief.",),
        default_model="anthropic/claude-sonnet-4-5",
    )
    agent = tmp_path / "agent"
    agent.mkdir()
    plain = dist.session_options(SessionOptions(cwd=str(tmp_path), agent_dir=str(agent)))
    assert plain.tools == ["read"] and plain.system_prompt == "Review."
    assert plain.append_system_prompt == ["Be brief."]
    assert plain.model == "anthropic/claude-sonnet-4-5"

    explicit = dist.session_options(
        SessionOptions(
            cwd=str(tmp_path),
            agent_dir=str(agent),
            tools=["read", "write"],
            system_prompt="Mine.",
            append_system_prompt=["Mine too."],
            provider="faux",
        )
    )
    assert explicit.tools == ["read", "write"] and explicit.system_prompt == "Mine."
    assert explicit.append_system_prompt == ["Be brief.", "Mine too."]
    assert explicit.model is None  # --provider given: the user's choice
    resumed = dist.session_options(
        SessionOptions(cwd=str(tmp_path), agent_dir=str(agent), continue_session=True)
    )
    assert resumed.model is None  # the session's own model comes first

    (agent / "settings.json").write_text(json.dumps({"defaultProvider": "faux", "defaultModel": "faux-1"}))
    configured = dist.session_options(SessionOptions(cwd=str(tmp_path), agent_dir=str(agent)))
    assert configured.model is None  # the user's settings come first


def test_distribution_main_runs_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    from pi_host import Distribution

    dist = Distribution(name="rev", version="9.9")
    assert dist.main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == "9.9"
    assert "REV_DIR" in dist.render_help(
        "  PI_HOST_DIR                    Agent directory (default: ~/.pi-host)"
    )


def test_distribution_reports_a_broken_plugin_module() -> None:
    from pi_host import Distribution

    with pytest.raises(ImportError, match="distribution 'rev' cannot import its plugin module 'no_such_mod'"):
        Distribution(name="rev", plugin_modules=("no_such_mod",)).load_plugin_modules()
