"""The lean HTTP client: the same words as httpx for every failure, and where it applies.

The provider suites run every scenario through both clients; here each failure's exact text is
compared between them, since the retry classifier and the user both read it.
"""

from __future__ import annotations

import gzip
import shutil
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from pi_host.messages import AssistantMessage, DoneEvent, ErrorEvent, UserMessage
from pi_host.providers import AbortSignal, LlmContext, Model, StreamOptions, _http, _lean_http
from pi_host.providers._anthropic import TRANSPORT_ENV, stream
from pi_host.providers._lean_http import LEAN_HTTP_ENV, lean_transport_applies
from tests.fakeservers import AnthropicServer, Reply, anthropic_events, anthropic_reply

CLIENTS = ("lean", "httpx")


@pytest.fixture(autouse=True)
def anthropic_over_http(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TRANSPORT_ENV, "httpx")
    monkeypatch.delenv(LEAN_HTTP_ENV, raising=False)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[AnthropicServer]:
    with AnthropicServer() as running:
        yield running


def model(base_url: str) -> Model:
    return Model(id="m", api="anthropic-messages", provider="anthropic", base_url=base_url, max_tokens=100)


async def ask(base_url: str, **options: Any) -> AssistantMessage:
    context = LlmContext(messages=[UserMessage(content="Hi")])
    options.setdefault("api_key", "key")
    events = [event async for event in stream(model(base_url), context, StreamOptions(**options))]
    last = events[-1]
    assert isinstance(last, DoneEvent | ErrorEvent)
    return last.message if isinstance(last, DoneEvent) else last.error


async def through_each_client(
    monkeypatch: pytest.MonkeyPatch,
    base_url: str,
    reply: Reply | None,
    server: AnthropicServer | None,
    **options: Any,
) -> list[AssistantMessage]:
    messages = []
    for client in CLIENTS:
        if client == "httpx":
            monkeypatch.setenv(LEAN_HTTP_ENV, "0")
        if server is not None and reply is not None:
            server.enqueue(reply)
        messages.append(await ask(base_url, **options))
    monkeypatch.delenv(LEAN_HTTP_ENV)
    return messages


def error_texts(messages: list[AssistantMessage]) -> list[str | None]:
    return [message.error_message for message in messages]


# -- every failure worded as httpx words it ------------------------------------------------


async def test_connection_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with AnthropicServer() as closed:
        url = closed.base_url
    lean, httpx = error_texts(await through_each_client(monkeypatch, url, None, None))
    assert lean == httpx == "Connection error: All connection attempts failed"


async def test_connection_reset_mid_stream(server: AnthropicServer, monkeypatch: pytest.MonkeyPatch) -> None:
    reply = anthropic_reply("This answer will be cut off", chunk_size=4, drop_after=6)
    lean, httpx = await through_each_client(monkeypatch, server.base_url, reply, server)
    assert lean.error_message == httpx.error_message
    assert lean.error_message is not None
    assert lean.error_message.startswith("Connection lost while streaming the response")
    assert lean.content == httpx.content


async def test_body_timeout(server: AnthropicServer, monkeypatch: pytest.MonkeyPatch) -> None:
    pieces = anthropic_events([{"type": "text", "text": "one two"}], chunk_size=4)
    reply = Reply(pieces=pieces[:4], hang=True)
    lean, httpx = await through_each_client(monkeypatch, server.base_url, reply, server, timeout_s=0.3)
    assert lean.error_message == httpx.error_message == "Request timed out"


async def test_a_short_timeout_on_a_reused_connection(server: AnthropicServer) -> None:
    # The connection's read timer was armed for the first request's 600 s; the second must
    # still time out after its own 0.3 s.
    pieces = anthropic_events([{"type": "text", "text": "one two"}], chunk_size=4)
    server.enqueue(anthropic_reply("first"), Reply(pieces=pieces[:4], hang=True))
    assert (await ask(server.base_url)).stop_reason == "stop"
    with anyio.fail_after(5):
        message = await ask(server.base_url, timeout_s=0.3)
    assert message.error_message == "Request timed out"
    assert len(server.requests) == 2


async def test_timeout_before_the_response(monkeypatch: pytest.MonkeyPatch) -> None:
    # The fake server always sends its headers at once; this one never answers.
    with _SilentServer(answer=False) as silent:
        lean, httpx = error_texts(
            await through_each_client(monkeypatch, silent.base_url, None, None, timeout_s=0.3)
        )
    assert lean == httpx == "Request timed out"


async def test_server_hanging_up_without_a_response(monkeypatch: pytest.MonkeyPatch) -> None:
    with _SilentServer(answer=True) as hangs_up:
        lean, httpx = error_texts(await through_each_client(monkeypatch, hangs_up.base_url, None, None))
    assert lean == httpx
    assert (
        lean
        == "Connection lost while streaming the response: Server disconnected without sending a response."
    )


async def test_incomplete_chunked_body(monkeypatch: pytest.MonkeyPatch) -> None:
    pieces = anthropic_events([{"type": "text", "text": "cut"}], stop=False)
    with _SilentServer(answer=True, reply=b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces)) as cuts:
        lean, httpx = await through_each_client(monkeypatch, cuts.base_url, None, None)
    assert lean.error_message == httpx.error_message
    assert lean.error_message == (
        "Connection lost while streaming the response: peer closed connection without sending complete"
        " message body (incomplete chunked read)"
    )


@pytest.mark.parametrize(
    "headers", [{"x-custom": "caf\u00e9"}, {"x-bad\n": "v"}, {"x-split": "a\r\nb"}, {"x-pad": " v "}]
)
async def test_illegal_request_headers(
    server: AnthropicServer, monkeypatch: pytest.MonkeyPatch, headers: dict[str, str]
) -> None:
    texts = []
    for client in CLIENTS:
        if client == "httpx":
            monkeypatch.setenv(LEAN_HTTP_ENV, "0")
        server.enqueue(anthropic_reply("never"))
        context = LlmContext(messages=[UserMessage(content="Hi")])
        custom = model(server.base_url).model_copy(update={"headers": headers})
        events = [event async for event in stream(custom, context, StreamOptions(api_key="key"))]
        assert isinstance(events[-1], ErrorEvent)
        texts.append(events[-1].error.error_message)
    assert texts[0] == texts[1]


async def test_gzip_bodies_are_decoded(server: AnthropicServer, monkeypatch: pytest.MonkeyPatch) -> None:
    body = gzip.compress(b"".join(anthropic_events([{"type": "text", "text": "packed"}])))
    reply = Reply(pieces=[body[:10], body[10:]], headers={"content-encoding": "gzip"})
    lean, httpx = await through_each_client(monkeypatch, server.base_url, reply, server)
    assert lean.model_dump(exclude={"timestamp"}) == httpx.model_dump(exclude={"timestamp"})
    assert lean.stop_reason == "stop"


async def test_the_same_request_reaches_the_server(
    server: AnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    await through_each_client(monkeypatch, server.base_url, anthropic_reply("ok"), server)
    lean, httpx = server.requests
    assert lean.body == httpx.body
    assert lean.path == httpx.path == "/v1/messages"
    assert {k: v for k, v in lean.headers.items() if k != "accept-encoding"} == {
        k: v for k, v in httpx.headers.items() if k != "accept-encoding"
    }


async def test_a_large_request_goes_out_whole_a_slice_at_a_time(
    server: AnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A long resumed session makes a request of megabytes: it must arrive intact, without the
    # transport ever buffering (copying) more than a slice of it beyond asyncio's high-water mark.
    buffered: list[int] = []
    original = _lean_http._Connection.connection_made

    def connection_made(self: Any, transport: Any) -> None:
        original(self, transport)
        write = transport.write

        def recording_write(data: Any) -> None:
            write(data)
            buffered.append(transport.get_write_buffer_size())

        transport.write = recording_write

    monkeypatch.setattr(_lean_http._Connection, "connection_made", connection_made)
    prompt = "".join(f"line {n} of a long history\n" for n in range(300_000))  # ~8 MB
    server.enqueue(anthropic_reply("ok"))
    context = LlmContext(messages=[UserMessage(content=prompt)])
    events = [event async for event in stream(model(server.base_url), context, StreamOptions(api_key="key"))]
    assert isinstance(events[-1], DoneEvent)
    (request,) = server.requests
    assert request.json()["messages"][0]["content"][0]["text"] == prompt
    assert len(buffered) > 1 and max(buffered) <= _lean_http._WRITE_SLICE + 64 * 1024


async def test_a_small_request_goes_out_in_one_write(
    server: AnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Head and body in one send: two sends woke the server twice per request.
    writes: list[bytes] = []
    original = _lean_http._Connection.connection_made

    def connection_made(self: Any, transport: Any) -> None:
        original(self, transport)
        write = transport.write

        def recording_write(data: Any) -> None:
            writes.append(bytes(data))
            write(data)

        transport.write = recording_write

    monkeypatch.setattr(_lean_http._Connection, "connection_made", connection_made)
    server.enqueue(anthropic_reply("ok"))
    context = LlmContext(messages=[UserMessage(content="hi")])
    events = [event async for event in stream(model(server.base_url), context, StreamOptions(api_key="key"))]
    assert isinstance(events[-1], DoneEvent)
    (request,) = server.requests
    (sent,) = [data for data in writes if data]
    head, _, body = sent.partition(b"\r\n\r\n")
    assert head.startswith(b"POST /v1/messages HTTP/1.1\r\n")
    assert body == request.body
    assert request.json()["messages"][0]["content"][0]["text"] == "hi"


# -- abort -----------------------------------------------------------------------------------


async def test_a_watched_stream_forgets_its_signal_when_done(server: AnthropicServer) -> None:
    signal = AbortSignal()
    server.enqueue(anthropic_reply("one"), anthropic_reply("two"))
    for _ in range(2):
        assert (await ask(server.base_url, signal=signal)).stop_reason == "stop"
    assert signal._listeners == []


async def test_an_abort_ends_the_stream_before_reading_on(server: AnthropicServer) -> None:
    signal = AbortSignal()
    server.enqueue(anthropic_reply("a long answer " * 50, chunk_size=3))
    context = LlmContext(messages=[UserMessage(content="Hi")])
    events = []
    async for event in stream(model(server.base_url), context, StreamOptions(api_key="key", signal=signal)):
        events.append(event)
        if event.type == "text_delta":
            signal.abort()  # no await in between: the read that follows must not return data
    assert isinstance(events[-1], ErrorEvent)
    assert events[-1].reason == "aborted"
    assert events[-1].error.error_message == "Request was aborted"


async def test_a_slow_consumer_pauses_reading_and_still_gets_everything(
    server: AnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_lean_http, "_READ_HIGH_WATER", 1024)
    paused = []
    original = _lean_http._Connection.data_received

    def data_received(self: Any, data: bytes) -> None:
        original(self, data)
        paused.append(self._reading_paused)

    monkeypatch.setattr(_lean_http._Connection, "data_received", data_received)
    text = "".join(f"word{n} " for n in range(5000))
    server.enqueue(anthropic_reply(text, chunk_size=50))
    context = LlmContext(messages=[UserMessage(content="Hi")])
    last: Any = None
    async for event in stream(model(server.base_url), context, StreamOptions(api_key="key")):
        if event.type == "text_start":
            # Consume nothing until the server got ahead and the connection paused its reads:
            # a fixed pause may end first on a loaded machine.
            with anyio.fail_after(30):
                while not any(paused):
                    await anyio.sleep(0.01)
        last = event
    assert isinstance(last, DoneEvent)
    assert last.message.content[0].text == text  # type: ignore[union-attr]


# -- where it applies ------------------------------------------------------------------------


async def test_applies_to_plain_urls_on_asyncio() -> None:
    assert lean_transport_applies("http://127.0.0.1:8080/v1/messages")
    assert lean_transport_applies("https://api.anthropic.com/v1/messages")


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.com/v1",
        "http://user:secret@example.com/v1",
        "http://example.com/v1/caf\u00e9",
        "http://example.com/a b",
        "http://example.com:99999/v1",
    ],
)
async def test_other_urls_go_through_httpx(url: str) -> None:
    assert not lean_transport_applies(url)


@pytest.mark.parametrize("variable", ["HTTPS_PROXY", "http_proxy", "ALL_PROXY"])
async def test_a_proxy_in_the_environment_goes_through_httpx(
    variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(variable, "http://proxy.invalid:3128")
    assert not lean_transport_applies("https://api.anthropic.com/v1/messages")


async def test_the_switch_sends_everything_through_httpx(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LEAN_HTTP_ENV, "0")
    assert not lean_transport_applies("https://api.anthropic.com/v1/messages")


def test_outside_asyncio_httpx_serves() -> None:
    assert not lean_transport_applies("http://127.0.0.1:8080/v1/messages")


async def test_an_idle_connection_past_its_expiry_is_not_reused(
    server: AnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_lean_http, "_KEEPALIVE_EXPIRY_S", -1.0)
    server.enqueue(anthropic_reply("one"), anthropic_reply("two"))
    for _ in range(2):
        assert (await ask(server.base_url)).stop_reason == "stop"
    counts = server.requests
    assert len(counts) == 2
    (pool,) = [p for loop, p in _lean_http._pools.items() if loop is __import__("asyncio").get_running_loop()]
    assert sum(len(idle) for idle in pool._idle.values()) == 1


# -- TLS -------------------------------------------------------------------------------------


def test_the_tls_context_verifies_certificates() -> None:
    context = _http.tls_context()
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname


def test_the_tls_context_honours_ssl_cert_file(monkeypatch: pytest.MonkeyPatch) -> None:
    import certifi

    seen: dict[str, Any] = {}

    def create_default_context(**kwargs: Any) -> ssl.SSLContext:
        seen.update(kwargs)
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)

    monkeypatch.setattr(ssl, "create_default_context", create_default_context)
    monkeypatch.setenv("SSL_CERT_FILE", certifi.where())
    _http.tls_context.cache_clear()
    try:
        _http.tls_context()
    finally:
        _http.tls_context.cache_clear()
    assert seen == {"cafile": certifi.where()}


def test_a_plain_http_request_creates_no_tls_context_and_imports_no_httpx() -> None:
    code = (
        "import sys, anyio\n"
        "from tests.fakeservers import AnthropicServer, anthropic_reply\n"
        "from pi_host.providers import Model, LlmContext, StreamOptions, _http\n"
        "from pi_host.messages import UserMessage\n"
        "from pi_host.providers._anthropic import stream\n"
        "async def main():\n"
        "    with AnthropicServer([anthropic_reply('hi')]) as server:\n"
        "        model = Model(id='m', api='anthropic-messages', provider='anthropic',"
        " base_url=server.base_url)\n"
        "        events = [e async for e in stream(model, LlmContext(messages=[UserMessage(content='x')]),"
        " StreamOptions(api_key='k'))]\n"
        "        print(events[-1].type, _http.tls_context.cache_info().currsize,"
        " sorted(m for m in ('httpx', 'httpcore', 'certifi') if m in sys.modules))\n"
        "anyio.run(main)\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k not in (TRANSPORT_ENV, LEAN_HTTP_ENV)}
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert output.stdout.strip() == "done 0 []"


@pytest.fixture
def certificate(tmp_path: Any) -> Iterator[ssl.SSLContext]:
    """A server context with a self-signed certificate for localhost (its file is ``cert.pem``)."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command")
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
            "-keyout", str(tmp_path / "key.pem"), "-out", str(tmp_path / "cert.pem"),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    _http.tls_context.cache_clear()
    yield context
    _http.tls_context.cache_clear()


async def test_https_verifies_the_server_certificate(
    certificate: ssl.SSLContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    with _SilentServer(answer=True, reply=b"", tls=certificate) as untrusted:
        lean, httpx = error_texts(await through_each_client(monkeypatch, untrusted.base_url, None, None))
    assert lean == httpx
    assert lean is not None
    assert lean.startswith("Connection error: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")


async def test_https_with_a_trusted_certificate(
    certificate: ssl.SSLContext, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "cert.pem"))
    pieces = anthropic_events([{"type": "text", "text": "secure"}])
    body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"
    with _SilentServer(answer=True, reply=body, tls=certificate) as trusted:
        lean, httpx = await through_each_client(monkeypatch, trusted.base_url, None, None)
    assert lean.stop_reason == httpx.stop_reason == "stop"
    assert lean.content == httpx.content
    assert lean.content[0].text == "secure"  # type: ignore[union-attr]


# -- a server that answers nothing, or hangs up ----------------------------------------------


class _SilentServer:
    """Accepts one connection per request; reads the request; then hangs up or stays silent."""

    def __init__(
        self, *, answer: bool, reply: bytes | None = None, tls: ssl.SSLContext | None = None
    ) -> None:
        self._answer = answer
        self._reply = reply
        self._tls = tls
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self._stop = threading.Event()
        self._held: list[socket.socket] = []
        port = self._listener.getsockname()[1]
        # The test certificate names localhost.
        self.base_url = f"https://localhost:{port}" if tls is not None else f"http://127.0.0.1:{port}"
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> _SilentServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._listener.close()
        for held in self._held:
            held.close()
        self._thread.join(5)

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if self._tls is not None:
                try:
                    connection = self._tls.wrap_socket(connection, server_side=True)
                except OSError:  # the client refused the certificate
                    connection.close()
                    continue
            _read_request(connection)  # all of it: closing with unread bytes would send a reset
            if not self._answer:
                self._held.append(connection)
                continue
            if self._reply is not None:
                connection.sendall(_CHUNKED_HEAD + self._reply)
            connection.close()


_CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


def _read_request(connection: socket.socket) -> None:
    connection.settimeout(5)
    data = b""
    while b"\r\n\r\n" not in data:
        data += connection.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += connection.recv(65536)
