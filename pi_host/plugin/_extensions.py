"""``pi-host -e PATH``: a plugin file or folder loaded for one run, in the highest tier.

Nothing is installed: the code is imported from where it is. ``PATH`` is one of

- a ``.py`` file with hook implementations (a plugin named after the file's stem);
- a Python package folder (``__init__.py``), named after the folder;
- a project folder whose ``pyproject.toml`` declares ``[project.entry-points."pi_host.plugins"]``
  (as ``pip install`` would register it): each entry point is loaded from the folder (or its
  ``src/``), under its entry-point name.
"""

from __future__ import annotations

import importlib
import sys
import time
import tomllib
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

from pi_host.errors import PluginLoadError, UsageError

from ._containment import is_plugin_fault
from ._local import import_file
from ._manager import PluginManager, warn_if_slow

__all__ = ["load_extensions"]

_PREFIX = "pi_host_extension"


def load_extensions(pm: PluginManager, paths: Sequence[str]) -> list[PluginLoadError]:
    """Import and register the plugins at ``paths`` (``-e``/``--extension``), in that order.

    A plugin of the same name from a lower tier (an installed copy of the plugin being
    developed) steps aside for this run. One that fails to import is reported like any
    broken plugin; the others still load.

    :raises UsageError: for a path that does not exist or holds no plugin.
    """
    from ._discovery import ENTRY_POINT_GROUP

    errors: list[PluginLoadError] = []
    for text in paths:
        path = Path(text).expanduser()
        for name, target in _targets(path, text, ENTRY_POINT_GROUP):
            existing = pm.get_plugin(name)
            if existing is not None:
                pm.unregister(existing)
                pm.record(name, pm.source(name), "disabled", error=f"replaced by -e {text} for this run")
            pm.record(name, "extension", "enabled", distribution=str(path))
            started = time.perf_counter()
            try:
                module = target()
                pm.register(module, name=name)
            except BaseException as exc:
                if not is_plugin_fault(exc):
                    raise
                errors.append(pm.fail(name, PluginLoadError(name, str(path), None, exc)))
                continue
            finally:
                warn_if_slow(name, time.perf_counter() - started)
            if not pm.get_hookcallers(module):
                pm.unregister(module)
                pm.record(
                    name, "extension", "failed", distribution=str(path), error="no hook implementations"
                )
                raise UsageError(
                    f"-e {text}: {path} is not a pi-host plugin: it defines no @hookimpl functions"
                )
    return errors


def _targets(path: Path, text: str, group: str) -> list[tuple[str, Callable[[], object]]]:
    """The plugins at ``path``: each name with a function that imports it (a failure there is
    that plugin's load error)."""
    if not path.exists():
        raise UsageError(f"-e {text}: no such file or folder")
    if path.is_file():
        if path.suffix != ".py":
            raise UsageError(
                f"-e {text}: not a plugin: give a .py file, a package folder or a project folder"
            )
        return [(path.stem, lambda: import_file(path, prefix=_PREFIX))]
    if (path / "__init__.py").is_file():
        return [(path.name, lambda: import_file(path / "__init__.py", prefix=_PREFIX, package=True))]
    pyproject = path / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise UsageError(f"-e {text}: cannot read {pyproject}: {exc}") from None
        entry_points = data.get("project", {}).get("entry-points", {}).get(group, {})
        if isinstance(entry_points, dict) and entry_points:
            root = path / "src" if (path / "src").is_dir() else path
            return [
                (str(name), partial(_import_entry_point, root, str(value)))
                for name, value in entry_points.items()
            ]
        raise UsageError(f'-e {text}: not a plugin: {pyproject} declares no [project.entry-points."{group}"]')
    raise UsageError(
        f"-e {text}: not a plugin: the folder has no __init__.py and no pyproject.toml with "
        f'[project.entry-points."{group}"]'
    )


def _import_entry_point(root: Path, value: str) -> object:
    module_name, _, attribute = value.partition(":")
    module_name = module_name.strip()
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    module: object = importlib.import_module(module_name)
    for part in filter(None, attribute.strip().split(".")):
        module = getattr(module, part)
    return module
