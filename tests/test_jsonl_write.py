"""JSON and RPC modes' line writer: one flushed line per record, in order, however written."""

from __future__ import annotations

import io
import os

import pytest

from pi_host.messages import (
    AssistantMessage,
    MessageUpdateEvent,
    TextContent,
    TextDeltaEvent,
    TurnStartEvent,
    WireModel,
)
from pi_host.modes import _jsonl
from pi_host.modes._jsonl import write_line


def _update(text: str) -> MessageUpdateEvent:
    message = AssistantMessage(content=[TextContent(text=text)], timestamp=1)
    return MessageUpdateEvent.of(message, TextDeltaEvent(content_index=0, delta=text[-1:], partial=message))


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


def test_lines_reach_a_pipe_whole_and_in_order_after_buffered_bytes() -> None:
    read_fd, write_fd = os.pipe()
    stream = os.fdopen(write_fd, "wb")
    stream.write(b"buffered first\n")  # still in the stream's buffer
    update = _update("héllo")
    write_line(stream, update)
    write_line(stream, TurnStartEvent())
    write_line(stream, b'{"type":"response"}')
    stream.close()
    expected = (
        b"".join(
            [b"buffered first\n", WireModel.to_json(update).encode() + b"\n", b'{"type":"turn_start"}\n']
        )
        + b'{"type":"response"}\n'
    )
    assert _read_all(read_fd) == expected
    os.close(read_fd)


def test_a_stream_without_a_file_descriptor_gets_the_same_bytes() -> None:
    stream = io.BytesIO()
    update = _update("x" * 100)
    write_line(stream, update)
    assert stream.getvalue() == WireModel.to_json(update).encode() + b"\n"


def test_a_write_cut_short_is_completed(monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.writev
    calls = []

    def short_writev(fd: int, parts: list[bytes]) -> int:
        calls.append(fd)
        data = b"".join(parts)
        return real(fd, [data[:7]])  # as if a signal interrupted the write after 7 bytes

    monkeypatch.setattr(_jsonl, "_writev", short_writev)
    read_fd, write_fd = os.pipe()
    stream = os.fdopen(write_fd, "wb")
    update = _update("y" * 5000)
    write_line(stream, update)
    stream.close()
    assert calls
    assert _read_all(read_fd) == WireModel.to_json(update).encode() + b"\n"
    os.close(read_fd)


def test_rpc_writer_sends_a_burst_in_one_write_before_the_loop_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    import anyio

    from pi_host.modes._rpc_io import JsonlWriter

    real = os.writev
    calls: list[int] = []

    def counting_writev(fd: int, parts: list[bytes]) -> int:
        calls.append(len(parts))
        return real(fd, parts)

    monkeypatch.setattr(_jsonl, "_writev", counting_writev)
    read_fd, write_fd = os.pipe()
    stream = os.fdopen(write_fd, "wb")
    writer = JsonlWriter(stream)
    update = _update("z" * 100)

    async def main() -> bytes:
        writer.write(update)
        writer.write(TurnStartEvent())
        writer.write({"type": "response", "success": True})
        assert calls == []  # nothing written during the step that wrote the records ...
        await anyio.sleep(0)  # ... and all of it once the step ends, before any wait
        assert len(calls) == 1
        return os.read(read_fd, 1 << 16)

    got = anyio.run(main)
    assert got == (
        WireModel.to_json(update).encode() + b'\n{"type":"turn_start"}\n{"type":"response","success":true}\n'
    )
    writer.write(TurnStartEvent())  # no loop running: written through at once
    assert os.read(read_fd, 1 << 16) == b'{"type":"turn_start"}\n'
    stream.close()
    os.close(read_fd)
