"""Project-local plugins: ``.pi/plugins/*.py`` in the project, loaded only once it is trusted."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from collections.abc import Collection
from pathlib import Path
from types import ModuleType

from pi_host.errors import PluginLoadError

from ._manager import PluginManager

__all__ = ["LOCAL_PLUGIN_DIR", "load_local_plugins", "local_plugin_files"]

LOCAL_PLUGIN_DIR = Path(".pi") / "plugins"


def local_plugin_files(project_dir: str | Path) -> list[Path]:
    """The project's plugin files, sorted; files starting with ``_`` are helpers, not plugins."""
    directory = Path(project_dir) / LOCAL_PLUGIN_DIR
    if not directory.is_dir():
        return []
    return sorted(path for path in directory.glob("*.py") if not path.name.startswith("_"))


def load_local_plugins(
    pm: PluginManager,
    project_dir: str | Path,
    *,
    trusted: bool,
    allow: Collection[str] | None = None,
    disabled: Collection[str] = (),
) -> list[PluginLoadError]:
    """Import and register the project's ``.pi/plugins/*.py``, if the project is trusted.

    The code comes from the repository being worked on, so nothing is imported unless
    ``trusted`` is true (the decision is the caller's: the trust file, ``--approve``,
    ``pi_project_trust``). Untrusted or disabled files are listed as disabled. Each file is a
    plugin named after its stem; ``allow`` and ``disabled`` apply as for installed plugins.
    Failures are isolated per file (one log line each) and returned; unknown hook names are
    checked for the new plugins as well.
    """
    errors: list[PluginLoadError] = []
    for path in local_plugin_files(project_dir):
        name = path.stem
        if not trusted:
            pm.record(name, "local", "disabled", distribution=str(path), error="project not trusted")
            continue
        if name in disabled or pm.is_blocked(name) or (allow is not None and name not in allow):
            why = (
                "not in the PI_HOST_PLUGINS allow-list"
                if allow is not None and name not in allow
                else "disabled"
            )
            pm.record(name, "local", "disabled", distribution=str(path), error=why)
            continue
        if pm.get_plugin(name) is not None:
            clash = ValueError(f'the name "{name}" is already taken by another plugin; rename the file')
            errors.append(pm.report(PluginLoadError(name, str(path), None, clash)))
            continue
        pm.record(name, "local", "enabled", distribution=str(path))
        try:
            pm.register(_import_file(path), name=name)
        except Exception as exc:
            errors.append(pm.fail(name, PluginLoadError(name, str(path), None, exc)))
    if trusted:
        errors.extend(pm.check_pending_plugins())
    return errors


def _import_file(path: Path) -> ModuleType:
    # A name unique per project directory, so two projects' "guard.py" never share a module.
    digest = hashlib.sha1(str(path.parent.resolve()).encode(), usedforsecurity=False).hexdigest()[:10]
    module_name = f"pi_host_local_plugin_{digest}_{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module
