"""An incremental Server-Sent Events decoder: bytes in, events out, split anywhere.

Both wire formats stream SSE. The network hands us bytes in whatever pieces TCP produced, so
the decoder keeps every partial state across :meth:`SSEDecoder.feed` calls: a UTF-8 sequence
cut in half, a line without its terminator, a ``\\r`` whose ``\\n`` is still in flight, an
event whose blank line has not arrived. It follows the WHATWG parsing rules that matter here
(``\\r\\n``, ``\\r`` and ``\\n`` line ends; ``:`` comments; one optional space after the colon;
multi-line ``data`` joined with ``\\n``; a leading BOM dropped), with one deliberate difference:
an event with an ``event:`` name but no ``data:`` is still dispatched, as pi's decoder does.
"""

from __future__ import annotations

import codecs
from typing import NamedTuple

__all__ = ["SSEDecoder", "ServerSentEvent"]


class ServerSentEvent(NamedTuple):
    """One dispatched event. ``event`` is ``None`` when the server named none (``message``).

    A named tuple rather than a frozen dataclass: a long reply dispatches thousands, and a
    tuple is built three times faster.
    """

    event: str | None
    data: str
    id: str | None = None
    retry: int | None = None


class SSEDecoder:
    """Turn a byte stream into :class:`ServerSentEvent` objects, one ``feed`` at a time."""

    __slots__ = (
        "_buffer",
        "_data",
        "_decoder",
        "_event",
        "_has_data",
        "_id",
        "_pending_cr",
        "_retry",
        "_started",
    )

    def __init__(self) -> None:
        # "replace" keeps a stray invalid byte from killing the whole stream; JSON parsing of
        # the event then decides whether the payload is still usable.
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""
        self._pending_cr = False
        self._started = False
        self._event: str | None = None
        self._data: list[str] = []
        self._has_data = False
        self._id: str | None = None
        self._retry: int | None = None

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """Decode ``chunk`` and return the events it completed (often none, sometimes many)."""
        return self._consume(self._decoder.decode(chunk))

    def close(self) -> list[ServerSentEvent]:
        """Flush at end of stream: a last unterminated line and a last undispatched event."""
        events = self._consume(self._decoder.decode(b"", final=True))
        if self._buffer:
            line, self._buffer = self._buffer, ""
            event = self._line(line)
            if event is not None:
                events.append(event)
        event = self._dispatch()
        if event is not None:
            events.append(event)
        return events

    def _consume(self, text: str) -> list[ServerSentEvent]:
        if not text:
            return []
        if not self._started:
            self._started = True
            if text.startswith("\ufeff"):
                text = text[1:]
        if self._pending_cr:
            # The previous piece ended in "\r"; a "\n" starting this one belongs to it.
            self._pending_cr = False
            if text.startswith("\n"):
                text = text[1:]
        if "\r" in text:
            if text.endswith("\r"):
                self._pending_cr = True
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        if "\n" not in text:
            self._buffer += text
            return []
        lines = (self._buffer + text).split("\n") if self._buffer else text.split("\n")
        self._buffer = lines.pop()
        events: list[ServerSentEvent] = []
        # The common lines (data, event, the blank line) are handled inline: this loop runs
        # three times per streamed delta.
        for line in lines:
            if not line:
                if self._has_data or self._event is not None:
                    events.append(self._dispatch_pending())
                continue
            field, colon, value = line.partition(":")
            if colon and value[:1] == " ":
                value = value[1:]
            if field == "data":
                self._data.append(value)
                self._has_data = True
            elif field == "event":
                self._event = value
            else:
                self._field(field, value)
        return events

    def _line(self, line: str) -> ServerSentEvent | None:
        if not line:
            return self._dispatch()
        field, colon, value = line.partition(":")
        if colon and value[:1] == " ":
            value = value[1:]
        if field == "data":
            self._data.append(value)
            self._has_data = True
        elif field == "event":
            self._event = value
        else:
            self._field(field, value)
        return None

    def _field(self, field: str, value: str) -> None:
        # A line starting with ":" is a comment (an empty field name), ignored like any other
        # field name the SSE specification does not define.
        if field == "id":
            if "\0" not in value:
                self._id = value
        elif field == "retry" and value.isdigit():
            self._retry = int(value)

    def _dispatch(self) -> ServerSentEvent | None:
        if not self._has_data and self._event is None:
            return None
        return self._dispatch_pending()

    def _dispatch_pending(self) -> ServerSentEvent:
        data = self._data
        event = ServerSentEvent(
            self._event or None, data[0] if len(data) == 1 else "\n".join(data), self._id, self._retry
        )
        self._event = None
        self._data = []
        self._has_data = False
        self._retry = None
        return event
