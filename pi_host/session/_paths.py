"""Where session files live: the agent directory, per-project session directories, file names.

The layout is pi's (``<agent dir>/sessions/--<cwd encoded>--/<timestamp>_<id>.jsonl``), so
pointing ``PI_HOST_DIR`` at a pi agent directory (``~/.pi/agent``) shares sessions with pi.
"""

from __future__ import annotations

import os
import re
import secrets
import time
import uuid
from pathlib import Path

__all__ = [
    "SESSION_ID_PATTERN",
    "agent_dir",
    "default_session_dir",
    "new_session_id",
    "session_file_name",
    "sessions_root",
    "validate_session_id",
]

SESSION_ID_PATTERN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")
"""What a caller-chosen session id must look like (pi's rule): it becomes part of a file name."""

MAX_SESSION_ID_LENGTH = 200
"""The longest caller-chosen session id: with the timestamp and ``.jsonl`` its file name stays
under the 255 bytes most file systems allow (pi sets no limit, and fails writing the file)."""

_CWD_SEPARATORS = re.compile(r"[/\\:]")


def agent_dir() -> Path:
    """The agent directory: ``$PI_HOST_DIR`` (``~`` expanded) or ``~/.pi-host``."""
    configured = os.environ.get("PI_HOST_DIR")
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".pi-host"


def sessions_root(base: str | os.PathLike[str] | None = None) -> Path:
    """The directory holding one session directory per project (``<agent dir>/sessions``)."""
    return Path(base if base is not None else agent_dir()) / "sessions"


def default_session_dir(cwd: str | os.PathLike[str], base: str | os.PathLike[str] | None = None) -> Path:
    """The session directory of a working directory, encoded as pi encodes it.

    The leading separator is dropped and every ``/``, ``\\`` and ``:`` becomes ``-``:
    ``/home/ann/proj`` → ``sessions/--home-ann-proj--``. The directory is not created.
    """
    text = os.fspath(cwd)
    if text[:1] in ("/", "\\"):
        text = text[1:]
    return sessions_root(base) / f"--{_CWD_SEPARATORS.sub('-', text)}--"


def session_file_name(timestamp: str, session_id: str) -> str:
    """``<timestamp with ':' and '.' replaced by '-'>_<id>.jsonl``, pi's file name."""
    return f"{timestamp.replace(':', '-').replace('.', '-')}_{session_id}.jsonl"


def new_session_id() -> str:
    """A fresh session id: a time-ordered UUID (version 7), as pi makes them."""
    # uuid.uuid7 arrives in Python 3.14; build the RFC 9562 layout by hand until then.
    millis = time.time_ns() // 1_000_000
    rand_a = secrets.randbits(12)
    rand_b = secrets.randbits(62)
    value = (millis & 0xFFFF_FFFF_FFFF) << 80 | 0x7 << 76 | rand_a << 64 | 0b10 << 62 | rand_b
    return str(uuid.UUID(int=value))


def validate_session_id(session_id: str) -> str:
    """Return ``session_id`` if it is usable in a file name, else raise.

    :raises ValueError: naming the id and the characters allowed.
    """
    if not SESSION_ID_PATTERN.fullmatch(session_id):
        raise ValueError(
            f"Invalid session id {session_id!r}: use letters, digits, '.', '_' and '-', "
            "starting and ending with a letter or digit"
        )
    if len(session_id) > MAX_SESSION_ID_LENGTH:
        raise ValueError(
            f"Invalid session id {session_id[:20]}… ({len(session_id)} characters): use at most "
            f"{MAX_SESSION_ID_LENGTH}, so that the session's file name fits the file system"
        )
    return session_id
