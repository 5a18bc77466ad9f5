"""Where pi-host keeps its files, and how user-written paths are resolved.

The agent directory (``~/.pi-host`` or ``$PI_HOST_DIR``) holds the user's global files in pi's
formats: ``settings.json``, ``trust.json``, ``AGENTS.md``, ``SYSTEM.md``, ``skills/``, ``prompts/``.
A project keeps its own in ``<cwd>/.pi``, the directory pi uses, so one repository serves both.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = [
    "AGENT_DIR_ENV",
    "CONFIG_DIR_NAME",
    "agent_dir",
    "canonical_path",
    "exists",
    "expand_home",
    "is_dir",
    "is_file",
    "project_config_dir",
    "resolve_user_path",
]

#: The project-local configuration directory, shared with pi.
CONFIG_DIR_NAME = ".pi"

#: The environment variable that moves the agent directory.
AGENT_DIR_ENV = "PI_HOST_DIR"


def agent_dir(env: Mapping[str, str] | None = None) -> Path:
    """The agent directory: ``$PI_HOST_DIR`` when set (``~`` expanded), else ``~/.pi-host``.

    Point ``PI_HOST_DIR`` at a pi agent directory (``~/.pi/agent``) to share its files with pi.
    """
    environ = os.environ if env is None else env
    override = environ.get(AGENT_DIR_ENV, "").strip()
    if override:
        return Path(expand_home(override)).resolve()
    return Path.home() / ".pi-host"


def project_config_dir(cwd: str | os.PathLike[str]) -> Path:
    """The project's configuration directory, ``<cwd>/.pi``."""
    return Path(cwd) / CONFIG_DIR_NAME


def expand_home(path: str) -> str:
    """Expand a leading ``~`` the way pi does: ``~``, ``~/x`` and also ``~x`` mean the home directory.

    pi treats ``~x`` as ``<home>/x`` (not as user *x*'s home), and so do we, so settings files
    written for pi resolve to the same places.
    """
    trimmed = path.strip()
    if trimmed == "~":
        return str(Path.home())
    if trimmed.startswith("~/"):
        return str(Path.home() / trimmed[2:])
    if trimmed.startswith("~"):
        return str(Path.home() / trimmed[1:])
    return trimmed


def resolve_user_path(path: str, base: str | os.PathLike[str]) -> Path:
    """Resolve a path written by a user: ``~`` expanded, relative paths against *base*.

    The result is absolute and normalised (``..`` collapsed) but symlinks are kept, as pi's
    ``path.resolve`` keeps them.
    """
    expanded = expand_home(path)
    return Path(os.path.abspath(os.path.join(os.fspath(base), expanded)))


def canonical_path(path: str | os.PathLike[str]) -> str:
    """The real path (symlinks resolved) when it exists, else the normalised absolute path."""
    try:
        return os.path.realpath(path, strict=True)
    except OSError:
        return os.path.abspath(path)


# Path.exists() and friends raise on EACCES before Python 3.12; discovery must never stop at an
# unreadable directory, so these answer False for any error, as os.path.exists does.


def exists(path: str | os.PathLike[str]) -> bool:
    """Whether *path* exists; ``False`` when it cannot be checked."""
    return os.path.exists(path)


def is_file(path: str | os.PathLike[str]) -> bool:
    """Whether *path* is a file (symlinks followed); ``False`` when it cannot be checked."""
    return os.path.isfile(path)


def is_dir(path: str | os.PathLike[str]) -> bool:
    """Whether *path* is a directory (symlinks followed); ``False`` when it cannot be checked."""
    return os.path.isdir(path)
