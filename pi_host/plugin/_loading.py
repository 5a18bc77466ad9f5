"""The standard load sequence and its controls (PI_HOST_PLUGINS, PI_HOST_DISABLE_PLUGINS, --no-plugin)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from pi_host.errors import PluginLoadError, UsageError

from ._discovery import load_entrypoint_plugins
from ._manager import ESSENTIAL_PLUGINS, PluginManager, essential_name

__all__ = [
    "DISABLE_ENV",
    "PLUGINS_ENV",
    "PluginControls",
    "load_installed_plugins",
    "load_plugins",
    "parse_plugin_names",
    "resolve_controls",
    "warn_unknown_disabled",
]

PLUGINS_ENV = "PI_HOST_PLUGINS"
DISABLE_ENV = "PI_HOST_DISABLE_PLUGINS"


def parse_plugin_names(text: str) -> list[str]:
    """``"bash, tools_fs,"`` → ``["bash", "tools_fs"]``."""
    return [name.strip() for name in text.split(",") if name.strip()]


@dataclass(frozen=True)
class PluginControls:
    """Which plugins may load, besides the essentials (which always do).

    :ivar allow: the only plugins to load; ``None`` means every installed plugin, and an
        empty set is *safe mode*: essentials only.
    :ivar disabled: plugins never to import.
    """

    allow: frozenset[str] | None = None
    disabled: frozenset[str] = frozenset()

    @classmethod
    def from_environ(
        cls, environ: Mapping[str, str] | None = None, *, disabled: Iterable[str] = ()
    ) -> PluginControls:
        """Read ``PI_HOST_PLUGINS`` and ``PI_HOST_DISABLE_PLUGINS``, adding ``disabled``.

        :param disabled: more plugins to disable: ``--no-plugin NAME`` arguments and settings.
        """
        env = os.environ if environ is None else environ
        allow_text = env.get(PLUGINS_ENV)
        allow = None if allow_text is None else frozenset(parse_plugin_names(allow_text))
        blocked = frozenset(parse_plugin_names(env.get(DISABLE_ENV, ""))) | frozenset(disabled)
        return cls(allow=allow, disabled=blocked)

    @property
    def safe_mode(self) -> bool:
        """``PI_HOST_PLUGINS=""``: only the essentials load."""
        return self.allow is not None and not self.allow


def load_plugins(
    pm: PluginManager,
    *,
    controls: PluginControls | None = None,
    disabled: Iterable[str] = (),
    essentials: Iterable[str] = ESSENTIAL_PLUGINS,
) -> list[PluginLoadError]:
    """Register the essentials, then the enabled installed plugins, then check hook names.

    Project-local plugins come later, once the project is trusted (:func:`load_local_plugins`).
    Each broken plugin is logged in one line on the ``pi_host.plugin`` logger, listed as
    failed and left out; the returned errors are the same lines, for callers that present
    them another way.

    :param controls: defaults to :meth:`PluginControls.from_environ`.
    :param disabled: more plugins to disable (``--no-plugin NAME``, settings), added to ``controls``.
    :raises UsageError: when asked to disable an essential plugin.
    :raises PluginLoadError: when an essential plugin is broken (a defect of pi-host).
    """
    essentials = tuple(essentials)
    controls = resolve_controls(controls, disabled=disabled, essentials=essentials)
    pm.register_essentials(essentials)
    errors = load_installed_plugins(pm, controls)
    errors.extend(pm.check_pending_plugins())
    return errors


def resolve_controls(
    controls: PluginControls | None = None,
    *,
    disabled: Iterable[str] = (),
    essentials: Iterable[str] = ESSENTIAL_PLUGINS,
) -> PluginControls:
    """``controls`` (default: from the environment) with ``disabled`` added.

    :raises UsageError: when asked to disable one of ``essentials``.
    """
    controls = PluginControls.from_environ() if controls is None else controls
    controls = replace(controls, disabled=controls.disabled | frozenset(disabled))
    essentials = tuple(essentials)
    essential_names = {essential_name(module) for module in essentials} | set(essentials)
    for name in sorted(controls.disabled & essential_names):
        raise UsageError(f"plugin '{name}' is essential and cannot be disabled")
    return controls


def load_installed_plugins(pm: PluginManager, controls: PluginControls) -> list[PluginLoadError]:
    """Block the disabled names, then import and register the enabled installed plugins.

    The part of :func:`load_plugins` after the essentials, without its check of hook names.
    """
    for name in sorted(controls.disabled):
        pm.set_blocked(name)
    return load_entrypoint_plugins(pm, allow=controls.allow, disabled=controls.disabled)


def warn_unknown_disabled(
    pm: PluginManager, disabled: Iterable[str], *, also_known: Iterable[str] = ()
) -> list[str]:
    """Warn about each name asked to be disabled that no plugin has (a typo disables nothing).

    :param also_known: more plugin names that exist though not loaded yet (a project's
        ``.pi/plugins/*.py``).
    :returns: the warning lines.
    """
    import difflib
    import logging

    known = sorted(pm.known_names() | set(also_known))
    lines = []
    for name in sorted(set(disabled) - set(known)):
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        hint = f' (did you mean "{close[0]}"?)' if close else ""
        lines.append(
            f'cannot disable plugin "{name}": no plugin has that name{hint}; known plugins: '
            f"{', '.join(known) or 'none'} (from {DISABLE_ENV}, plugins.disable in settings.json "
            "or -p no:NAME)"
        )
    logger = logging.getLogger("pi_host.plugin")
    for line in lines:
        logger.warning("%s", line)
    return lines
