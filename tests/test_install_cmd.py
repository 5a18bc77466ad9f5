"""``pi-host install``, ``uninstall`` and ``plugins info`` in real environments.

Three kinds of environment, each built once for the module: a ``python -m venv`` one (pi-host
uses its pip), a ``uv tool install`` one (no pip: pi-host uses uv) and a pipx one. Plugins are
the repository's example and fixture packages, installed from their folders. Nothing comes
from the network (see :mod:`tests.install_support`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.install_support import ROOT, UV, Sandbox, copy_tree, pip_venv

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(900),
    pytest.mark.skipif(UV is None, reason="the environments are built with uv"),
]

HELLO = ROOT / "examples" / "pi-hello"
FIXTURES = ROOT / "tests" / "plugin_packages"


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    return Sandbox(tmp_path_factory.mktemp("install"))


@pytest.fixture(scope="module")
def projects(sandbox: Sandbox) -> Path:
    """Copies of the plugin projects, and a project that is not a plugin."""
    folder = sandbox.root / "projects"
    copy_tree(HELLO, folder / "pi-hello")
    copy_tree(FIXTURES / "pi-fixture-broken", folder / "pi-fixture-broken")
    plain = folder / "not-a-plugin"
    (plain / "not_a_plugin").mkdir(parents=True)
    (plain / "not_a_plugin" / "__init__.py").write_text("")
    (plain / "pyproject.toml").write_text(
        '[project]\nname = "not-a-plugin"\nversion = "1.0"\n\n'
        '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n'
    )
    (folder / "notes.txt").write_text("not a package\n")
    return folder


@pytest.fixture(scope="module")
def pip_bin(sandbox: Sandbox) -> Path:
    return pip_venv(sandbox, "venv", [str(ROOT)])


def _installed(sandbox: Sandbox, bin_dir: Path) -> dict[str, str]:
    result = sandbox.run(
        bin_dir / "python",
        "-c",
        "import importlib.metadata as m, json; "
        "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))",
    )
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout))


def _plugins(sandbox: Sandbox, pi_host: Path, cwd: Path) -> dict[str, str]:
    result = sandbox.run(pi_host, "plugins", "list", "--json", cwd=cwd)
    assert result.returncode == 0, result.stderr
    return {info["name"]: info["status"] for info in json.loads(result.stdout)}


def _install_list_uninstall(sandbox: Sandbox, pi_host: Path, projects: Path, installer: str) -> None:
    """The round trip the docs promise, from the projects' folder."""
    installed = sandbox.run(pi_host, "install", "./pi-hello", cwd=projects)
    assert installed.returncode == 0, installed.stderr
    assert installed.stdout.startswith("Installed pi-hello 0.1.0 (plugin: hello)"), installed.stdout
    assert installer in installed.stdout
    assert _plugins(sandbox, pi_host, projects)["hello"] == "enabled"

    info = sandbox.run(pi_host, "plugins", "info", "hello", cwd=projects)
    assert info.returncode == 0, info.stderr
    assert "distribution: pi-hello 0.1.0" in info.stdout
    assert "uninstall:    pi-host uninstall pi-hello" in info.stdout

    removed = sandbox.run(pi_host, "uninstall", "pi-hello", cwd=projects)
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout.strip() == "Uninstalled pi-hello 0.1.0 (plugin: hello)"
    assert "hello" not in _plugins(sandbox, pi_host, projects)


# -- a virtual environment with pip ---------------------------------------------------------------


def test_install_list_info_and_uninstall_in_a_venv(sandbox: Sandbox, pip_bin: Path, projects: Path) -> None:
    before = _installed(sandbox, pip_bin)
    _install_list_uninstall(sandbox, pip_bin / "pi-host", projects, f"{pip_bin / 'python'} -m pip")
    assert _installed(sandbox, pip_bin) == before


def test_an_editable_install_is_shown_and_removed_by_plugin_name(
    sandbox: Sandbox, pip_bin: Path, projects: Path
) -> None:
    pi_host = pip_bin / "pi-host"
    installed = sandbox.run(pi_host, "install", "--editable", "./pi-hello", cwd=projects)
    assert installed.returncode == 0, installed.stderr
    info = sandbox.run(pi_host, "plugins", "info", "hello", "--json", cwd=projects)
    detail = json.loads(info.stdout)
    assert (detail["distribution"], detail["editable"], detail["module"]) == ("pi-hello", True, "pi_hello")
    removed = sandbox.run(pi_host, "uninstall", "hello", cwd=projects)
    assert removed.returncode == 0, removed.stderr
    assert "hello" not in _plugins(sandbox, pi_host, projects)


def _one_error_line(result: object, *phrases: str) -> None:
    stderr: str = result.stderr  # type: ignore[attr-defined]
    assert result.returncode == 1, stderr  # type: ignore[attr-defined]
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), stderr
    for phrase in phrases:
        assert phrase in lines[0], stderr


def test_bad_input_gets_one_line_and_changes_nothing(
    sandbox: Sandbox, pip_bin: Path, projects: Path, tmp_path: Path
) -> None:
    pi_host = pip_bin / "pi-host"
    before = _installed(sandbox, pip_bin)

    _one_error_line(
        sandbox.run(pi_host, "install", "./not-a-plugin", cwd=projects),
        "./not-a-plugin is not a pi-host plugin",
        '"pi_host.plugins"',
        "nothing was installed",
    )
    _one_error_line(sandbox.run(pi_host, "install", "./notes.txt", cwd=projects), "is not a package")
    _one_error_line(sandbox.run(pi_host, "install", "./missing", cwd=projects), "no such file or folder")
    empty = tmp_path / "empty-index"
    empty.mkdir()
    unknown = sandbox.run(
        pi_host,
        "install",
        "pi-no-such-plugin",
        cwd=projects,
        env={"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(empty)},
    )
    _one_error_line(unknown, "could not install pi-no-such-plugin", "pi-no-such-plugin")

    broken = sandbox.run(pi_host, "install", "./pi-fixture-broken", cwd=projects)
    assert broken.returncode == 1
    error, rolled_back = broken.stderr.strip().splitlines()
    assert error == (
        'Error: plugin "broken" (pi-fixture-broken 0.1.0) fails to load: '
        "ModuleNotFoundError: No module named 'pi_fixture_missing_dependency'"
    )
    assert rolled_back == "Rolled back: uninstalled pi-fixture-broken again."

    assert _installed(sandbox, pip_bin) == before


@pytest.mark.parametrize(
    ("name", "phrase"),
    [
        ("faux", '"faux" is an essential plugin, part of pi-host itself'),
        ("pi-host", "it is the pi-host command itself"),
        ("pluggy", "pluggy is part of pi-host's core, not a plugin: pi-host needs it to run"),
        ("pip", "pip is not a pi-host plugin"),
        ("pi-nothing", "no plugin or distribution named 'pi-nothing' is installed"),
    ],
)
def test_uninstall_removes_plugins_only(sandbox: Sandbox, pip_bin: Path, name: str, phrase: str) -> None:
    before = _installed(sandbox, pip_bin)
    _one_error_line(sandbox.run(pip_bin / "pi-host", "uninstall", name), phrase)
    assert _installed(sandbox, pip_bin) == before


def test_the_testing_kit_imports_without_pytest(sandbox: Sandbox, pip_bin: Path) -> None:
    assert "pytest" not in _installed(sandbox, pip_bin)
    result = sandbox.run(
        pip_bin / "python",
        "-c",
        "import pi_host.testing as t; print('make_host' in t.__all__, t.tool_call('ls').name)",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "ls"]


def test_one_version_everywhere(sandbox: Sandbox, pip_bin: Path) -> None:
    written = (ROOT / "pi_host" / "_version.py").read_text()
    version = written.split('__version__ = "', 1)[1].split('"', 1)[0]
    cli = sandbox.run(pip_bin / "pi-host", "--version")
    module = sandbox.run(
        pip_bin / "python",
        "-c",
        "import importlib.metadata as m, pi_host; print(pi_host.__version__, m.version('pi-host'))",
    )
    assert cli.stdout.split() == [version]
    assert module.stdout.split() == [version, version]


# -- a `uv tool install` environment: no pip ------------------------------------------------------


@pytest.fixture(scope="module")
def uv_tool_pi_host(sandbox: Sandbox) -> Path:
    assert UV is not None
    result = sandbox.run(UV, "tool", "install", "-c", sandbox.constraints, ROOT)
    assert result.returncode == 0, result.stderr
    return sandbox.bin / "pi-host"


def test_install_and_uninstall_in_a_uv_tool_environment(
    sandbox: Sandbox, uv_tool_pi_host: Path, projects: Path
) -> None:
    python = Path(uv_tool_pi_host.resolve().parent / "python")
    no_pip = sandbox.run(python, "-c", "import pip")
    assert no_pip.returncode != 0  # uv tool environments have no pip: pi-host must use uv
    _install_list_uninstall(sandbox, uv_tool_pi_host, projects, "with uv pip --python")


# -- a pipx application ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pipx_pi_host(sandbox: Sandbox) -> Path:
    pipx = Path(sys.executable).parent / "pipx"  # the dev group's, next to the suite's Python
    result = sandbox.run(
        pipx, "install", "--python", sys.executable, "--pip-args", f"-c {sandbox.constraints}", ROOT
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return sandbox.root / "pipx-bin" / "pi-host"


def test_install_and_uninstall_in_a_pipx_environment(
    sandbox: Sandbox, pipx_pi_host: Path, projects: Path
) -> None:
    # Into the application's own environment, with its pip if pipx gave it one, else with uv.
    python = pipx_pi_host.resolve().parent / "python"
    _install_list_uninstall(sandbox, pipx_pi_host, projects, str(python))
