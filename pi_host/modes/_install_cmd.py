"""``pi-host install`` and ``pi-host uninstall``: plugins into the environment pi-host runs in.

``install`` takes a requirement (``pi-linecount``, ``"pi-x>=1"``), a path (a project folder, a
wheel or an sdist) or a ``git+URL``. A path is checked before anything is installed: it must
declare an entry point in the ``pi_host.plugins`` group. After the installer ran, a fresh
interpreter loads the new plugins as ``pi-host`` would; a distribution that turns out not to
be a plugin, or a plugin that fails to load, is rolled back: every distribution the
installation added is uninstalled again. (An *upgrade* that breaks a plugin cannot be undone
that way; the error names the command that restores the previous version.)

``uninstall`` takes a plugin's short name or its distribution's name, and removes only
plugins: pi-host itself, its dependencies and its essential plugins are refused. The
plugin's own dependencies stay installed, as with ``pip uninstall``.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import subprocess
import sys
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

from ._installer import Installer, InstallerError, Snapshot, find_installer, snapshot

__all__ = ["run_install", "run_uninstall"]

_GROUP = "pi_host.plugins"
_INSTALL_USAGE = "Usage: pi-host install [--upgrade|-U] [--editable|-e] [--verbose] PACKAGE|PATH|git+URL"
_UNINSTALL_USAGE = "Usage: pi-host uninstall [--verbose] NAME"


class _Refused(Exception):
    """The request is refused before anything changed; the message is one line."""


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


# -- install ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Target:
    """What the user asked to install: the argument for the installer and what is known of it."""

    argument: str
    distribution: str | None  # normalised; None when only the installer can tell (git+URL)
    local: bool


def run_install(argv: list[str]) -> int:
    """``pi-host install ...``; returns the exit status."""
    flags = {arg for arg in argv if arg.startswith("-")}
    targets = [arg for arg in argv if not arg.startswith("-")]
    unknown = flags - {"--upgrade", "-U", "--editable", "-e", "--verbose"}
    if unknown or len(targets) != 1:
        print(_INSTALL_USAGE, file=sys.stderr)
        return 2
    upgrade = bool(flags & {"--upgrade", "-U"})
    editable = bool(flags & {"--editable", "-e"})
    try:
        target = _classify(targets[0], editable=editable)
        installer = find_installer()
        return _install(installer, target, upgrade=upgrade, editable=editable, verbose="--verbose" in flags)
    except (_Refused, InstallerError) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1


def _classify(argument: str, *, editable: bool) -> _Target:
    if argument.startswith("git+") or "://" in argument:
        egg = re.search(r"[#&]egg=([A-Za-z0-9._-]+)", argument)
        if editable:
            raise _Refused("--editable installs a local folder; clone the repository and pass its path")
        return _Target(argument, _normalise(egg.group(1)) if egg else None, local=False)
    looks_like_path = argument.startswith((".", "/", "~")) or "/" in argument or os.sep in argument
    looks_like_path = looks_like_path or argument.endswith((".whl", ".tar.gz", ".zip", ".py"))
    if not looks_like_path:
        if editable:
            raise _Refused(f"--editable needs a local folder, not the package name {argument!r}")
        name = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", argument)
        if name is None:
            raise _Refused(f"{argument!r} is not a package name, a path or a git+URL")
        return _Target(argument, _normalise(name.group(0)), local=False)
    path = Path(argument).expanduser().resolve()
    if not path.exists():
        raise _Refused(f"{argument}: no such file or folder")
    if editable and not path.is_dir():
        raise _Refused(f"--editable needs a project folder, not the file {argument}")
    distribution, entry_points = _inspect_local(path, argument)
    if entry_points is not None and not entry_points:
        raise _Refused(
            f"{argument} is not a pi-host plugin: it declares no entry point in the group "
            f'"{_GROUP}" ([project.entry-points."{_GROUP}"] in pyproject.toml); nothing was installed'
        )
    return _Target(str(path), distribution, local=True)


def _inspect_local(path: Path, shown: str) -> tuple[str | None, list[str] | None]:
    """The distribution name and plugin entry points of a local target (``None``: unknown)."""
    if path.is_dir():
        pyproject = path / "pyproject.toml"
        if not pyproject.is_file():
            if (path / "setup.py").is_file() or (path / "setup.cfg").is_file():
                return None, None  # setuptools metadata: the installer will tell
            raise _Refused(f"{shown} is not a Python project (no pyproject.toml); nothing was installed")
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise _Refused(f"{shown}/pyproject.toml cannot be read: {exc}") from None
        project = data.get("project")
        if not isinstance(project, dict):
            return None, None  # not PEP 621 metadata (poetry, setuptools)
        name = project.get("name")
        distribution = _normalise(name) if isinstance(name, str) else None
        if "entry-points" in project.get("dynamic", ()):
            return distribution, None
        group = project.get("entry-points", {}).get(_GROUP, {})
        return distribution, sorted(group) if isinstance(group, dict) else []
    if path.suffix == ".py":
        raise _Refused(
            f"{shown} is a single file, not a package: put it in a project's .pi/plugins/ folder, "
            "or package it (docs/plugins/tutorial.md)"
        )
    if path.suffix == ".whl":
        distribution = _normalise(path.name.split("-", 1)[0])
        try:
            with zipfile.ZipFile(path) as wheel:
                names = [n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt")]
                text = wheel.read(names[0]).decode("utf-8") if names else ""
        except (OSError, zipfile.BadZipFile, KeyError, UnicodeDecodeError) as exc:
            raise _Refused(f"{shown} is not a readable wheel: {exc}") from None
        parser = configparser.ConfigParser(delimiters=("=",), interpolation=None)
        parser.optionxform = str  # type: ignore[assignment, method-assign]
        try:
            parser.read_string(text)
        except configparser.Error as exc:
            raise _Refused(f"{shown} has a malformed entry_points.txt: {exc}") from None
        return distribution, sorted(parser[_GROUP]) if parser.has_section(_GROUP) else []
    if path.name.endswith((".tar.gz", ".zip")):
        return None, None  # an sdist or archive: the installer will tell
    raise _Refused(f"{shown} is not a package (a project folder, a wheel or an sdist); nothing was installed")


def _install(installer: Installer, target: _Target, *, upgrade: bool, editable: bool, verbose: bool) -> int:
    before = snapshot(installer.python)
    command = installer.install_command([target.argument], upgrade=upgrade, editable=editable)
    try:
        installer.run(command, verbose=verbose)
    except InstallerError as exc:
        # The installer changes nothing when it fails to resolve or build.
        raise InstallerError(f"could not install {target.argument}: {exc}") from None
    after = snapshot(installer.python)
    added = sorted(set(after) - set(before))
    changed = sorted(name for name in before if name in after and after[name] != before[name])
    if target.distribution is not None and target.distribution in after:
        candidates = [target.distribution]
    else:
        candidates = added + changed
    plugins, errors = _check_plugins(installer.python, candidates)
    if not plugins or errors:
        problem = (
            "; ".join(errors.values())
            if errors
            else f"{target.argument} is not a pi-host plugin: it declares no entry point in the group "
            f'"{_GROUP}"'
        )
        print(f"Error: {problem}", file=sys.stderr)
        _roll_back(installer, target, before, after, added, changed)
        return 1
    for distribution in sorted({dist for _, dist in plugins}):
        names = ", ".join(name for name, dist in plugins if dist == distribution)
        print(f"Installed {distribution} {after[distribution]} (plugin: {names}) with {installer.describe()}")
    return 0


def _roll_back(
    installer: Installer,
    target: _Target,
    before: Snapshot,
    after: Snapshot,
    added: list[str],
    changed: list[str],
) -> None:
    if added:
        try:
            installer.run(installer.uninstall_command(added), verbose=False)
        except InstallerError as exc:
            print(
                f"Error: rolling back failed ({exc}); remove them with: pi-host uninstall or "
                f"{installer.describe()} uninstall {' '.join(added)}",
                file=sys.stderr,
            )
            return
        print(f"Rolled back: uninstalled {', '.join(added)} again.", file=sys.stderr)
    if changed:
        pins = " ".join(f"'{name}=={before[name]}'" for name in changed)
        print(
            f"Not rolled back: {', '.join(f'{n} {before[n]} -> {after[n]}' for n in changed)}; "
            f"to go back: {installer.describe()} install {pins}",
            file=sys.stderr,
        )
    if not added and not changed:
        print("Nothing was changed.", file=sys.stderr)


_CHECK_CODE = """
import importlib.metadata, json, re, sys
wanted = set(sys.argv[1:])
plugins = []
for ep in importlib.metadata.entry_points(group="pi_host.plugins"):
    name = ep.dist.metadata["Name"] if ep.dist is not None else None
    if name and re.sub(r"[-_.]+", "-", name).lower() in wanted:
        plugins.append((ep.name, re.sub(r"[-_.]+", "-", name).lower()))
errors = {}
if plugins:
    from pi_host.plugin import PluginControls
    from pi_host.runtime import Host
    names = {name for name, _ in plugins}
    host = Host.load(controls=PluginControls(allow=frozenset(names)))
    for e in host.load_errors:
        if e.name in names:
            origin = f" ({e.dist} {e.version})" if e.dist else ""
            errors[e.name] = f'plugin "{e.name}"{origin} fails to load: {e.reason}'

print(json.dumps({"plugins": plugins, "errors": errors}))
"""


def _check_plugins(python: str, distributions: list[str]) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """The plugins ``(name, distribution)`` of ``distributions``, and the one-line load error of
    each that a fresh pi-host fails to load."""
    if not distributions:
        return [], {}
    environ = {k: v for k, v in os.environ.items() if k not in ("PI_HOST_PLUGINS", "PI_HOST_DISABLE_PLUGINS")}
    completed = subprocess.run(
        [python, "-c", _CHECK_CODE, *distributions],
        capture_output=True,
        text=True,
        env=environ,
        stdin=subprocess.DEVNULL,
    )
    if completed.returncode != 0:
        last = completed.stderr.strip().splitlines()[-1:] or ["no output"]
        return [("?", name) for name in distributions], {"?": f"pi-host failed to start: {last[0]}"}
    data = json.loads(completed.stdout.strip().splitlines()[-1])
    plugins = [(str(name), str(dist)) for name, dist in data["plugins"]]
    return plugins, {str(name): str(error) for name, error in data["errors"].items()}


# -- uninstall -------------------------------------------------------------------------------------


def run_uninstall(argv: list[str]) -> int:
    """``pi-host uninstall NAME``; returns the exit status."""
    names = [arg for arg in argv if not arg.startswith("-")]
    flags = {arg for arg in argv if arg.startswith("-")}
    if len(names) != 1 or flags - {"--verbose"}:
        print(_UNINSTALL_USAGE, file=sys.stderr)
        return 2
    try:
        distribution, plugins = _resolve_plugin_distribution(names[0])
        installer = find_installer()
        version = snapshot(installer.python).get(distribution, "")
        installer.run(installer.uninstall_command([distribution]), verbose="--verbose" in flags)
    except (_Refused, InstallerError) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    print(f"Uninstalled {distribution} {version} (plugin: {', '.join(plugins)})".replace("  ", " "))
    return 0


def _resolve_plugin_distribution(name: str) -> tuple[str, list[str]]:
    """The distribution to remove for ``name`` (a plugin's short name or a distribution's)."""
    import importlib.metadata

    from pi_host.plugin._manager import essential_name
    from pi_host.runtime._host import ESSENTIALS

    if name in {essential_name(module) for module in ESSENTIALS}:
        raise _Refused(
            f'"{name}" is an essential plugin, part of pi-host itself: it cannot be uninstalled '
            "(nor disabled)"
        )
    wanted = _normalise(name)
    core = _core_distributions()
    if wanted in core:
        why = (
            "it is the pi-host command itself; remove it with the tool that installed it "
            "(pip uninstall pi-host, pipx uninstall pi-host, uv tool uninstall pi-host)"
            if wanted == "pi-host"
            else "pi-host needs it to run"
        )
        raise _Refused(f"{name} is part of pi-host's core, not a plugin: {why}")
    by_distribution: dict[str, list[str]] = {}
    for entry_point in importlib.metadata.entry_points(group=_GROUP):
        dist_name = entry_point.dist.metadata["Name"] if entry_point.dist is not None else None
        if dist_name:
            by_distribution.setdefault(_normalise(dist_name), []).append(entry_point.name)
    for distribution, plugins in by_distribution.items():
        if name in plugins or wanted == distribution:
            return distribution, sorted(set(plugins))
    try:
        importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        raise _Refused(
            f"no plugin or distribution named {name!r} is installed (pi-host plugins list shows the plugins)"
        ) from None
    raise _Refused(
        f"{name} is not a pi-host plugin (it has no entry point in {_GROUP!r}); "
        "pi-host uninstall removes plugins only"
    )


def _core_distributions() -> set[str]:
    """pi-host and everything its required dependencies pull in (never its extras)."""
    import importlib.metadata

    core: set[str] = set()
    pending = ["pi-host"]
    while pending:
        name = pending.pop()
        if name in core:
            continue
        core.add(name)
        try:
            requirements = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for requirement in requirements:
            if "extra" in requirement.partition(";")[2]:
                continue
            match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
            if match:
                pending.append(_normalise(match.group(1)))
    return core
