"""The host: one plugin manager, its dispatcher, and what plugins registered (tools, providers …)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from pi_host.hookspecs._registration import (
    AbortScope,
    Command,
    Flag,
    MessageRenderer,
    SettingsSection,
    Shortcut,
    ToolRenderer,
)

if TYPE_CHECKING:
    from pi_host.agent import Tool, ToolMiddleware
    from pi_host.errors import PluginLoadError
    from pi_host.plugin import Dispatcher, PluginControls, PluginManager
    from pi_host.plugin._info import Conflict
    from pi_host.providers import Provider

# This module stays light to import (the rest comes with Host.load): ``pi-host --help`` reads
# plugin flags through plugin_flags() without the runtime.

__all__ = ["BUILTIN_TOOL_NAMES", "ESSENTIALS", "PREFER_SETTING", "Host", "plugin_flags"]

logger = logging.getLogger("pi_host.runtime")

ESSENTIALS: tuple[str, ...] = (
    "pi_host.builtins.providers",
    "pi_host.builtins.faux",
    "pi_host.builtins.stores",
    "pi_host.builtins.executors",
)
"""Plugins that ship inside pi-host and cannot be disabled."""

BUILTIN_TOOL_NAMES: frozenset[str] = frozenset({"read", "bash", "edit", "write", "grep", "find", "ls"})
"""The tools pi calls built in (here: provided by the first-party plugins)."""


_KINDS: tuple[tuple[str, str], ...] = (
    ("provider", "pi_register_providers"),
    ("tool", "pi_register_tools"),
    ("middleware", "pi_register_tool_middleware"),
    ("command", "pi_register_commands"),
    ("flag", "pi_register_flags"),
    ("settings", "pi_register_settings"),
    ("abort_scope", "pi_register_abort_scopes"),
    ("shortcut", "pi_register_shortcuts"),
    ("message_renderer", "pi_register_message_renderers"),
    ("tool_renderer", "pi_register_tool_renderers"),
)
"""Each registration hook, in the order the host calls them, with what it registers."""

PREFER_SETTING = "plugins.prefer"
"""The settings.json key that chooses between plugins offering one name:
``{"plugins": {"prefer": {"tools": {"read": "tools_fs"}, "commands": {...}, "providers": {...}}}}``."""


@dataclass
class Host:
    """A loaded set of plugins and their registrations.

    Registration follows the plugin tiers: between plugins, the first registration of a name
    in call order wins (a later tier first, so installed plugins override the defaults
    whatever their names), unless the settings' ``plugins.prefer`` chooses; each name two
    plugins offer is a :class:`~pi_host.plugin.Conflict`, warned about once and listed.
    """

    plugin_manager: PluginManager
    dispatcher: Dispatcher
    load_errors: list[PluginLoadError] = field(default_factory=list)
    tools: dict[str, Tool[Any]] = field(default_factory=dict)
    tool_sources: dict[str, str] = field(default_factory=dict)
    providers: dict[str, Provider] = field(default_factory=dict)
    commands: dict[str, Command] = field(default_factory=dict)
    flags: dict[str, Flag] = field(default_factory=dict)
    settings_sections: dict[str, SettingsSection] = field(default_factory=dict)
    settings_section_sources: dict[str, str] = field(default_factory=dict)
    abort_scopes: dict[str, AbortScope] = field(default_factory=dict)
    middlewares: list[tuple[str, ToolMiddleware]] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    preferences: dict[str, dict[str, str]] = field(default_factory=dict)
    #: Choices that hold unless the settings' ``plugins.prefer`` says otherwise (the testing
    #: kit's scripted provider over the essential ``faux``).
    preference_defaults: dict[str, dict[str, str]] = field(default_factory=dict)
    shortcuts: dict[str, Shortcut] = field(default_factory=dict)
    message_renderers: dict[str, MessageRenderer] = field(default_factory=dict)
    tool_renderers: dict[str, ToolRenderer] = field(default_factory=dict)
    local_plugins_loaded: bool = False
    _warned: set[tuple[str, str, str]] = field(default_factory=set)

    @classmethod
    def load(
        cls,
        *,
        controls: PluginControls | None = None,
        disabled: Iterable[str] = (),
        extra_plugins: Iterable[object] = (),
        extensions: Sequence[str] = (),
        essentials: Iterable[str] = ESSENTIALS,
        trace: bool | TextIO | None = None,
    ) -> Host:
        """Load the essentials, the installed plugins, ``extra_plugins`` and ``extensions``,
        then collect registrations.

        :param controls: which plugins may load; default from the environment plus ``disabled``.
        :param extra_plugins: plugin objects (modules, instances) registered after discovery,
            as tests and embedding programs do.
        :param extensions: ``-e PATH`` plugin files or folders, loaded for this run only.
        :raises UsageError: for an ``-e`` path that holds no plugin.
        """
        from pi_host.plugin import Dispatcher, PluginControls, PluginManager, load_plugins
        from pi_host.plugin._containment import watch_user_interrupts

        pm = PluginManager()
        controls = controls or PluginControls.from_environ(disabled=disabled)
        with watch_user_interrupts():
            errors = load_plugins(pm, controls=controls, essentials=essentials)
            for plugin in extra_plugins:
                pm.register(plugin)
            if extensions:
                from pi_host.plugin._extensions import load_extensions

                errors.extend(load_extensions(pm, extensions))
                errors.extend(pm.check_pending_plugins())
        if controls.disabled:
            import os

            from pi_host.plugin import local_plugin_files
            from pi_host.plugin._loading import warn_unknown_disabled

            local = [path.stem for path in local_plugin_files(os.getcwd())]
            warn_unknown_disabled(pm, controls.disabled, also_known=local)
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
            from pi_host.plugin._containment import watch_user_interrupts

            controls = PluginControls.from_environ(disabled=[*settings_disabled, *disabled])
            with watch_user_interrupts():
                self.load_errors.extend(
                    load_local_plugins(
                        pm, cwd, trusted=True, allow=controls.allow, disabled=controls.disabled
                    )
                )
            self.local_plugins_loaded = True

    def configure(self, config: Any) -> None:
        """Call ``pi_configure`` (settings and flags are known now), then collect registrations
        again so tools built from settings (the bash tool's shell, timeouts) use them.

        The settings' ``plugins.prefer`` decides conflicts from here on, ``plugins.hookTimeout``
        bounds hooks (``PI_HOST_HOOK_TIMEOUT`` beats it), and each conflict is warned about once.
        """
        settings = getattr(config, "settings", None)
        plugins = settings.get("plugins") if isinstance(settings, dict) else None
        chosen = _preferences(plugins.get("prefer") if isinstance(plugins, dict) else None)
        self.preferences = {
            kind: {**self.preference_defaults.get(kind, {}), **chosen.get(kind, {})}
            for kind in {*self.preference_defaults, *chosen}
        }
        if isinstance(plugins, dict) and "hookTimeout" in plugins:
            self._set_hook_timeout(plugins["hookTimeout"])
        for error in self.plugin_manager.call_setup("pi_configure", config=config):
            self.load_errors.append(error)
        self.collect_registrations()
        self.warn_conflicts()

    def _set_hook_timeout(self, value: object) -> None:
        import os

        from pi_host.plugin._timeouts import HOOK_TIMEOUT_ENV, parse_timeout

        if os.environ.get(HOOK_TIMEOUT_ENV, "").strip():
            return  # the variable beats the setting
        try:
            self.dispatcher.set_hook_timeout(
                parse_timeout(value, origin="plugins.hookTimeout in settings.json")
            )
        except ValueError as exc:
            logger.warning("%s; keeping %s s", exc, self.dispatcher.hook_timeout)

    def collect_registrations(self) -> list[PluginLoadError]:
        """Ask every plugin for its tools, providers, middleware, commands, flags, settings sections,
        abort scopes and screen extensions (again).

        One loop for all of them (:meth:`PluginManager.call_setup`): a plugin whose
        registration hook fails is reported in :attr:`load_errors` and unregistered, and none
        of what it registered counts.

        :returns: the new load errors.
        """
        pm = self.plugin_manager
        offers: dict[str, list[tuple[str, str, Any]]] = {kind: [] for kind, _ in _KINDS}
        errors: list[PluginLoadError] = []
        for kind, hook_name in _KINDS:
            if getattr(pm.hook, hook_name, None) is None:
                continue
            pending: dict[str, list[tuple[str, Any]]] = {}

            def per_plugin(
                plugin: str, kind: str = kind, pending: dict[str, list[tuple[str, Any]]] = pending
            ) -> dict[str, Any]:
                found = pending.setdefault(plugin, [])

                def register(value: Any) -> None:
                    # A wrong type raises inside the plugin's hook: its failure, not the host's.
                    found.append((_offer_name(kind, value, plugin), value))

                return {"register": register}

            def accept(
                plugin: str, kind: str = kind, pending: dict[str, list[tuple[str, Any]]] = pending
            ) -> None:
                offers[kind].extend((plugin, name, value) for name, value in pending.pop(plugin, ()))

            errors.extend(pm.call_setup(hook_name, per_plugin=per_plugin, on_success=accept))
        # A plugin that failed in a later hook takes back what it offered in earlier ones.
        failed = {error.name for error in errors}
        for kind in offers:
            offers[kind] = [offer for offer in offers[kind] if offer[0] not in failed]
        self._resolve(offers)
        self.load_errors.extend(errors)
        return errors

    def _resolve(self, offers: dict[str, list[tuple[str, str, Any]]]) -> None:
        """Choose a winner for each offered name (call order, or the settings' preference)."""
        self.tools.clear()
        self.tool_sources.clear()
        self.providers.clear()
        self.commands.clear()
        self.flags.clear()
        self.settings_sections.clear()
        self.settings_section_sources.clear()
        self.abort_scopes.clear()
        self.shortcuts.clear()
        self.message_renderers.clear()
        self.tool_renderers.clear()
        # Call order, outermost first; one plugin's middlewares in the order it registered them.
        self.middlewares = [(plugin, value) for plugin, _, value in offers["middleware"]]
        conflicts: list[Conflict] = []
        pm = self.plugin_manager
        for kind in ("provider", "tool", "command"):
            by_name: dict[str, list[tuple[str, Any]]] = {}
            for plugin, name, value in offers[kind]:
                by_name.setdefault(name, []).append((plugin, value))
            for name, offered in by_name.items():
                plugins = list(dict.fromkeys(plugin for plugin, _ in offered))
                winner, decided_by = plugins[0], "order"
                preferred = self.preferences.get(kind + "s", {}).get(name)
                if preferred is None:
                    preferred = self.preference_defaults.get(kind + "s", {}).get(name)
                if preferred is not None and preferred in plugins:
                    winner, decided_by = preferred, "setting"
                elif len(plugins) > 1 and pm.tier(plugins[0]) != pm.tier(plugins[1]):
                    decided_by = "tier"
                ordered = [pair for pair in offered if pair[0] == winner] + [
                    pair for pair in offered if pair[0] != winner
                ]
                if len(plugins) > 1:
                    from pi_host.plugin._info import Conflict  # only when there is one

                    conflicts.append(
                        Conflict(
                            kind=kind,
                            name=name,
                            plugins=(winner, *(plugin for plugin in plugins if plugin != winner)),
                            winner=winner,
                            decided_by=decided_by,
                            setting=f"{PREFER_SETTING}.{kind}s.{name}",
                        )
                    )
                for plugin, value in ordered:
                    if kind == "provider":
                        self.providers.setdefault(name, value)
                    elif kind == "tool":
                        self.add_tool(value, plugin)
                    else:
                        self.add_command(value)
        for _, name, value in offers["flag"]:
            self.flags.setdefault(name, value)
        for plugin, _, value in offers["settings"]:
            self.add_settings_section(value, plugin)
        for _, _, value in offers["abort_scope"]:
            self.add_abort_scope(value)
        # The screen's extensions: the first registration of a key wins.
        for kind, into in (
            ("shortcut", self.shortcuts),
            ("message_renderer", self.message_renderers),
            ("tool_renderer", self.tool_renderers),
        ):
            for _, name, value in offers[kind]:
                into.setdefault(name, value)
        self.conflicts = conflicts
        pm.set_conflicts(conflicts)

    def warn_conflicts(self) -> None:
        """Log each conflict once, in one line naming the plugins and the setting that decides.

        A conflict the settings decided is not warned about (the user chose); it stays listed.
        """
        import logging

        plugin_logger = logging.getLogger("pi_host.plugin")
        for conflict in self.conflicts:
            key = (conflict.kind, conflict.name, conflict.winner)
            if conflict.decided_by != "setting" and key not in self._warned:
                self._warned.add(key)
                plugin_logger.warning("%s", conflict.describe())

    def add_tool(self, tool: Tool[Any], source: str = "runtime") -> None:
        """Add ``tool`` unless its name is taken, wrapped in the middlewares that apply to it."""
        from pi_host.agent import Tool
        from pi_host.agent._middleware import compose

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
        self.tools[tool.name] = compose(tool, self.middlewares, owner=source)
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

    def add_settings_section(self, section: SettingsSection, source: str = "runtime") -> None:
        if not isinstance(section, SettingsSection):
            raise TypeError(
                f"plugin {source!r} registered {section!r}, which is not a pi_host.SettingsSection"
            )
        owner = self.settings_section_sources.get(section.key)
        if owner is not None:
            logger.warning(
                'settings section "%s" from %s ignored: already declared by %s', section.key, source, owner
            )
            return
        self.settings_sections[section.key] = section
        self.settings_section_sources[section.key] = source

    def add_abort_scope(self, scope: AbortScope) -> None:
        if not isinstance(scope, AbortScope):
            raise TypeError(f"{scope!r} is not a pi_host.AbortScope")
        self.abort_scopes.setdefault(scope.name, scope)

    def settings_section_for(self, model: type[Any]) -> SettingsSection | None:
        """The section declared with ``model``, ``None`` when no plugin declared it."""
        return next((s for s in self.settings_sections.values() if s.model is model), None)


def _offer_name(kind: str, value: Any, plugin: str) -> str:
    """The name a registration claims; a value of the wrong type is that plugin's failure."""
    from pi_host.providers import Provider

    # kind -> the class registered, as the docs name it, and the attribute that names it
    expected: dict[str, tuple[type, str, str]] = {
        "provider": (Provider, "pi_host.providers.Provider", "api"),
        "command": (Command, "pi_host.hookspecs.Command", "name"),
        "flag": (Flag, "pi_host.hookspecs.Flag", "name"),
        "settings": (SettingsSection, "pi_host.SettingsSection", "key"),
        "abort_scope": (AbortScope, "pi_host.AbortScope", "name"),
        "shortcut": (Shortcut, "pi_host.hookspecs.Shortcut", "key"),
        "message_renderer": (MessageRenderer, "pi_host.hookspecs.MessageRenderer", "custom_type"),
        "tool_renderer": (ToolRenderer, "pi_host.hookspecs.ToolRenderer", "tool"),
    }
    if kind in ("tool", "middleware"):
        # The agent layer only for what needs it: `pi-host --help` offers the plugins' flags alone.
        from pi_host.agent import Tool, ToolMiddleware

        expected["tool"] = (Tool, "pi_host.Tool", "name")
        expected["middleware"] = (ToolMiddleware, "pi_host.ToolMiddleware", "name")
    cls, label, attribute = expected[kind]
    if not isinstance(value, cls):
        raise TypeError(f"plugin {plugin!r} registered {value!r} as a {kind}, which is not a {label}")
    return str(getattr(value, attribute))


def _preferences(value: object) -> dict[str, dict[str, str]]:
    """The settings' ``plugins.prefer``, keeping what is well formed and warning about the rest."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        logger.warning(
            '%s in settings.json must be an object like {"tools": {"read": "tools_fs"}}', PREFER_SETTING
        )
        return {}
    prefer: dict[str, dict[str, str]] = {}
    for kind, choices in value.items():
        if kind not in ("tools", "commands", "providers") or not isinstance(choices, dict):
            logger.warning(
                '%s.%s in settings.json is ignored: use "tools", "commands" or "providers", each an '
                "object of name to plugin",
                PREFER_SETTING,
                kind,
            )
            continue
        prefer[kind] = {str(name): plugin for name, plugin in choices.items() if isinstance(plugin, str)}
    return prefer


def plugin_flags(
    *,
    controls: PluginControls | None = None,
    disabled: Iterable[str] = (),
    extra_plugins: Iterable[object] = (),
    extensions: Sequence[str] = (),
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
    from pi_host.plugin._containment import watch_user_interrupts

    with watch_user_interrupts():
        load_installed_plugins(pm, controls)
        for plugin in extra_plugins:
            pm.register(plugin)
        if extensions:
            from pi_host.plugin._extensions import load_extensions

            load_extensions(pm, extensions)
    flags: dict[str, Flag] = {}

    def per_plugin(plugin: str) -> dict[str, Any]:
        def register(flag: Any) -> None:
            _offer_name("flag", flag, plugin)
            flags.setdefault(flag.name, flag)  # the first registration wins, as in Host

        return {"register": register}

    pm.call_setup("pi_register_flags", per_plugin=per_plugin)
    return flags
