"""A JSON request body that is written piece by piece and never exists whole.

A resumed long session sends its whole history: 8 MB of JSON at 10,000 entries. Encoded at
once, the body is a bytes object as large as the request, and pydantic-core first builds it in
a buffer of its own and then copies it, so for a moment it exists twice, on top of the wire
dicts it was made from (which the provider keeps for the next request). Here the top level of
the body (the request's fields, and the items of its arrays: ``messages``, ``tools`` …) is
encoded one value at a time, twice: once to learn the length (``Content-Length``, which pi
sends too), then again as the bytes go out. Encoding costs a few milliseconds per 10 MB; the
memory saved is twice the body.

The bytes are those of ``pydantic_core.to_json(value)``: compact JSON is the concatenation of
its parts, and anything that is not a ``dict`` with ``str`` keys is encoded whole.

A small body (up to :data:`CHUNK` bytes, every warm request of a short conversation) is kept
from the length pass and written as it is: encoding it a second time cost as much again as the
first, for a copy of at most one chunk saved.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic_core import to_json

__all__ = ["JsonBody"]

#: Pieces are joined into chunks of about this size before they are written.
CHUNK = 256 * 1024


class JsonBody:
    """``value`` as JSON bytes, produced again by each :meth:`chunks` call.

    :param value: the request body (dicts, lists, strings, numbers, pydantic models: whatever
        ``to_json`` accepts); it must not change while the body is in use.
    """

    __slots__ = ("_small", "_value", "length")

    def __init__(self, value: Any) -> None:
        self._value = value
        kept: list[bytes] | None = []
        length = 0
        for piece in _pieces(value):
            length += len(piece)
            if kept is not None:
                if length <= CHUNK:
                    kept.append(piece)
                else:
                    kept = None  # a large body: encoded again as it is written
        #: The body's length in bytes.
        self.length = length
        self._small = None if kept is None else kept[0] if len(kept) == 1 else b"".join(kept)

    def chunks(self, size: int = CHUNK) -> Iterator[bytes]:
        """The body in order, in chunks of about ``size`` bytes (a larger piece goes alone)."""
        small = self._small
        if small is not None and len(small) <= size:
            yield small
            return
        pending = bytearray()
        for piece in _pieces(self._value):
            if len(piece) >= size:
                if pending:
                    yield bytes(pending)
                    pending.clear()
                yield piece
                continue
            pending += piece
            if len(pending) >= size:
                yield bytes(pending)
                pending.clear()
        if pending:
            yield bytes(pending)

    def to_bytes(self) -> bytes:
        """The whole body at once (for a client that needs it so)."""
        return b"".join(self.chunks())


def _pieces(value: Any) -> Iterator[bytes]:
    if not isinstance(value, dict) or any(type(key) is not str for key in value):
        yield to_json(value)
        return
    separator = b"{"
    for key, item in value.items():
        yield separator + to_json(key) + b":"
        separator = b","
        if isinstance(item, list | tuple):
            yield from _array(item)
        else:
            yield to_json(item)
    yield b"{}" if separator == b"{" else b"}"


def _array(items: list[Any] | tuple[Any, ...]) -> Iterator[bytes]:
    if not items:
        yield b"[]"
        return
    separator = b"["
    for item in items:
        yield separator
        separator = b","
        yield to_json(item)
    yield b"]"
