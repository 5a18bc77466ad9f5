"""The part of a session that depends on the project's trust, rebuilt when ``/trust`` changes it.

A trusted project brings its ``.pi/settings.json``, skills, prompt templates, system prompt and
``.pi/plugins``; an untrusted one brings none of them. pi 0.73 has no ``/trust`` command (the
question is asked once, at start-up), so a change here takes effect the way ``/reload`` applies
changes: settings and resources are read again, the project's plugins join or leave, and the
plugins are bound to the session anew (``pi_session_shutdown``/``pi_session_start`` with reason
``reload``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pi_host.resources import ResourceOptions, Resources, SettingsManager, load_resources
from pi_host.resources._trust import ProjectTrust, has_trust_requiring_resources

from ._config import SessionHostConfig
from ._host import BUILTIN_TOOL_NAMES

if TYPE_CHECKING:
    from pi_host.agent import Tool
    from pi_host.hookspecs import Mode

    from ._session import AgentSession

__all__ = ["ProjectResources", "TrustDescription"]


@dataclass(frozen=True)
class TrustDescription:
    """Whether the project is trusted and why; ``changeable`` is false when the command line
    (``--approve``/``--no-approve``) or the lack of project resources decides."""

    trusted: bool
    reason: str
    changeable: bool
    needs_trust: bool


class ProjectResources:
    """Holds a session's trust decisions and resources, and applies a change of trust.

    :param resources: what was loaded at start-up for the current trust.
    :param disabled_plugins: ``--disable-plugin`` style names from the command line.
    """

    def __init__(
        self,
        *,
        cwd: str,
        agent_dir: Path,
        trust: ProjectTrust,
        resource_options: ResourceOptions,
        resources: Resources,
        mode: Mode,
        flags: dict[str, bool | str],
        disabled_plugins: Sequence[str] = (),
    ) -> None:
        self.cwd = cwd
        self.agent_dir = agent_dir
        self.trust = trust
        self.resources = resources
        self._resource_options = resource_options
        self._mode = mode
        self._flags = dict(flags)
        self._disabled_plugins = tuple(disabled_plugins)

    def system_prompt_builder(self, session: AgentSession) -> Callable[[Sequence[Tool[Any]]], str]:
        """The session's system prompt from these resources, listing the session's skills
        (plugins add some at session start)."""

        def build(tools: Sequence[Tool[Any]]) -> str:
            return replace(self.resources, skills=tuple(session.skills)).system_prompt(tools)

        return build

    def describe(self, trusted_now: bool) -> TrustDescription:
        """Why the project is (not) trusted, in words for ``/trust``."""
        trust, cwd = self.trust, self.cwd
        if trust.override is not None:
            flag = "--approve" if trust.override else "--no-approve"
            return TrustDescription(trust.override, f"decided by {flag} for this run", False, True)
        if not has_trust_requiring_resources(cwd):
            return TrustDescription(True, "the project has no .pi resources that need trust", False, False)
        session_decision = trust.session_decision(cwd)
        if session_decision is not None:
            entry = trust.remembered_entry(cwd)
            if entry is not None and entry.trusted == session_decision:
                return TrustDescription(
                    session_decision, f"remembered in {trust.store.path} for {entry.path}", True, True
                )
            return TrustDescription(session_decision, "for this session only", True, True)
        entry = trust.remembered_entry(cwd)
        if entry is not None:
            reason = f"remembered in {trust.store.path} for {entry.path}"
            return TrustDescription(entry.trusted, reason, True, True)
        if trust.default in ("always", "never"):
            reason = f'defaultProjectTrust is "{trust.default}" in settings.json'
            return TrustDescription(trust.default == "always", reason, True, True)
        return TrustDescription(trusted_now, "not decided yet", True, True)

    async def apply(self, session: AgentSession, trusted: bool) -> None:
        """Load what ``trusted`` allows into ``session`` and rebind its plugins (``/reload``'s
        shutdown and start, with the project's plugins joined or left in between)."""
        host = session.host
        known_tools = set(host.tools)
        # Plugins leave the old session binding first (the ones about to be unloaded too).
        await session.shutdown("reload")
        settings_manager = SettingsManager.load(self.cwd, self.agent_dir, project_trusted=trusted)
        settings = settings_manager.settings
        if trusted:
            host.apply_plugin_settings(
                self.cwd, settings.plugins.disable, self._disabled_plugins, trusted=True
            )
        elif host.local_plugins_loaded:
            _unload_local_plugins(session, self.cwd)
            host.local_plugins_loaded = False
        host.configure(
            SessionHostConfig(
                cwd=self.cwd, mode=self._mode, settings=settings_manager.merged(), flags=dict(self._flags)
            )
        )
        # Tools the project's plugins bring are active, as they would be at start-up.
        added = [name for name in host.tools if name not in known_tools and name not in BUILTIN_TOOL_NAMES]
        active = [*session.active_tool_names, *added]
        self.resources = load_resources(
            cwd=self.cwd, agent_dir=self.agent_dir, settings=settings_manager, options=self._resource_options
        )
        session.settings = settings
        session.agent.steering_mode = settings.steering_mode
        session.agent.follow_up_mode = settings.follow_up_mode
        session.set_system_prompt_builder(self.system_prompt_builder(session))
        session.skills = list(self.resources.skills)
        session.prompt_templates = list(self.resources.prompt_templates)
        session.project_trusted = trusted
        session.set_active_tools(active)
        await session.start("reload")


def _unload_local_plugins(session: AgentSession, cwd: str) -> None:
    from pi_host.plugin import local_plugin_files

    pm = session.host.plugin_manager
    local = {info.name for info in pm.list_plugins() if info.source == "local"}
    for path in local_plugin_files(cwd):
        if path.stem not in local:
            continue  # an installed plugin of that name kept it; the file never loaded
        plugin = pm.get_plugin(path.stem)
        if plugin is not None:
            pm.unregister(plugin)
        pm.record(path.stem, "local", "disabled", distribution=os.fspath(path), error="project not trusted")
