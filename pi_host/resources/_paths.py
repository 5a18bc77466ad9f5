"""Where pi-host keeps its files, and how user-written paths are resolved.

The agent directory (``~/.pi-host`` or ``$PI_HOST_DIR``) holds the user's global files in pi's
formats: ``settings.json``, ``trust.json``, ``AGENTS.md``, ``SYSTEM.md``, ``skills/``, ``prompts/``.
A project keeps its own in ``<cwd>/.pi``, the directory pi uses, so one repository serves both.
"""

from __future__ import annotations

import os
from pathlib import Path

# One agent directory for the whole host, defined at the provider layer: the lowest that needs
# it (the model registry reads models.json and auth.json from it).
from pi_host._paths import AGENT_DIR_ENV, agent_dir, expand_home

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


def project_config_dir(cwd: str | os.PathLike[str]) -> Path:
    """The project's configuration directory, ``<cwd>/.pi``."""
    return Path(cwd) / CONFIG_DIR_NAME


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
