"""The host: one plugin manager, its dispatcher, and what plugins registered (tools, providers …)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from pi_host.hookspecs._registration import Command, Flag

if TYPE_CHECKING:
    from pi_host.agent import Tool
    from pi_host.errors import PluginLoadError
    from pi_host.plugin import Dispatcher, PluginControls, PluginManager
    from pi_host.providers import Provider

# This module stays light to import (the rest comes with Host.load): ``pi-host --help`` reads
# plugin flags through plugin_flags() without the runtime.

__all__ = ["BUILTIN_TOOL_NAMES", "ESSENTIALS", "Host", "plugin_flags"]

logger = logging.getLogger("pi_host.runtime")

ESSENTIALS: tuple[str, ...] = (
    "pi_host.builtins.providers",
    "pi_host.builtins.faux",
    "pi_host.builtins.stores",
)
"""Plugins that ship inside pi-host and cannot be disabled."""

BUILTIN_TOOL_NAMES: frozenset[str] = frozenset({"read", "bash", "edit", "write", "grep", "find", "ls"})
"""The tools pi calls built in (here: provided by the first-party plugins)."""


@dataclass
class Host:
    """A loaded set of plugins and their registrations.

    Registration follows pi's rule: between plugins, the first registration of a name wins
    (pluggy calls the most recently registered plugin first, so installed plugins can
    override the defaults); a duplicate is logged and ignored.
    """

    plugin_manager: PluginManager
    dispatcher: Dispatcher
    load_errors: list[PluginLoadError] = field(default_factory=list)
    tools: dict[str, Tool[Any]] = field(default_factory=dict)
    tool_sources: dict[str, str] = field(default_factory=dict)
    providers: dict[str, Provider] = field(default_factory=dict)
    commands: dict[str, Command] = field(default_factory=dict)
    flags: dict[str, Flag] = field(default_factory=dict)
    local_plugins_loaded: bool = False

    @classmethod
    def load(
        cls,
        *,
        controls: PluginControls | None = None,
        disabled: Iterable[str] = (),
        extra_plugins: Iterable[object] = (),
        essentials: Iterable[str] = ESSENTIALS,
        trace: bool | TextIO | None = None,
    ) -> Host:
        """Load the essentials, the installed plugins and ``extra_plugins``, then collect registrations.

        :param controls: which plugins may load; default from the environment plus ``disabled``.
        :param extra_plugins: plugin objects (modules, instances) registered after discovery,
            as tests and embedding programs do.
        """
        from pi_host.plugin import Dispatcher, PluginControls, PluginManager, load_plugins

        pm = PluginManager()
        controls = controls or PluginControls.from_environ(disabled=disabled)
        errors = load_plugins(pm, controls=controls, essentials=essentials)
        for plugin in extra_plugins:
            pm.register(plugin)
        host = cls(pm, Dispatcher(pm, trace=trace), errors)
        host.collect_registrations()
        return host

    def apply_plugin_settings(
        self, cwd: str, settings_disabled: Iterable[str], disabled: Iterable[str], *, trusted: bool
    ) -> None:
        """Block the plugins the settings disable and, for a trusted project, load its own
        plugins (``.pi/plugins/*.py``) once, before ``pi_configure``.

        :param settings_disabled: the settings' ``plugins.disable`` (the project's too, once
            trusted).
        :param disabled: plugins the command line disabled.
        """
        settings_disabled = list(settings_disabled)
        pm = self.plugin_manager
        for name in settings_disabled:
            if pm.get_plugin(name) is not None:
                pm.set_blocked(name)
        if trusted and not self.local_plugins_loaded:
            from pi_host.plugin import PluginControls, load_local_plugins

            controls = PluginControls.from_environ(disabled=[*settings_disabled, *disabled])
            self.load_errors.extend(
                load_local_plugins(pm, cwd, trusted=True, allow=controls.allow, disabled=controls.disabled)
            )
            self.local_plugins_loaded = True

    def configure(self, config: Any) -> None:
        """Call ``pi_configure`` (settings and flags are known now), then collect registrations
        again so tools built from settings (the bash tool's shell, timeouts) use them."""
        for error in self.plugin_manager.call_setup("pi_configure", config=config):
            self.load_errors.append(error)
        self.collect_registrations()

    def collect_registrations(self) -> None:
        """Ask every plugin for its tools, providers, commands and flags (again)."""
        self.tools.clear()
        self.tool_sources.clear()
        self.providers.clear()
        self.commands.clear()
        self.flags.clear()
        pm = self.plugin_manager
        _call_registrations(pm, "pi_register_tools", self.add_tool)
        _call_registrations(pm, "pi_register_providers", lambda provider, _: self.add_provider(provider))
        _call_registrations(pm, "pi_register_commands", lambda command, _: self.add_command(command))
        _call_registrations(pm, "pi_register_flags", lambda flag, _: self.add_flag(flag))

    def add_tool(self, tool: Tool[Any], source: str = "runtime") -> None:
        from pi_host.agent import Tool

        if not isinstance(tool, Tool):
            raise TypeError(f"plugin {source!r} registered {tool!r}, which is not a pi_host.Tool")
        if tool.name in self.tools:
            logger.info(
                "tool %r from %s ignored: already registered by %s",
                tool.name,
                source,
                self.tool_sources[tool.name],
            )
            return
        self.tools[tool.name] = tool
        self.tool_sources[tool.name] = source

    def add_provider(self, provider: Provider) -> None:
        self.providers.setdefault(provider.api, provider)

    def add_command(self, command: Command) -> None:
        # pi suffixes duplicates (`:1`, `:2`) so both stay reachable.
        name, n = command.name, 0
        while name in self.commands:
            n += 1
            name = f"{command.name}:{n}"
        self.commands[name] = (
            command if name == command.name else Command(name, command.description, command.handler)
        )

    def add_flag(self, flag: Flag) -> None:
        self.flags.setdefault(flag.name, flag)


def _call_registrations(pm: PluginManager, hook_name: str, add: Callable[[Any, str], None]) -> None:
    """Call a ``pi_register_*`` hook's implementations in call order; ``add(value, plugin)``
    receives what each registers. One that raises is logged and the others still run."""
    # Call order (last registered first) so the first registration of a name wins.
    for impl in reversed(getattr(pm.hook, hook_name).get_hookimpls()):
        source = impl.plugin_name

        def register(value: Any, source: str = source) -> None:
            add(value, source)

        try:
            impl.function(register=register)
        except Exception as exc:
            logger.error(
                'plugin "%s" failed in %s: %s: %s. Disable it with PI_HOST_DISABLE_PLUGINS=%s',
                source,
                hook_name,
                type(exc).__name__,
                exc,
                source,
            )


def plugin_flags(
    *,
    controls: PluginControls | None = None,
    disabled: Iterable[str] = (),
    extra_plugins: Iterable[object] = (),
    essentials: Iterable[str] = ESSENTIALS,
) -> dict[str, Flag]:
    """The flags plugins register, as :meth:`Host.load` would collect them, loading nothing else.

    For ``--help``: the installed plugins are chosen as for a session (the same controls,
    ``disabled`` names and failure reports) and imported into a manager that knows only the
    registration hooks; only ``pi_register_flags`` is called. The essentials are not imported
    (they register providers, no flags), though disabling one is still refused.

    :raises UsageError: when asked to disable an essential plugin.
    """
    from pi_host.hookspecs import registration
    from pi_host.plugin import PluginControls, PluginManager
    from pi_host.plugin._loading import load_installed_plugins, resolve_controls

    controls = resolve_controls(
        controls or PluginControls.from_environ(disabled=disabled), essentials=essentials
    )
    pm = PluginManager(specs=(registration,))
    load_installed_plugins(pm, controls)
    for plugin in extra_plugins:
        pm.register(plugin)
    flags: dict[str, Flag] = {}

    def add(flag: Flag, source: str) -> None:
        flags.setdefault(flag.name, flag)  # the first registration wins, as in Host.add_flag

    _call_registrations(pm, "pi_register_flags", add)
    return flags
