"""The plugin manager: pluggy's registry with pi-host's rules, and the plugin listing."""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

import pluggy

from pi_host.errors import HookError, PluginLoadError, PluginValidationError
from pi_host.hookspecs._markers import PROJECT_NAME
from pi_host.hookspecs._strategy import Strategy, get_contract

if TYPE_CHECKING:
    from ._info import PluginInfo

__all__ = [
    "ESSENTIAL_PLUGINS",
    "PluginManager",
    "PluginSource",
    "PluginStatus",
]

logger = logging.getLogger("pi_host.plugin")

ESSENTIAL_PLUGINS: tuple[str, ...] = ()
"""Modules (``pi_host.builtins.<name>``) registered by module path before any installed plugin.

Essentials keep pi-host bootable without packaging metadata and cannot be disabled; each is
registered under its last dotted component (``pi_host.builtins.faux`` is ``faux``).
"""

PluginSource = Literal["essential", "entrypoint", "local", "direct"]
PluginStatus = Literal["enabled", "disabled", "failed"]


@dataclass
class _Record:
    source: PluginSource
    status: PluginStatus
    distribution: str | None = None
    version: str | None = None
    error: str | None = None


class PluginManager(pluggy.PluginManager):
    """A fresh registry of ``pi`` plugins, one per host (never module-global).

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
        # Historic setup calls made through call_setup(), replayed to plugins registered later.
        self._replays: dict[str, list[dict[str, Any]]] = {}
        if specs is None:
            from pi_host.hookspecs import SPEC_MODULES

            specs = SPEC_MODULES
        for module in specs:
            self.add_hookspecs(module)
        addhooks: pluggy.HookCaller | None = getattr(self.hook, "pi_addhooks", None)
        if addhooks is not None:
            # Historic from the start: each plugin gets pi_addhooks while it is being
            # registered, so a failure there is that plugin's load failure.
            addhooks.call_historic(kwargs={"pluginmanager": self})

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
        for hook_name, calls in self._replays.items():
            for impl in getattr(self.hook, hook_name).get_hookimpls():
                if impl.plugin is plugin:
                    for kwargs in calls:
                        impl.function(*[kwargs[arg] for arg in impl.argnames])

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
        self._records[name] = _Record(source, status, distribution, version, error)

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
        )
        return self.report(error)

    def _failure(self, name: str, cause: BaseException) -> PluginLoadError:
        record = self._records.get(name)
        dist = record.distribution if record else None
        version = record.version if record else None
        return self.fail(name, PluginLoadError(name, dist, version, cause))

    def call_setup(self, hook_name: str, /, **kwargs: Any) -> list[PluginLoadError]:
        """Call a synchronous setup or registration hook, one implementation at a time.

        An implementation that raises fails its plugin: the plugin is reported (one log line,
        and the returned :class:`PluginLoadError`) and unregistered; the others still run.
        For historic hooks (``pi_configure``) the call is recorded and replayed to each plugin
        registered later, during its registration (where a failure fails that registration).

        :raises HookError: if ``hook_name`` is not a synchronous ``pi`` hook.
        """
        caller: pluggy.HookCaller | None = getattr(self.hook, hook_name, None)
        contract = get_contract(caller.spec.function) if caller and caller.spec else None
        if caller is None or contract is None or contract.strategy is not Strategy.SYNC:
            raise HookError(
                f"{hook_name} is not a synchronous pi hook; await it through the Dispatcher", hook=hook_name
            )
        impls = list(reversed(caller.get_hookimpls()))
        if caller.is_historic():
            # Recorded before calling, so a plugin registered by one of these implementations
            # gets the call too (once, through the replay in register()).
            self._replays.setdefault(hook_name, []).append(dict(kwargs))
        errors = []
        for impl in impls:
            if not self.is_registered(impl.plugin):
                continue  # failed earlier in this loop
            try:
                impl.function(*[kwargs[arg] for arg in impl.argnames])
            except Exception as exc:
                errors.append(self._failure(impl.plugin_name, exc))
        return errors

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
                    status=record.status,
                    hooks=hooks,
                    error=record.error,
                )
            )
        # Plugins registered directly (tests, SDK users) show up too.
        for name, plugin in self.list_name_plugin():
            if name in seen or plugin is None:
                continue
            hooks = tuple(sorted(caller.name for caller in self.get_hookcallers(plugin) or ()))
            infos.append(PluginInfo(name=name, source="direct", status="enabled", hooks=hooks))
        order = {"essential": 0, "entrypoint": 1, "local": 2, "direct": 3}
        return sorted(infos, key=lambda info: (order[info.source], info.name))


def essential_name(module_name: str) -> str:
    """``pi_host.builtins.faux`` → ``faux``."""
    return module_name.rsplit(".", 1)[-1]
