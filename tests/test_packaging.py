"""Every distribution is complete (license, README, metadata, ``py.typed``), declares what it
imports and nothing else, and says its version in one place."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import pi_host

ROOT = Path(__file__).resolve().parent.parent
PLUGINS = sorted(path.parent for path in (ROOT / "plugins").glob("*/pyproject.toml"))
DISTRIBUTIONS = [ROOT, *PLUGINS]


def _project(directory: Path) -> dict[str, object]:
    data = tomllib.loads((directory / "pyproject.toml").read_text(encoding="utf-8"))
    project = data["project"]
    assert isinstance(project, dict)
    return project


def _packages(directory: Path) -> list[Path]:
    data = tomllib.loads((directory / "pyproject.toml").read_text(encoding="utf-8"))
    return [directory / name for name in data["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]]


@pytest.mark.parametrize("directory", DISTRIBUTIONS, ids=lambda d: d.name)
def test_every_distribution_has_license_readme_metadata_and_types(directory: Path) -> None:
    project = _project(directory)
    assert (directory / "LICENSE").read_text() == (ROOT / "LICENSE").read_text()
    assert project["license"] == "MIT"
    assert project["readme"] == "README.md" and (directory / "README.md").is_file()
    classifiers = project["classifiers"]
    assert isinstance(classifiers, list)
    assert "Typing :: Typed" in classifiers
    assert "Programming Language :: Python :: 3.11" in classifiers
    assert project["keywords"]
    for package in _packages(directory):
        assert (package / "py.typed").is_file(), f"{package.name} lacks py.typed"


@pytest.mark.parametrize("directory", PLUGINS, ids=lambda d: d.name)
def test_plugins_follow_the_publishing_convention(directory: Path) -> None:
    """The keyword and classifier docs/plugins/index.md asks plugin authors to use."""
    project = _project(directory)
    assert "pi-host-plugin" in project["keywords"]  # type: ignore[operator]
    assert "Environment :: Plugins" in project["classifiers"]  # type: ignore[operator]
    entry_points = project["entry-points"]
    assert isinstance(entry_points, dict) and entry_points["pi_host.plugins"]


def test_the_version_is_written_once() -> None:
    written = (ROOT / "pi_host" / "_version.py").read_text()
    (version,) = re.findall(r'__version__ = "([^"]+)"', written)
    assert "version" not in _project(ROOT) and _project(ROOT)["dynamic"] == ["version"]
    others = [
        path
        for path in (ROOT / "pi_host").rglob("*.py")
        if path.name != "_version.py" and re.search(rf'["\']{re.escape(version)}["\']', path.read_text())
    ]
    assert others == [], f"the version is written again in {others}"
    entry = subprocess.run(
        [str(Path(sys.executable).parent / "pi-host"), "--version"], capture_output=True, text=True
    )
    assert entry.stdout.strip() == pi_host.__version__ == importlib.metadata.version("pi-host") == version


def _imported_top_level_modules(directory: Path) -> set[str]:
    found: set[str] = set()
    for path in directory.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module.split(".")[0])
    return found


def test_pi_host_declares_what_it_imports_and_nothing_it_does_not() -> None:
    """Each required dependency provides a module that pi_host imports (no dead declarations)."""
    modules_of: dict[str, set[str]] = {}
    for module, dists in importlib.metadata.packages_distributions().items():
        for dist in dists:
            modules_of.setdefault(re.sub(r"[-_.]+", "-", dist).lower(), set()).add(module)
    imported = _imported_top_level_modules(ROOT / "pi_host")
    required = [
        re.match(r"[A-Za-z0-9._-]+", requirement).group(0)  # type: ignore[union-attr]
        for requirement in _project(ROOT)["dependencies"]  # type: ignore[union-attr]
    ]
    unused = [
        name
        for name in required
        if not modules_of.get(re.sub(r"[-_.]+", "-", name).lower(), set()) & imported
    ]
    assert unused == [], f"declared but never imported by pi_host: {unused}"


def test_the_testing_extra_brings_what_the_fixtures_need() -> None:
    extras = _project(ROOT)["optional-dependencies"]
    assert isinstance(extras, dict)
    assert {re.match(r"[a-z-]+", r).group(0) for r in extras["testing"]} == {"pytest", "pytest-asyncio"}  # type: ignore[union-attr]


def test_ci_runs_exactly_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    command = re.search(r"Run the whole test suite.*?```bash\n(.+?)\n```", readme, re.DOTALL)
    assert command is not None
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-1] == f"exec {command.group(1).strip()}"
