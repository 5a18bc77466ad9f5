"""Opening only regular files: a FIFO, a terminal or a device can block a read or never end.

``read /dev/stdin`` in RPC mode would eat the command stream, ``read`` of a FIFO waits for a
writer that may never come, and ``read /dev/zero`` never ends. The file tools open what they
read with :func:`open_regular`, which refuses such files before reading a byte and never
blocks opening them.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO

from ._errors import ToolError

__all__ = ["NotRegularFileError", "open_regular", "refuse_special"]

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)
_OPEN_FLAGS = (
    os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
)


class NotRegularFileError(ToolError):
    """The path names a FIFO, a device or a socket, which the file tools do not open."""


def _kind(mode: int) -> str:
    for test, kind in _KINDS:
        if test(mode):
            return kind
    return "not a regular file"


def refuse_special(path: str, mode: int, verb: str) -> None:
    """Raise :class:`NotRegularFileError` unless ``mode`` is a regular file's or a directory's."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return
    raise NotRegularFileError(
        f"Cannot {verb} {path}: it is {_kind(mode)}, not a regular file. Only regular files "
        "can be used here; use bash with a bound (e.g. head -c 4096) to look at a device or pipe."
    )


def open_regular(path: str, shown_path: str, verb: str) -> BinaryIO:
    """Open the regular file ``path`` for binary reading, without blocking.

    :raises NotRegularFileError: for a FIFO, device or socket (``shown_path`` names it).
    :raises IsADirectoryError: for a directory, as ``open`` would.
    :raises OSError: when the file cannot be opened.
    """
    refuse_special(shown_path, os.stat(path).st_mode, verb)
    # O_NONBLOCK: should a FIFO take the file's place after the check, opening it still
    # returns at once, and fstat below sees it.
    fd = os.open(path, _OPEN_FLAGS)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        refuse_special(shown_path, mode, verb)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
