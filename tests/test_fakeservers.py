"""The fake model servers themselves: options that tests and the benchmark rely on."""

from __future__ import annotations

import socket
import threading

import pytest

from tests.fakeservers import AnthropicServer, RecordedRequest, Reply


def _raw_body(server: AnthropicServer) -> bytes:
    """POST once over a plain socket and return everything after the response head."""
    host, port = server.url.removeprefix("http://").split(":")
    request = b"POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}"
    received = b""
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(request)
        while not received.endswith(b"0\r\n\r\n"):
            chunk = sock.recv(65536)
            assert chunk, "the server closed the connection before the end of the body"
            received += chunk
    return received.partition(b"\r\n\r\n")[2]


def _dechunk(body: bytes) -> bytes:
    data = b""
    while True:
        size_line, _, body = body.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            return data
        data, body = data + body[:size], body[size + 2 :]


def test_coalesced_reply_sends_the_same_bytes_in_fewer_chunks() -> None:
    step = {"reply": {"content": "x" * 300, "chunk_size": 1}}
    with AnthropicServer([step, {**step, "coalesce": 4096}]) as server:
        one_per_piece = _raw_body(server)
        coalesced = _raw_body(server)
    assert _dechunk(coalesced) == _dechunk(one_per_piece)
    # One HTTP chunk per SSE event without coalescing; a handful with it.
    assert one_per_piece.count(b"\r\nevent:") > 300
    assert coalesced.count(b"\r\nevent:") < 20


@pytest.mark.parametrize("conflict", [{"latency": 0.01}, {"split": 3}, {"drop_after": 2}])
def test_coalesce_refuses_options_that_need_one_write_per_piece(conflict: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="coalesce cannot be combined"):
        Reply(pieces=[b"a", b"b"], coalesce=1024, **conflict)  # type: ignore[arg-type]


def test_a_held_reply_waits_for_its_release_before_the_held_piece() -> None:
    release = threading.Event()
    with AnthropicServer(
        [Reply(pieces=[b"one", b"two", b"three"], hold_before=2, release=release)]
    ) as server:
        host, port = server.url.removeprefix("http://").split(":")
        request = b"POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}"
        with socket.create_connection((host, int(port))) as sock:
            sock.sendall(request)
            received = b""
            while b"two" not in received:
                chunk = sock.recv(65536)
                assert chunk, "the server closed the connection before the hold"
                received += chunk
            # Held: nothing follows (a loaded machine can only make this pass more easily).
            sock.settimeout(0.2)
            with pytest.raises(TimeoutError):
                sock.recv(65536)
            sock.settimeout(None)
            release.set()
            while not received.endswith(b"0\r\n\r\n"):
                chunk = sock.recv(65536)
                assert chunk, "the server closed the connection before the end of the body"
                received += chunk
    assert _dechunk(received.partition(b"\r\n\r\n")[2]) == b"onetwothree"


def test_hold_before_and_release_go_together() -> None:
    with pytest.raises(ValueError, match="hold_before and release go together"):
        Reply(pieces=[b"a"], hold_before=1)


def test_a_responder_answers_each_request_from_its_body() -> None:
    def respond(request: RecordedRequest) -> Reply:
        return Reply.text(200, "echo " + request.body.decode())

    with AnthropicServer(respond=respond) as server:
        host, port = server.url.removeprefix("http://").split(":")
        for body in (b"one", b"two"):
            head = b"POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-length: %d\r\n\r\n" % len(body)
            with socket.create_connection((host, int(port))) as sock:
                sock.sendall(head + body)
                received = b""
                while not received.endswith(b"echo " + body):
                    chunk = sock.recv(65536)
                    assert chunk, "the server closed the connection before the reply"
                    received += chunk
        assert [request.body for request in server.requests] == [b"one", b"two"]
