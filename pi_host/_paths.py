"""The agent directory, where ``models.json`` and ``auth.json`` live.

Defined below every layer: the model registry (layer 2) needs it, and so do the settings,
which ``pi-host --help`` reads without importing the providers. ``~/.pi-host`` by default;
``PI_HOST_DIR`` moves it (point it at ``~/.pi/agent`` to share pi's ``models.json`` and
``auth.json``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["AGENT_DIR_ENV", "agent_dir", "expand_home"]

#: The environment variable that moves the agent directory.
AGENT_DIR_ENV = "PI_HOST_DIR"


def agent_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$PI_HOST_DIR`` when set (``~`` expanded, made absolute), else ``~/.pi-host``."""
    environ = os.environ if env is None else env
    override = environ.get(AGENT_DIR_ENV, "").strip()
    if override:
        return Path(expand_home(override)).resolve()
    return Path.home() / ".pi-host"


def expand_home(path: str) -> str:
    """Expand a leading ``~`` the way pi does: ``~``, ``~/x`` and also ``~x`` mean the home directory.

    pi treats ``~x`` as ``<home>/x`` (not as user *x*'s home), and so do we, so settings files
    written for pi resolve to the same places. Surrounding white space is dropped.
    """
    trimmed = path.strip()
    if trimmed == "~":
        return str(Path.home())
    if trimmed.startswith("~"):
        return str(Path.home() / trimmed[1:].lstrip("/"))
    return trimmed
