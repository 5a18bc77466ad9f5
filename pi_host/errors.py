"""The exceptions pi-host raises, one hierarchy rooted at :class:`PiError`.

::

    PiError
    ├── UsageError          the user asked for something impossible (bad flag, essential plugin disabled)
    ├── PluginLoadError     a plugin could not be imported, registered or validated
    └── HookError           a hook was called wrongly, or a plugin broke a hook's contract

    pluggy.PluginValidationError   (re-exported) a hook implementation does not fit its spec

:class:`PluginValidationError` is pluggy's own class, re-exported so that one import covers
everything; it is not a :class:`PiError` because pluggy raises it from inside
``PluginManager.register``. Messages name the culprit (plugin, hook, distribution) and the remedy.
"""

from __future__ import annotations

from pluggy import PluginValidationError

__all__ = ["HookError", "PiError", "PluginLoadError", "PluginValidationError", "UsageError"]


class PiError(Exception):
    """Base class of every error pi-host raises on purpose."""


class UsageError(PiError):
    """The user asked for something that cannot be done, e.g. disabling an essential plugin."""


class HookError(PiError):
    """A hook was misused: called with missing arguments, or a plugin broke its contract.

    :ivar plugin: the plugin at fault, when there is one.
    :ivar hook: the hook name (``pi_tool_call`` …).
    """

    def __init__(self, message: str, *, hook: str, plugin: str | None = None) -> None:
        super().__init__(message)
        self.hook = hook
        self.plugin = plugin


class PluginLoadError(PiError):
    """A plugin failed to import, register or validate.

    ``str(error)`` is the one line shown to the user::

        plugin "bash" (pi-bash 0.1.0) failed to load: ModuleNotFoundError: No module named 'x'. \
Disable it with PI_HOST_DISABLE_PLUGINS=bash

    :ivar name: the plugin's short name (its entry-point name, or the file stem of a local plugin).
    :ivar dist: the distribution that provides it, if known.
    :ivar version: that distribution's version, if known.
    :ivar cause: the underlying exception.
    """

    def __init__(self, name: str, dist: str | None, version: str | None, cause: BaseException) -> None:
        self.name = name
        self.dist = dist
        self.version = version
        self.cause = cause
        super().__init__(self._format())

    @property
    def reason(self) -> str:
        """The cause as ``Type: message`` (just the type when the message is empty)."""
        text = str(self.cause)
        return f"{type(self.cause).__name__}: {text}" if text else type(self.cause).__name__

    def _format(self) -> str:
        origin = ""
        if self.dist:
            origin = f" ({self.dist} {self.version})" if self.version else f" ({self.dist})"
        reason = self.reason.rstrip(".")
        return (
            f'plugin "{self.name}"{origin} failed to load: {reason}. '
            f"Disable it with PI_HOST_DISABLE_PLUGINS={self.name}"
        )
