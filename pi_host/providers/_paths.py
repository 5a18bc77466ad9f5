"""The agent directory, where ``models.json`` and ``auth.json`` live.

Defined at the provider layer because the model registry needs it and may not import anything
above layer 2. ``~/.pi-host`` by default; ``PI_HOST_DIR`` moves it (point it at ``~/.pi/agent``
to share pi's ``models.json`` and ``auth.json``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["AGENT_DIR_ENV", "agent_dir"]

#: The environment variable that moves the agent directory.
AGENT_DIR_ENV = "PI_HOST_DIR"


def agent_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$PI_HOST_DIR`` when set (``~`` expanded, made absolute), else ``~/.pi-host``."""
    environ = os.environ if env is None else env
    override = environ.get(AGENT_DIR_ENV, "").strip()
    if override:
        return Path(_expand_home(override)).resolve()
    return Path.home() / ".pi-host"


def _expand_home(path: str) -> str:
    # pi reads "~x" as "<home>/x", not as user x's home; so do we, so paths written for pi agree.
    if path == "~":
        return str(Path.home())
    if path.startswith("~"):
        return str(Path.home() / path[1:].lstrip("/"))
    return path
