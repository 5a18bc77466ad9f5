"""Project-local plugins: ``.pi/plugins/*.py`` in the project, loaded only once it is trusted."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import threading
import time
from collections.abc import Collection
from pathlib import Path
from types import ModuleType

from pi_host.errors import PluginLoadError

from ._containment import is_plugin_fault
from ._manager import PluginManager, warn_if_slow

__all__ = ["LOCAL_PLUGIN_DIR", "import_file", "load_local_plugins", "local_plugin_files"]

LOCAL_PLUGIN_DIR = Path(".pi") / "plugins"

# One file executed at a time: sessions loading the same project's plugins at once (one in a
# worker thread, see pi_host.runtime._off_loop) must not share, or pop, the other's module
# under the name both give it. Reentrant: a plugin file may load another.
_import_lock = threading.RLock()


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
        started = time.perf_counter()
        try:
            pm.register(import_file(path), name=name)
        except BaseException as exc:
            if not is_plugin_fault(exc):
                raise
            errors.append(pm.fail(name, PluginLoadError(name, str(path), None, exc)))
        finally:
            warn_if_slow(name, time.perf_counter() - started)
    if trusted:
        errors.extend(pm.check_pending_plugins())
    return errors


def import_file(path: Path, *, prefix: str = "pi_host_local_plugin", package: bool = False) -> ModuleType:
    """Import the Python file at ``path`` as a module of its own (``package``: a package's
    ``__init__.py``, whose folder holds its submodules)."""
    # A name unique per directory, so two projects' "guard.py" never share a module.
    folder = path.parent.parent if package else path.parent
    stem = path.parent.name if package else path.stem
    digest = hashlib.sha1(str(folder.resolve()).encode(), usedforsecurity=False).hexdigest()[:10]
    module_name = f"{prefix}_{digest}_{stem}"
    locations = [str(path.parent)] if package else None
    spec = importlib.util.spec_from_file_location(module_name, path, submodule_search_locations=locations)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    with _import_lock:
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(module_name, None)
            raise
    return module
