"""Checks of a plugin's surface: its entry point, its hooks against pi-host's specs, its imports.

Every plugin's suite wants the same three tests; these make each one line.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import ModuleType

from pi_host.plugin import PluginManager

__all__ = ["assert_entry_point", "assert_hooks_match_specs", "assert_public_imports_only"]

ENTRY_POINT_GROUP = "pi_host.plugins"


def assert_entry_point(
    name: str,
    plugin: object,
    *,
    distribution: str | None = None,
    group: str = ENTRY_POINT_GROUP,
) -> importlib.metadata.EntryPoint:
    """Assert that exactly one installed entry point ``name`` of ``group`` loads ``plugin``.

    :param plugin: the object the entry point must load (for a module, the entry point's value
        must also be the module's name).
    :param distribution: the distribution that must declare the entry point (``"pi-guard"``);
        compared after normalising ``-``, ``_`` and ``.`` as packaging does.
    :returns: the entry point.
    """
    points = [point for point in importlib.metadata.entry_points(group=group) if point.name == name]
    if len(points) != 1:
        declared = ", ".join(f"{p.value!r} ({_dist_name(p)})" for p in points) or "none"
        raise AssertionError(
            f"expected one {group!r} entry point named {name!r}, found {len(points)}: {declared}; "
            f'declare it under [project.entry-points."{group}"] and reinstall the package'
        )
    (point,) = points
    if isinstance(plugin, ModuleType) and point.value != plugin.__name__:
        raise AssertionError(f"entry point {name!r} is {point.value!r}, expected {plugin.__name__!r}")
    loaded = point.load()
    if loaded is not plugin:
        raise AssertionError(f"entry point {name!r} = {point.value!r} loads {loaded!r}, not {plugin!r}")
    if distribution is not None and _normalise(_dist_name(point)) != _normalise(distribution):
        raise AssertionError(
            f"entry point {name!r} is declared by {_dist_name(point)!r}, expected {distribution!r}"
        )
    return point


def _dist_name(point: importlib.metadata.EntryPoint) -> str:
    return point.dist.name if point.dist is not None else "no distribution"


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def assert_hooks_match_specs(
    plugin: object, hooks: Iterable[str] | None = None, *, name: str | None = None
) -> PluginManager:
    """Register ``plugin`` alone in a fresh :class:`~pi_host.plugin.PluginManager` and check it.

    Registration validates each implementation against its spec (argument names, no wrappers
    on ``pi`` hooks, the plugin's own ``pi_addhooks``); then no implementation may name an
    unknown hook (unless marked ``optionalhook``).

    :param hooks: if given, the exact set of hooks the plugin must implement.
    :param name: the name to register the plugin under (pluggy's default otherwise).
    :returns: the manager, to inspect the implementations further
        (``manager.hook.pi_tool_call.get_hookimpls()``).
    """
    manager = PluginManager()
    registered = manager.register(plugin, name=name)
    errors = manager.check_pending_plugins()
    if errors:
        raise AssertionError("\n".join(str(error) for error in errors))
    if hooks is not None:
        implemented = {caller.name for caller in manager.get_hookcallers(plugin) or []}
        expected = set(hooks)
        if implemented != expected:
            raise AssertionError(
                f"plugin {registered!r} implements {sorted(implemented)}, expected {sorted(expected)} "
                f"(missing: {sorted(expected - implemented)}, unexpected: {sorted(implemented - expected)})"
            )
    return manager


def assert_public_imports_only(package: ModuleType, *, top_level_only: bool = False) -> None:
    """Assert that no module of ``package`` imports a private part of pi-host.

    Private means any ``_name`` below ``pi_host`` (``pi_host._x``, ``pi_host.agent._tools``,
    ``from pi_host.agent import _tools``): pi-host may change those in any release. The
    source files are parsed, not imported, so an import under ``if TYPE_CHECKING:`` counts too.

    :param top_level_only: allow ``pi_host`` itself only, not its public subpackages
        (``pi_host.hookspecs`` …).
    """
    offending = [
        f"{path.relative_to(root)}:{line}: {module}"
        for root, path in _sources(package)
        for line, module in _pi_host_imports(path)
        if _is_private(module) or (top_level_only and module != "pi_host")
    ]
    if offending:
        raise AssertionError(
            f"{package.__name__} imports private pi-host modules; import from the public API "
            "(pi_host, or its public subpackages) instead:\n  " + "\n  ".join(offending)
        )


def _sources(package: ModuleType) -> Iterator[tuple[Path, Path]]:
    if package.__file__ is None:
        raise AssertionError(f"{package.__name__} has no source file to check")
    source = Path(package.__file__)
    if hasattr(package, "__path__"):
        for path in sorted(source.parent.rglob("*.py")):
            yield source.parent, path
    else:
        yield source.parent, source


def _pi_host_imports(path: Path) -> Iterator[tuple[int, str]]:
    """``(line, dotted name)`` of each absolute import of pi-host in ``path``.

    ``from pi_host.x import y`` yields ``pi_host.x`` and, when ``y`` is private, ``pi_host.x.y``.
    """
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _is_pi_host(alias.name):
                    yield node.lineno, alias.name
        elif (
            isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and _is_pi_host(node.module)
        ):
            yield node.lineno, node.module
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    yield node.lineno, f"{node.module}.{alias.name}"


def _is_pi_host(module: str) -> bool:
    return module == "pi_host" or module.startswith("pi_host.")


def _is_private(module: str) -> bool:
    return any(part.startswith("_") for part in module.split(".")[1:])
