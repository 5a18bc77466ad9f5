"""RPC mode's wire: strict JSONL framing, serialised writes, and the extension-UI bridge.

Framing is LF only (an optional trailing ``\\r`` is stripped); U+2028 and U+2029 are ordinary
characters inside JSON strings, so lines are split on the byte ``\\n`` and never with
:meth:`str.splitlines`.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import threading
import uuid
from collections.abc import Callable, Sequence
from typing import Any, BinaryIO, Literal

import anyio
from anyio.abc import ObjectSendStream
from anyio.from_thread import BlockingPortal

from pi_host.messages import WireModel

from ._jsonl import line_parts, write_parts

__all__ = ["JsonlWriter", "RpcUI", "decode_line", "read_lines", "read_lines_in_thread"]


def decode_line(raw: bytes) -> str:
    """One record without its ``\\n`` (and an optional ``\\r``), decoded as UTF-8."""
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    return raw.decode("utf-8", errors="replace")


def _dumps(value: Any) -> bytes:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate cannot be UTF-8; escape it as JSON.stringify does.
        return json.dumps(value, separators=(",", ":")).encode("ascii")


class JsonlWriter:
    """Writes whole records to a binary stream, one line each, in order.

    Records written on the event loop's thread during one step of the loop (a burst such as
    ``message_end``, ``turn_end``, ``agent_end``) are written out together, in one system
    call, as soon as that step ends: before the loop waits for anything, so a client waiting
    for a line gets it without delay. A record written from another thread, or with no loop
    running, is written through at once. Lines are whole: records of concurrent tasks
    (events, responses, UI requests) never interleave within a line.
    """

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self._pending: list[bytes] = []
        self._flush_scheduled = False
        self.closed = False

    def write(self, record: Any) -> None:
        """Write a dict (JSON-encoded) or a :class:`WireModel` (pi's camelCase JSON)."""
        data = line_parts(record if isinstance(record, WireModel) else _dumps(record))
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        with self._lock:
            if self.closed:
                return
            self._pending.extend(data)
            if loop is None:
                self._flush_locked()
            elif not self._flush_scheduled:
                self._flush_scheduled = True
                loop.call_soon(self.flush)

    def flush(self) -> None:
        """Write out every record not written yet (the mode also calls this when it ends)."""
        with self._lock:
            self._flush_locked()

    def _flush_locked(self) -> None:
        self._flush_scheduled = False
        pending, self._pending = self._pending, []
        if not pending or self.closed:
            return
        try:
            write_parts(self._stream, pending)
        except (BrokenPipeError, ValueError):
            # The client went away; nothing more can be said to it.
            self.closed = True


async def read_lines(stream: BinaryIO, on_line: Callable[[str], None]) -> None:
    """Call ``on_line(record)`` for each record of ``stream`` (not read from before) until EOF.

    A pipe, socket or terminal is read on the event loop when it becomes readable, and each
    record is handed over at once: no thread hand-off (the reader thread waking, waking the
    loop, waiting for its answer) and no queue between reader and handler, which were most
    of a ``get_state`` round trip. What the loop cannot wait on (a regular file; an event
    loop without reader callbacks) is read by :func:`read_lines_in_thread`.
    """
    fd = _pollable_fd(stream)
    if fd is not None:
        try:
            await anyio.wait_readable(fd)
        except (NotImplementedError, OSError):
            fd = None
    if fd is None:
        send, receive = anyio.create_memory_object_stream[str](64)
        async with anyio.create_task_group() as tg, receive:
            tg.start_soon(read_lines_in_thread, stream, send)
            async for record in receive:
                on_line(record)
        return
    pending = b""
    while True:
        # The descriptor is readable: the read returns what is there without blocking.
        chunk = os.read(fd, _CHUNK)
        if not chunk:
            break
        pending += chunk
        if b"\n" in chunk:
            *lines, pending = pending.split(b"\n")
            for line in lines:
                on_line(decode_line(line))
        await anyio.wait_readable(fd)
    if pending:
        on_line(decode_line(pending))


_CHUNK = 1 << 16


def _pollable_fd(stream: BinaryIO) -> int | None:
    """``stream``'s descriptor when it is one an event loop can wait on (not a regular file)."""
    try:
        fd = stream.fileno()
        mode = os.fstat(fd).st_mode
    except (AttributeError, OSError, ValueError):
        return None
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode):
        return fd
    return None


async def read_lines_in_thread(stream: BinaryIO, send: ObjectSendStream[str]) -> None:
    """Feed ``send`` with the records of ``stream``, read by a daemon thread; close it at EOF.

    A daemon thread (not a worker thread) reads, so a process shutting down never waits
    on a ``read`` blocked on a client that keeps stdin open.
    """
    async with BlockingPortal() as portal, send:
        done = anyio.Event()

        async def finish() -> None:
            await send.aclose()
            done.set()

        def reader() -> None:
            try:
                while True:
                    raw = stream.readline()
                    if not raw:
                        break
                    portal.call(send.send, decode_line(raw))
            except Exception:  # portal stopped or stream closed: the mode is ending anyway
                pass
            finally:
                try:
                    portal.call(finish)
                except Exception:
                    pass

        threading.Thread(target=reader, name="pi-host-rpc-stdin", daemon=True).start()
        await done.wait()


NotifyLevel = Literal["info", "warning", "error"]


class RpcUI:
    """pi's extension UI context over RPC (implements :class:`pi_host.hookspecs.PluginUI`).

    Dialogs write an ``extension_ui_request`` and wait for the ``extension_ui_response``
    with the same ``id`` (see :meth:`resolve`); a ``timeout`` (seconds) resolves them with
    their default (``None`` / ``False``), and it is sent to the client in milliseconds as pi
    does. The other methods write a request and return.
    """

    def __init__(self, write: Callable[[Any], None], *, new_id: Callable[[], str] | None = None) -> None:
        self._write = write
        self._new_id = new_id or (lambda: str(uuid.uuid4()))
        self._pending: dict[str, tuple[anyio.Event, list[dict[str, Any]]]] = {}

    @property
    def pending_ids(self) -> list[str]:
        """Ids of dialogs still waiting for the client."""
        return list(self._pending)

    def resolve(self, response: dict[str, Any]) -> bool:
        """Deliver a client's ``extension_ui_response``; ``False`` when no dialog waits for its id."""
        entry = self._pending.pop(str(response.get("id")), None)
        if entry is None:
            return False
        event, slot = entry
        slot.append(response)
        event.set()
        return True

    def cancel_all(self) -> None:
        """Resolve every waiting dialog as cancelled (the client is gone)."""
        for request_id in list(self._pending):
            self.resolve({"id": request_id, "cancelled": True})

    async def _dialog(self, request: dict[str, Any], timeout: float | None) -> dict[str, Any] | None:
        request_id = self._new_id()
        event = anyio.Event()
        slot: list[dict[str, Any]] = []
        self._pending[request_id] = (event, slot)
        record: dict[str, Any] = {"type": "extension_ui_request", "id": request_id, **request}
        if timeout:
            record["timeout"] = round(timeout * 1000)
        try:
            self._write(record)
            with anyio.move_on_after(timeout if timeout else None):
                await event.wait()
        finally:
            self._pending.pop(request_id, None)
        return slot[0] if slot else None

    @staticmethod
    def _value(response: dict[str, Any] | None) -> str | None:
        if response is None or response.get("cancelled"):
            return None
        value = response.get("value")
        return value if isinstance(value, str) else None

    async def select(self, title: str, options: Sequence[str], *, timeout: float | None = None) -> str | None:
        return self._value(
            await self._dialog({"method": "select", "title": title, "options": list(options)}, timeout)
        )

    async def confirm(self, title: str, message: str, *, timeout: float | None = None) -> bool:
        response = await self._dialog({"method": "confirm", "title": title, "message": message}, timeout)
        if response is None or response.get("cancelled"):
            return False
        return response.get("confirmed") is True

    async def input(
        self, title: str, placeholder: str | None = None, *, timeout: float | None = None
    ) -> str | None:
        request: dict[str, Any] = {"method": "input", "title": title}
        if placeholder is not None:
            request["placeholder"] = placeholder
        return self._value(await self._dialog(request, timeout))

    async def editor(self, title: str, prefill: str | None = None) -> str | None:
        request: dict[str, Any] = {"method": "editor", "title": title}
        if prefill is not None:
            request["prefill"] = prefill
        return self._value(await self._dialog(request, None))

    def _fire(self, method: str, **fields: Any) -> None:
        record = {"type": "extension_ui_request", "id": self._new_id(), "method": method}
        record.update({key: value for key, value in fields.items() if value is not None})
        self._write(record)

    def notify(self, message: str, level: NotifyLevel = "info") -> None:
        self._fire("notify", message=message, notifyType=level)

    def set_status(self, key: str, text: str | None) -> None:
        self._fire("setStatus", statusKey=key, statusText=text)

    def set_widget(
        self,
        key: str,
        lines: Sequence[str] | None,
        *,
        placement: Literal["aboveEditor", "belowEditor"] | None = None,
    ) -> None:
        """``widgetPlacement`` is sent only when the plugin chose one, as pi sends it (the
        client's default is above the editor)."""
        self._fire(
            "setWidget",
            widgetKey=key,
            widgetLines=None if lines is None else [str(line) for line in lines],
            widgetPlacement=placement,
        )

    def set_working_message(self, message: str | None = None) -> None:
        """Not shown over RPC (pi: it needs the terminal UI's loader)."""

    def set_title(self, title: str) -> None:
        self._fire("setTitle", title=title)

    def set_editor_text(self, text: str) -> None:
        self._fire("set_editor_text", text=text)

    def paste_to_editor(self, text: str) -> None:
        """pi's RPC fallback: the same as :meth:`set_editor_text`."""
        self.set_editor_text(text)

    def get_editor_text(self) -> str:
        """Always ``""``: the client owns the editor and a synchronous call cannot ask it."""
        return ""
