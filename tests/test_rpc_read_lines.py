"""RPC mode's command reader: pipes are read on the event loop, regular files by a thread."""

from __future__ import annotations

import os
import tempfile
import threading
from typing import Any

import anyio
import pytest

from pi_host.modes import _rpc_io
from pi_host.modes._rpc_io import read_lines


async def _collect(stream: Any) -> list[str]:
    records: list[str] = []
    await read_lines(stream, records.append)
    return records


def test_a_pipe_is_read_on_the_loop_whole_records_across_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_rpc_io, "read_lines_in_thread", None)  # the thread reader must not be used
    read_fd, write_fd = os.pipe()
    pieces = [b'{"type":"get_', b'state"}\n{"a":', b'"\xe2\x80\xa8"}\r\n', b"\n", b'{"last":true}']

    def writer() -> None:
        for piece in pieces:
            os.write(write_fd, piece)
        os.close(write_fd)

    async def main() -> list[str]:
        threading.Thread(target=writer).start()
        with os.fdopen(read_fd, "rb") as stream:
            return await _collect(stream)

    assert anyio.run(main) == ['{"type":"get_state"}', '{"a":"\u2028"}', "", '{"last":true}']


def test_a_regular_file_is_read_by_the_thread_reader() -> None:
    with tempfile.TemporaryFile() as file:
        file.write(b'{"type":"get_state"}\n{"type":"abort"}\n')
        file.seek(0)
        assert anyio.run(_collect, file) == ['{"type":"get_state"}', '{"type":"abort"}']
