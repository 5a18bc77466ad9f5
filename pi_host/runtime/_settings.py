"""The settings in force before a session exists: which plugins they disable.

Light to import (settings and trust alone), for ``pi-host --help`` and ``pi-host plugins``,
which load plugins without building a session.
"""

from __future__ import annotations

import os
from pathlib import Path

from pi_host.resources._paths import agent_dir
from pi_host.resources._settings import DEFAULT_PROJECT_TRUST, DefaultProjectTrust, SettingsManager
from pi_host.resources._trust import ProjectTrust

__all__ = ["settings_disabled_plugins"]


def _load_settings(cwd: str, root: Path, approve: bool | None) -> tuple[SettingsManager, bool]:
    """The settings in force for ``cwd``: global, plus the project's when the project is trusted."""
    global_settings = SettingsManager.load(cwd, root, project_trusted=False)
    trust = ProjectTrust(root, default=_default_project_trust(global_settings), override=approve)
    trusted = trust.resolve(cwd)
    return (SettingsManager.load(cwd, root, project_trusted=True) if trusted else global_settings), trusted


def settings_disabled_plugins(
    cwd: str | None = None, *, agent_dir_path: str | None = None, approve: bool | None = None
) -> list[str]:
    """The plugins the settings disable (``plugins.disable``), for loading a host before a session."""
    root = Path(agent_dir_path) if agent_dir_path else agent_dir()
    manager, _ = _load_settings(os.path.abspath(cwd or os.getcwd()), root, approve)
    # Typed (validated) only when set: most settings files do not name plugins.
    return list(manager.settings.plugins.disable) if manager.sets_any("plugins") else []


def _default_project_trust(manager: SettingsManager) -> DefaultProjectTrust:
    if manager.sets_any("defaultProjectTrust"):
        return manager.settings.default_project_trust
    return DEFAULT_PROJECT_TRUST
