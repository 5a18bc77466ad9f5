"""The plugin manager: pluggy's registry with pi-host's rules, and the plugin listing."""

from __future__ import annotations

import functools
import importlib
import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

import pluggy

from pi_host.errors import HookError, PluginLoadError, PluginValidationError
from pi_host.hookspecs._markers import PROJECT_NAME
from pi_host.hookspecs._strategy import Strategy, get_contract

if TYPE_CHECKING:
    from ._info import Conflict, PluginInfo

__all__ = [
    "CORE_DISTRIBUTION",
    "DEFAULT_EXTRA",
    "ESSENTIAL_PLUGINS",
    "SLOW_IMPORT_ENV",
    "TIER_ORDER",
    "PluginManager",
    "PluginSource",
    "PluginStatus",
    "PluginTier",
    "default_distributions",
    "warn_if_slow",
]

logger = logging.getLogger("pi_host.plugin")

ESSENTIAL_PLUGINS: tuple[str, ...] = ()
"""Modules (``pi_host.builtins.<name>``) registered by module path before any installed plugin.

Essentials keep pi-host bootable without packaging metadata and cannot be disabled; each is
registered under its last dotted component (``pi_host.builtins.faux`` is ``faux``).
"""

CORE_DISTRIBUTION = "pi-host"
"""The distribution whose ``default`` extra is the default plugin set."""

DEFAULT_EXTRA = "default"
"""``pip install "pi-host[default]"``: the extra that names the default set."""

_REQUIREMENT = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)[^;]*;(.*)$")
_EXTRA_MARKER = re.compile(r"""\bextra\s*==\s*['"]([^'"]+)['"]""")


def _normalise(name: str) -> str:
    """A distribution name as PEP 503 compares them (``Pi_Tools.FS`` is ``pi-tools-fs``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


@functools.cache
def default_distributions() -> frozenset[str]:
    """The distributions of the default set: those pi-host's ``default`` extra requires, read
    from pi-host's installed metadata (normalised names).

    The set is packaging, not core knowledge: which plugins ship by default is decided in
    ``pyproject.toml`` alone, and a plugin is in the *default* tier when its distribution is
    one of these, whatever its entry point is called. Empty where pi-host has no metadata
    (imported from a source tree): every plugin is then an installed one.
    """
    import importlib.metadata

    try:
        requirements = importlib.metadata.requires(CORE_DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        return frozenset()
    found: set[str] = set()
    for requirement in requirements:
        match = _REQUIREMENT.match(requirement)
        if match is not None and DEFAULT_EXTRA in _EXTRA_MARKER.findall(match.group(2)):
            found.add(_normalise(match.group(1)))
    return frozenset(found)


PluginSource = Literal["essential", "entrypoint", "local", "extension", "direct"]
PluginStatus = Literal["enabled", "disabled", "failed"]
PluginTier = Literal["essential", "default", "installed", "direct", "local", "extension"]

TIER_ORDER: tuple[PluginTier, ...] = ("essential", "default", "installed", "direct", "local", "extension")
"""The tiers from first to last. Plugins register tier by tier, and a later tier comes first
in every hook's call order, so it wins a tool, command or provider name whatever the alphabet:
essentials (``pi_host.builtins``), the default set (:func:`default_distributions`), installed
third-party plugins, plugins registered by code (the SDK, the testing kit, a distribution),
trusted project plugins (``.pi/plugins/*.py``), and ``pi-host -e PATH`` for one run."""

_TIER_RANK: dict[str, int] = {tier: rank for rank, tier in enumerate(TIER_ORDER)}
_DIRECT_RANK = _TIER_RANK["direct"]


@dataclass
class _Record:
    source: PluginSource
    status: PluginStatus
    distribution: str | None = None
    version: str | None = None
    error: str | None = None
    tier: PluginTier | None = None


def tier_of_source(source: PluginSource, name: str, distribution: str | None) -> PluginTier:
    """The tier a plugin of ``source`` belongs to (entry points are default or installed)."""
    if source == "entrypoint":
        return "default" if _is_default(name, distribution) else "installed"
    tier: PluginTier = source  # the other sources are tiers of their own
    return tier


def _is_default(name: str, distribution: str | None) -> bool:
    return distribution is not None and _normalise(distribution) in default_distributions()


class PluginManager(pluggy.PluginManager):
    """A fresh registry of ``pi`` plugins, one per host (never module-global).

    Provisional public API (what ``pi_addhooks`` receives): it may change before pi-host 1.0.

    On top of pluggy it:

    - adds every hookspec module of :data:`pi_host.hookspecs.SPEC_MODULES`;
    - rejects hook wrappers on ``pi`` hooks (the dispatcher awaits implementations one at a
      time and cannot run wrappers);
    - tells listeners (the dispatcher's caches) whenever plugins or specs change;
    - records where each plugin came from, for :meth:`list_plugins`;
    - offers isolated calls of the synchronous setup hooks (:meth:`call_setup`) and a
      :meth:`check_pending` that reports misspelt hooks per plugin instead of failing.
    """

    def __init__(self, specs: Iterable[ModuleType] | None = None) -> None:
        """An empty registry that knows the ``pi`` hooks.

        :param specs: the hookspec modules to add instead of every one. A manager that knows
            only some hooks (``pi-host --help`` adds :mod:`pi_host.hookspecs.registration` to
            read plugin flags) leaves the implementations of the others unchecked: do not
            call :meth:`check_pending` on it.
        """
        super().__init__(PROJECT_NAME)
        self._listeners: list[Callable[[], None]] = []
        self._records: dict[str, _Record] = {}
        self._conflicts: dict[str, tuple[Conflict, ...]] = {}
        # Historic setup calls made through call_setup(), replayed to plugins registered later.
        self._replays: dict[str, list[dict[str, Any]]] = {}
        if specs is None:
            from pi_host.hookspecs import SPEC_MODULES

            specs = SPEC_MODULES
        for module in specs:
            self.add_hookspecs(module)
        if getattr(self.hook, "pi_addhooks", None) is not None:
            # Historic from the start: each plugin gets pi_addhooks while it is being
            # registered (the replay in register()), so a failure there is that plugin's
            # load failure.
            self.call_setup("pi_addhooks", pluginmanager=self)

    # -- change notification ---------------------------------------------------------------

    def add_change_listener(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener()`` after every registration, unregistration or new hookspec.

        :returns: a function that removes the listener.
        """
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def _changed(self) -> None:
        for listener in list(self._listeners):
            listener()

    # -- pluggy overrides ------------------------------------------------------------------

    def register(self, plugin: object, name: str | None = None) -> str | None:
        """Register ``plugin`` (see pluggy); rejects wrapper implementations of ``pi`` hooks.

        :raises PluginValidationError: for an implementation that does not fit its spec, or a
            wrapper on a ``pi`` hook.
        :raises ValueError: if the plugin or its name is already registered.
        """
        was_registered = self.is_registered(plugin)
        try:
            registered = super().register(plugin, name)
            if registered is not None:
                self._reject_wrappers(plugin, registered)
                self._replay(plugin)
        except BaseException:
            # A historic replay (pi_addhooks) that raises, or a rejected wrapper, leaves the
            # plugin half registered; take it out again so a failed plugin leaves no trace.
            if not was_registered and self.is_registered(plugin):
                super().unregister(plugin)
            raise
        finally:
            self._changed()
        return registered

    def unregister(self, plugin: object | None = None, name: str | None = None) -> Any | None:
        removed = super().unregister(plugin, name)
        self._changed()
        return removed

    def add_hookspecs(self, module_or_class: ModuleType | type) -> None:
        super().add_hookspecs(module_or_class)
        for plugin_name, plugin in list(self.list_name_plugin()):
            if plugin is not None:
                try:
                    self._reject_wrappers(plugin, plugin_name)
                except PluginValidationError:
                    self.unregister(plugin)
                    raise
        self._changed()

    def _replay(self, plugin: object) -> None:
        """Give a plugin being registered the historic calls made so far (the same loop as
        :meth:`call_setup`); the first failure fails its registration."""
        for hook_name, calls in list(self._replays.items()):
            caller: pluggy.HookCaller = getattr(self.hook, hook_name)
            for kwargs in list(calls):
                for _name, exc in self._call_sync(caller, kwargs, only=plugin):
                    raise exc

    def _reject_wrappers(self, plugin: object, plugin_name: str) -> None:
        for caller in self.get_hookcallers(plugin) or ():
            if caller.spec is None or get_contract(caller.spec.function) is None:
                continue
            for impl in caller.get_hookimpls():
                if impl.plugin is plugin and (impl.wrapper or impl.hookwrapper):
                    kind = "wrapper=True" if impl.wrapper else "hookwrapper=True"
                    raise PluginValidationError(
                        plugin,
                        f"Plugin {plugin_name!r} hook {caller.name!r}: {kind} is not supported on pi "
                        "hooks; pi-host awaits implementations one at a time and cannot run "
                        "wrappers. Implement it as a plain (or async) function and use "
                        "tryfirst/trylast to order it.",
                    )

    # -- loading helpers ---------------------------------------------------------------------

    def register_essentials(self, modules: Iterable[str]) -> list[str]:
        """Import and register essential plugins by module path.

        :returns: their names (the last dotted component of each module).
        :raises PluginLoadError: when one cannot be imported or registered; an essential that
            does not load is a defect of pi-host itself, so this is not isolated.
        """
        from pi_host import __version__

        names = []
        for module_name in modules:
            name = essential_name(module_name)
            try:
                module = importlib.import_module(module_name)
                self.register(module, name=name)
            except Exception as exc:
                raise PluginLoadError(name, "pi-host", __version__, exc) from exc
            self.record(name, "essential", "enabled", distribution="pi-host", version=__version__)
            names.append(name)
        return names

    def record(
        self,
        name: str,
        source: PluginSource,
        status: PluginStatus,
        *,
        distribution: str | None = None,
        version: str | None = None,
        error: str | None = None,
    ) -> None:
        """Remember where a plugin came from and how loading it went, for :meth:`list_plugins`."""
        self._records[name] = _Record(
            source, status, distribution, version, error, tier_of_source(source, name, distribution)
        )
        self._changed()

    def known_names(self) -> set[str]:
        """Every plugin name pi-host knows of: registered, disabled or failed."""
        return {name for name, plugin in self.list_name_plugin() if plugin is not None} | set(self._records)

    def source(self, name: str) -> PluginSource:
        """Where the plugin ``name`` came from (``"direct"`` when nothing recorded it)."""
        record = self._records.get(name)
        return "direct" if record is None else record.source

    def tier(self, name: str) -> PluginTier:
        """The tier of the plugin registered as ``name`` (``"direct"`` when nothing recorded it)."""
        record = self._records.get(name)
        return "direct" if record is None or record.tier is None else record.tier

    def call_order(self, caller: pluggy.HookCaller) -> list[pluggy.HookImpl]:
        """``caller``'s implementations in the order pi-host calls them.

        pluggy's order (``tryfirst`` ones, then plain ones, then ``trylast`` ones; the most
        recently registered first within each group), with a later tier first within each
        group. Plugins register tier by tier, so this is pluggy's own order except where a
        tier loads late: ``-e`` plugins register before the project's (which wait for trust)
        and still come first.
        """
        impls = list(reversed(caller.get_hookimpls()))
        if len(impls) < 2:
            return impls
        records = self._records

        def key(impl: pluggy.HookImpl) -> tuple[int, int]:
            group = 0 if impl.tryfirst else 2 if impl.trylast else 1
            record = records.get(impl.plugin_name)
            rank = _DIRECT_RANK if record is None or record.tier is None else _TIER_RANK[record.tier]
            return group, -rank

        return sorted(impls, key=key)  # stable: registration order within a tier

    def report(self, error: PluginLoadError) -> PluginLoadError:
        """Log ``error``'s one line on the ``pi_host.plugin`` logger and return it."""
        logger.warning("%s", error)
        return error

    def fail(self, name: str, error: PluginLoadError) -> PluginLoadError:
        """Mark ``name`` as failed with ``error``, unregister it if needed, and log the one line."""
        plugin = self.get_plugin(name)
        if plugin is not None:
            self.unregister(plugin)
        existing = self._records.get(name)
        self._records[name] = _Record(
            existing.source if existing else "direct",
            "failed",
            error.dist if existing is None else existing.distribution,
            error.version if existing is None else existing.version,
            error.reason,
            existing.tier if existing else "direct",
        )
        return self.report(error)

    def _failure(self, name: str, cause: BaseException) -> PluginLoadError:
        record = self._records.get(name)
        dist = record.distribution if record else None
        version = record.version if record else None
        return self.fail(name, PluginLoadError(name, dist, version, cause))

    def call_setup(
        self,
        hook_name: str,
        /,
        *,
        per_plugin: Callable[[str], Mapping[str, Any]] | None = None,
        on_success: Callable[[str], None] | None = None,
        **kwargs: Any,
    ) -> list[PluginLoadError]:
        """Call a synchronous setup or registration hook, one implementation at a time.

        The one loop for synchronous hooks: setup, registration and the historic replay to
        plugins registered later all go through it. An implementation that fails (any
        exception, or a ``BaseException`` such as ``sys.exit``) fails its plugin: the plugin
        is reported (one log line, and the returned :class:`PluginLoadError`) and
        unregistered; the others still run. For historic hooks (``pi_addhooks``,
        ``pi_configure``) the call is recorded and replayed to each plugin registered later,
        during its registration (where a failure fails that registration).

        :param per_plugin: more arguments for each plugin, by name (the ``register`` callback
            of the registration hooks, which must know who registers).
        :param on_success: called with a plugin's name once its implementation returned (a
            registration hook's offers count only then).
        :raises HookError: if ``hook_name`` is not a synchronous ``pi`` hook.
        """
        caller: pluggy.HookCaller | None = getattr(self.hook, hook_name, None)
        contract = get_contract(caller.spec.function) if caller and caller.spec else None
        if caller is None or contract is None or contract.strategy is not Strategy.SYNC:
            raise HookError(
                f"{hook_name} is not a synchronous setup hook (Strategy.SYNC); await a lifecycle "
                "hook through the Dispatcher, ask a Strategy.SYNC_FIRST one with call_first()",
                hook=hook_name,
            )
        if caller.is_historic():
            # Recorded before calling, so a plugin registered by one of these implementations
            # gets the call too (once, through the replay in register()).
            self._replays.setdefault(hook_name, []).append(dict(kwargs))
        failures = self._call_sync(caller, kwargs, per_plugin=per_plugin, on_success=on_success)
        return [self._failure(name, exc) for name, exc in failures]

    def call_first(self, hook_name: str, /, *, timeout: float | None = None, **kwargs: Any) -> Any:
        """Ask a synchronous first-result hook (``Strategy.SYNC_FIRST``) and return its answer.

        The same loop as every other hook (:func:`._loop.run_sync`): implementations in call
        order, each called with the arguments it declares, the spec's reducer folding the
        results (the first non-``None`` one wins, checked against the spec's ``returns``).
        ``None`` when no plugin answered.

        :param timeout: seconds one implementation may block (the host's hook timeout); one
            past it is named in a warning while it blocks and fails the call when it returns.
        :raises HookError: for the first implementation that raises (``BaseException`` too;
            the cause is chained), returns a wrong type or runs past ``timeout``; its
            ``plugin`` names it. The hook's spec says what the caller makes of it.
        """
        from ._loop import prepare, run_sync
        from ._timeouts import HookGuard

        hook = prepare(self, hook_name)
        if hook.strategy is not Strategy.SYNC_FIRST:
            raise HookError(f"{hook_name} is not a Strategy.SYNC_FIRST hook", hook=hook_name)

        def failure(impl: Any, exc: BaseException) -> None:
            if isinstance(exc, HookError) and exc.plugin == impl.plugin:
                raise exc  # a rejected result: the reducer's message says it all
            raise HookError(str(exc) or type(exc).__name__, hook=hook_name, plugin=impl.plugin) from exc

        guard = HookGuard(timeout) if timeout is not None else None
        try:
            return run_sync(hook, kwargs, on_failure=failure, guard=guard)
        finally:
            if guard is not None:
                guard.close()

    def _call_sync(
        self,
        caller: pluggy.HookCaller,
        kwargs: Mapping[str, Any],
        *,
        only: object | None = None,
        per_plugin: Callable[[str], Mapping[str, Any]] | None = None,
        on_success: Callable[[str], None] | None = None,
    ) -> list[tuple[str, BaseException]]:
        """Run ``caller``'s implementations through the one loop (:func:`._loop.run_sync`);
        returns ``(plugin, error)`` per failure.

        A plugin that failed is skipped by the rest of the loop (and, with ``only``, the loop
        covers that one plugin's implementation).
        """
        from ._loop import prepare, run_sync

        failures: list[tuple[str, BaseException]] = []
        failed: set[str] = set()

        def skip(impl: Any) -> bool:
            if only is not None:
                return impl.owner is not only
            return impl.plugin in failed or not self.is_registered(impl.owner)

        def failure(impl: Any, exc: BaseException) -> None:
            failed.add(impl.plugin)
            failures.append((impl.plugin, exc))

        run_sync(
            prepare(self, caller.name),
            kwargs,
            on_failure=failure,
            on_success=None if on_success is None else (lambda impl: on_success(impl.plugin)),
            skip=skip,
            extra=per_plugin,
        )
        return failures

    def check_pending(self) -> None:
        """Report and unregister every plugin that implements an unknown hook.

        pluggy's version raises at the first problem; a misspelt hook in one plugin must not
        stop the host, so each offending plugin is reported (naming the hook and the closest
        valid hook name) and unregistered instead. Use :meth:`check_pending_plugins` to get
        the errors.
        """
        self.check_pending_plugins()

    def check_pending_plugins(self) -> list[PluginLoadError]:
        """Like :meth:`check_pending`, returning one :class:`PluginLoadError` per offending plugin."""
        known = sorted(
            name
            for name, caller in vars(self.hook).items()
            if isinstance(caller, pluggy.HookCaller) and caller.has_spec()
        )
        problems: dict[str, tuple[object, str]] = {}
        for name, caller in list(vars(self.hook).items()):
            if not isinstance(caller, pluggy.HookCaller) or caller.has_spec():
                continue
            for impl in caller.get_hookimpls():
                if impl.optionalhook or impl.plugin_name in problems:
                    continue
                import difflib  # only for a misspelt hook

                close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
                hint = f'did you mean "{close[0]}"?' if close else "pi-host has no such hook"
                problems[impl.plugin_name] = (
                    impl.plugin,
                    f'unknown hook "{name}" ({hint}); if it belongs to another plugin\'s hookspecs, '
                    "mark it @hookimpl(optionalhook=True)",
                )
        errors = []
        for plugin_name, (plugin, message) in problems.items():
            record = self._records.get(plugin_name)
            if record is not None and record.source == "essential":
                raise PluginLoadError(
                    plugin_name, record.distribution, record.version, PluginValidationError(plugin, message)
                )
            errors.append(self._failure(plugin_name, PluginValidationError(plugin, message)))
        return errors

    # -- listing -------------------------------------------------------------------------------

    def list_plugins(self) -> list[PluginInfo]:
        """Every plugin pi-host knows of: registered, disabled or failed, essentials first."""
        from ._info import PluginInfo

        infos = []
        seen = set()
        for name, record in self._records.items():
            seen.add(name)
            plugin = self.get_plugin(name)
            hooks: tuple[str, ...] = ()
            if plugin is not None:
                hooks = tuple(sorted(caller.name for caller in self.get_hookcallers(plugin) or ()))
            infos.append(
                PluginInfo(
                    name=name,
                    distribution=record.distribution,
                    version=record.version,
                    source=record.source,
                    tier=record.tier or "direct",
                    status=record.status,
                    hooks=hooks,
                    error=record.error,
                    conflicts=self._conflicts.get(name, ()),
                )
            )
        # Plugins registered directly (tests, SDK users) show up too.
        for name, plugin in self.list_name_plugin():
            if name in seen or plugin is None:
                continue
            hooks = tuple(sorted(caller.name for caller in self.get_hookcallers(plugin) or ()))
            infos.append(
                PluginInfo(
                    name=name,
                    source="direct",
                    tier="direct",
                    status="enabled",
                    hooks=hooks,
                    conflicts=self._conflicts.get(name, ()),
                )
            )
        return sorted(infos, key=lambda info: (_TIER_RANK[info.tier], info.name))

    def set_conflicts(self, conflicts: Iterable[Conflict]) -> None:
        """Remember the name conflicts the host found, for :meth:`list_plugins`."""
        by_plugin: dict[str, list[Conflict]] = {}
        for conflict in conflicts:
            for plugin in conflict.plugins:
                by_plugin.setdefault(plugin, []).append(conflict)
        self._conflicts = {name: tuple(found) for name, found in by_plugin.items()}


SLOW_IMPORT_ENV = "PI_HOST_SLOW_IMPORT_SECONDS"
"""Seconds a plugin's import may take before a warning names it (default 1)."""


def warn_if_slow(name: str, seconds: float) -> None:
    """Log a warning naming the plugin when its import took longer than the threshold."""
    try:
        limit = float(os.environ.get(SLOW_IMPORT_ENV, "") or 1.0)
    except ValueError:
        limit = 1.0
    if seconds > limit:
        logger.warning(
            'plugin "%s" took %.1f s to import (more than %s s); pi-host starts that much later. '
            "Disable it with PI_HOST_DISABLE_PLUGINS=%s",
            name,
            seconds,
            f"{limit:g}",
            name,
        )


def essential_name(module_name: str) -> str:
    """``pi_host.builtins.faux`` → ``faux``."""
    return module_name.rsplit(".", 1)[-1]
