"""The rows of ``pi-host plugins list``: a model of its own, created only when plugins are listed."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from ._manager import PluginSource, PluginStatus

__all__ = ["PluginInfo"]


class PluginInfo(BaseModel):
    """One row of ``pi-host plugins list``.

    :ivar name: the plugin's short name (entry-point name, essential module name, file stem).
    :ivar distribution: the distribution that provides it (``pi-host`` for essentials).
    :ivar version: that distribution's version.
    :ivar source: ``"essential"``, ``"entrypoint"``, ``"local"`` (``.pi/plugins/*.py``) or
        ``"direct"`` (registered by code: the SDK, the testing kit).
    :ivar status: ``"enabled"``, ``"disabled"`` (never imported) or ``"failed"``.
    :ivar hooks: the hooks it implements, sorted (empty unless it was imported).
    :ivar error: why it failed or is disabled.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    name: str
    distribution: str | None = None
    version: str | None = None
    source: PluginSource
    status: PluginStatus
    hooks: tuple[str, ...] = ()
    error: str | None = None
