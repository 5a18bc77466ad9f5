"""Writing one JSON record as one line, in as few copies and system calls as possible.

JSON and RPC modes write a ``message_update`` line per streamed delta, and each carries the
whole reply so far, twice. :func:`write_line` hands the pieces of such a line
(:meth:`~pi_host.messages.MessageUpdateEvent.json_parts`) and its newline to the file
descriptor in one ``os.writev``: no joined copy, no copy into the stream's buffer, one system
call. Every line is written through at once, as before, so a reader waiting for it gets it.
"""

from __future__ import annotations

import os
from typing import BinaryIO

from pi_host.messages import WireModel

__all__ = ["line_parts", "write_line", "write_parts"]

_NEWLINE = b"\n"
_writev = getattr(os, "writev", None)
# At most this many buffers per writev (POSIX guarantees at least 16; Linux allows 1,024).
_IOV_MAX = min(os.sysconf("SC_IOV_MAX"), 1024) if hasattr(os, "sysconf") else 16


def write_line(stream: BinaryIO, record: WireModel | bytes) -> None:
    """Write ``record`` (a model as pi's JSON, or ready JSON bytes) and a newline to ``stream``, flushed.

    Whatever ``stream`` still buffers is flushed first, so lines keep their order. A stream
    without a file descriptor (tests use :class:`io.BytesIO`) gets one ordinary ``write``.
    """
    write_parts(stream, line_parts(record))


def line_parts(record: WireModel | bytes) -> list[bytes]:
    """The pieces of ``record``'s line, its newline included."""
    if isinstance(record, bytes):
        return [record, _NEWLINE]
    kind = type(record)
    in_parts = _IN_PARTS.get(kind)
    if in_parts is None:
        in_parts = _IN_PARTS[kind] = callable(getattr(kind, "json_parts", None))
    if in_parts:
        return [*record.json_parts(), _NEWLINE]  # type: ignore[attr-defined]  # checked above
    return [record.to_json_bytes(), _NEWLINE]


# Whether a record type writes its line in parts (``json_parts``), by type. Asked of each
# record, a pydantic model that has no such attribute answered through its ``__getattr__`` and
# an AttributeError: a few microseconds for each of the dozen events of a prompt.
_IN_PARTS: dict[type, bool] = {}


def write_parts(stream: BinaryIO, parts: list[bytes]) -> None:
    """Write ``parts`` to ``stream`` in as few system calls as the platform allows, flushed."""
    stream.flush()
    fd = _fileno(stream) if _writev is not None else None
    if fd is None:
        stream.write(b"".join(parts))
        stream.flush()
        return
    for start in range(0, len(parts), _IOV_MAX):
        _write_all(fd, parts[start : start + _IOV_MAX])


def _fileno(stream: BinaryIO) -> int | None:
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):
        return None


def _write_all(fd: int, parts: list[bytes]) -> None:
    assert _writev is not None
    written = _writev(fd, parts)
    total = sum(map(len, parts))
    if written == total:
        return
    # A signal can cut a write to a pipe short: write the rest.
    rest = memoryview(b"".join(parts))[written:]
    while rest:
        rest = rest[os.write(fd, rest) :]
