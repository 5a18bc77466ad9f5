"""The rows of ``pi-host plugins list``: models of their own, created only when plugins are listed."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from ._manager import PluginSource, PluginStatus, PluginTier

__all__ = ["Conflict", "ConflictKind", "PluginInfo"]

ConflictKind = Literal["tool", "command", "provider"]


class Conflict(BaseModel):
    """Two or more plugins offer one tool, command or provider name.

    :ivar kind: ``"tool"``, ``"command"`` or ``"provider"``.
    :ivar name: the contested name (a provider's ``api``).
    :ivar plugins: every plugin that offers it, in call order (the winner by default first).
    :ivar winner: the plugin whose offer is used (for a command: the one reachable as ``/name``;
        the others get ``:1``, ``:2`` suffixes, as in pi).
    :ivar decided_by: ``"tier"`` (a later tier wins), ``"order"`` (same tier: call order,
        which is name order reversed), or ``"setting"`` (the settings' ``plugins.prefer``).
    :ivar setting: the settings.json key that chooses the winner.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    kind: ConflictKind
    name: str
    plugins: tuple[str, ...]
    winner: str
    decided_by: Literal["tier", "order", "setting"]
    setting: str

    def describe(self) -> str:
        """One line naming the plugins and the setting that decides."""
        others = [plugin for plugin in self.plugins if plugin != self.winner]
        why = {
            "tier": "its tier loads later",
            "order": "same tier; the later name is called first",
            "setting": f"chosen by {self.setting}",
        }[self.decided_by]
        return (
            f'{self.kind} "{self.name}" is offered by plugins {", ".join(self.plugins)}; '
            f'"{self.winner}" wins ({why}) over {", ".join(others)}. '
            f'Choose with "{self.setting}": "<plugin>" in settings.json'
        )


class PluginInfo(BaseModel):
    """One row of ``pi-host plugins list``.

    :ivar name: the plugin's short name (entry-point name, essential module name, file stem).
    :ivar distribution: the distribution that provides it (``pi-host`` for essentials; the
        file or folder for project-local and ``-e`` plugins).
    :ivar version: that distribution's version.
    :ivar source: ``"essential"``, ``"entrypoint"``, ``"local"`` (``.pi/plugins/*.py``),
        ``"extension"`` (``-e PATH``) or ``"direct"`` (registered by code: the SDK, the testing kit).
    :ivar tier: where it stands in the load order (:data:`~pi_host.plugin.TIER_ORDER`):
        ``"essential"``, ``"default"``, ``"installed"``, ``"direct"``, ``"local"`` or
        ``"extension"``; a later tier wins a name.
    :ivar status: ``"enabled"``, ``"disabled"`` (never imported) or ``"failed"``.
    :ivar hooks: the hooks it implements, sorted (empty unless it was imported).
    :ivar error: why it failed or is disabled (``"project not trusted"`` for a project's
        plugins in an untrusted project).
    :ivar conflicts: the names it offers that another plugin offers too.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    name: str
    distribution: str | None = None
    version: str | None = None
    source: PluginSource
    tier: PluginTier = "direct"
    status: PluginStatus
    hooks: tuple[str, ...] = ()
    error: str | None = None
    conflicts: tuple[Conflict, ...] = ()
