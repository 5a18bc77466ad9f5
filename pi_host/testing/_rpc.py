"""A client for ``pi-host --mode rpc`` in a subprocess: pi's JSON lines over stdin and stdout."""

from __future__ import annotations

import collections
import itertools
import json
import os
import queue
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any

__all__ = ["RpcClient", "RpcClientError"]

# One line of standard output: a ``response`` or an event.
_Record = dict[str, Any]

_DEFAULT_TIMEOUT = 60.0
# The most of standard error an error message quotes: its end, where the cause usually is.
_STDERR_SHOWN = 8000
_EOF = object()
_ids = itertools.count(1)


class RpcClientError(AssertionError):
    """The RPC-mode process did not answer as awaited: the wait timed out, the process
    closed its standard output or exited, or it wrote a line that is not a JSON object.

    An ``AssertionError``, so the test fails rather than errors. The message names what
    was awaited and quotes the last records and standard error.

    :ivar stderr: the process's standard error up to then.
    :ivar returncode: its exit status, or ``None`` while it runs.
    """

    def __init__(self, message: str, *, stderr: str, returncode: int | None) -> None:
        super().__init__(message)
        self.stderr = stderr
        self.returncode = returncode


def _matcher(match: str | Callable[[_Record], bool]) -> Callable[[_Record], bool]:
    if isinstance(match, str):
        return lambda record: record.get("type") == match
    return match


def _describe(match: str | Callable[[_Record], bool]) -> str:
    if isinstance(match, str):
        return f"a {match!r} record"
    return f"a record matching {getattr(match, '__qualname__', repr(match))}"


class RpcClient:
    """A running RPC-mode process, driven as pi's RPC clients drive it.

    Usually started by :meth:`CliRunner.rpc`, which passes ``--mode rpc`` and the runner's
    isolated environment. The process starts at once; use the client as a context manager
    (or call :meth:`close`) so it always ends::

        with run_cli.rpc("--provider", "faux", replies=["Hello"]) as client:
            assert client.call({"type": "prompt", "message": "hi"})["success"] is True
            end = client.wait_for("agent_end")
        assert client.returncode == 0

    Standard output is read by a thread into a queue and standard error by another, so a
    chatty process never blocks on a full pipe whatever the test waits for. Every record
    read is kept in :attr:`records`, in order.

    There are two ways to read, which do not interfere: :meth:`wait_for` reads records in
    order and skips (but keeps in :attr:`records`) those that do not match, like a cursor;
    :meth:`call` waits for the response with its command's ``id`` and leaves any events
    read on the way unread, for :meth:`wait_for`. Once the process has ended,
    :meth:`read_to_end` reads whatever it wrote that is still unread.

    :param argv: the command line, ``--mode rpc`` included.
    :param cwd: the working directory.
    :param env: the whole environment of the process.
    :param timeout: the default for each wait, in seconds, and for :meth:`close`.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path | str,
        env: Mapping[str, str],
        timeout: float = _DEFAULT_TIMEOUT,
    ) -> None:
        self.args = list(argv)
        self.cwd = Path(cwd)
        self.timeout = timeout
        #: Every record read so far, responses and events, in the order they were written.
        self.records: list[_Record] = []
        self._unread: collections.deque[_Record] = collections.deque()
        self._lines: queue.Queue[bytes | object] = queue.Queue()
        self._stdout_closed = False
        self._stderr_chunks: list[bytes] = []
        #: The :class:`subprocess.Popen` (to send it a signal, say).
        self.process: subprocess.Popen[bytes] = subprocess.Popen(
            self.args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=self.cwd,
            env=dict(env),
        )
        self._threads = [
            threading.Thread(target=self._read_stdout, name="pi-host-rpc-stdout", daemon=True),
            threading.Thread(target=self._read_stderr, name="pi-host-rpc-stderr", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    # -- the reader threads -------------------------------------------------------------------

    def _read_stdout(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        try:
            # LF alone ends a record: pi's framing (CR and U+2028 are not record breaks).
            for raw in iter(stream.readline, b""):
                self._lines.put(raw)
        except (OSError, ValueError):  # pragma: no cover - the pipe was closed under us
            pass
        self._lines.put(_EOF)

    def _read_stderr(self) -> None:
        stream = self.process.stderr
        assert stream is not None
        fd = stream.fileno()
        try:
            # Whatever is there, as soon as it is there: a wait that fails quotes it.
            for chunk in iter(lambda: os.read(fd, 65536), b""):
                self._stderr_chunks.append(chunk)
        except OSError:  # pragma: no cover - the pipe was closed under us
            pass

    # -- state ----------------------------------------------------------------------------------

    @property
    def events(self) -> list[_Record]:
        """The records read so far that are not responses, in order."""
        return [record for record in self.records if record.get("type") != "response"]

    @property
    def stderr(self) -> str:
        """Standard error so far: all of it once the process has exited and :meth:`close` ran."""
        return b"".join(self._stderr_chunks).decode("utf-8", errors="replace")

    @property
    def returncode(self) -> int | None:
        """The exit status, or ``None`` while the process runs."""
        return self.process.poll()

    # -- writing --------------------------------------------------------------------------------

    def send_raw(self, data: bytes) -> None:
        """Write ``data`` to standard input as it is (for framing tests: a bad line, CRLF).

        :raises RpcClientError: the process no longer reads its input.
        """
        stdin = self.process.stdin
        assert stdin is not None
        try:
            stdin.write(data)
            stdin.flush()
        except (BrokenPipeError, ValueError):
            raise self._ended("it read the next command") from None

    def send(self, command: Mapping[str, Any]) -> None:
        """Write ``command`` as one JSON line and return at once (no waiting for an answer).

        For what gets no response (``extension_ui_response``) or whose events matter more
        than its response; otherwise see :meth:`call`.
        """
        self.send_raw(json.dumps(dict(command)).encode() + b"\n")

    def call(self, command: Mapping[str, Any], *, timeout: float | None = None) -> _Record:
        """Send ``command`` and return its ``response`` record, matched by ``id``.

        A command without an ``id`` is given one (``"pi-host-testing-<n>"``). The response
        is returned whether it succeeded or not: check ``response["success"]``. Events read
        while waiting stay unread for :meth:`wait_for` (and are in :attr:`records`). pi
        answers an unknown command type without its ``id``: wait for that with
        ``wait_for("response")``.

        :param timeout: seconds to wait (the client's :attr:`timeout` by default).
        :raises RpcClientError: on timeout, or if the process ends first.
        """
        record = dict(command)
        request_id = record.setdefault("id", f"pi-host-testing-{next(_ids)}")
        self.send(record)

        def is_response(candidate: _Record) -> bool:
            return candidate.get("type") == "response" and candidate.get("id") == request_id

        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        what = f"the response to {record.get('type')!r} (id {request_id!r})"
        while True:
            candidate = self._read(deadline, what)
            if is_response(candidate):
                return candidate
            self._unread.append(candidate)

    # -- reading --------------------------------------------------------------------------------

    def wait_for(self, match: str | Callable[[_Record], bool], *, timeout: float | None = None) -> _Record:
        """Read records in order until one matches, and return it.

        Records before it are passed over (they stay in :attr:`records`); the next call
        goes on from the one after it.

        :param match: a record ``type`` (``"agent_end"``, ``"tool_execution_end"``,
            ``"extension_ui_request"``...) or a predicate on the record.
        :param timeout: seconds to wait (the client's :attr:`timeout` by default).
        :raises RpcClientError: on timeout, or if the process ends first.
        """
        predicate = _matcher(match)
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            record = self._unread.popleft() if self._unread else self._read(deadline, _describe(match))
            if predicate(record):
                return record

    def read_to_end(self, *, timeout: float | None = None) -> list[_Record]:
        """Read every record still to come, up to the end of standard output, and return them.

        Records :meth:`call` left unread come first; all of them are in :attr:`records` too.
        Standard output ends when the process exits, so this is for after :meth:`close` (or
        :meth:`wait`): everything the process wrote until it exited. Afterwards
        :meth:`wait_for` and :meth:`call` fail, as the output has ended.

        :param timeout: seconds to wait for the end (the client's :attr:`timeout` by default).
        :raises RpcClientError: on timeout (the process still writes, or still runs), or on a
            line that is not a JSON object.
        """
        rest = list(self._unread)
        self._unread.clear()
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while (record := self._next(deadline, "the end of standard output")) is not None:
            rest.append(record)
        return rest

    def _read(self, deadline: float, what: str) -> _Record:
        """The next record from the process, waiting until ``deadline``."""
        record = self._next(deadline, what)
        if record is None:
            raise self._ended(what)
        return record

    def _next(self, deadline: float, what: str) -> _Record | None:
        """The next record from the process, or ``None`` once standard output has ended."""
        if self._stdout_closed:
            return None
        try:
            raw = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise self._error(f"timed out waiting for {what}") from None
        if not isinstance(raw, bytes):
            self._stdout_closed = True
            return None
        try:
            record = json.loads(raw)
        except json.JSONDecodeError:
            record = None
        if not isinstance(record, dict):
            raise self._error(f"standard output has a line that is not a JSON object: {raw!r}")
        self.records.append(record)
        return record

    # -- ending ---------------------------------------------------------------------------------

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the process to exit by itself (stdin stays open) and return its status.

        :raises RpcClientError: it is still running after ``timeout`` seconds.
        """
        try:
            self.process.wait(self.timeout if timeout is None else timeout)
        except subprocess.TimeoutExpired:
            raise self._error("timed out waiting for the process to exit") from None
        self._collect()
        return self.process.returncode

    def close(self, timeout: float | None = None) -> int:
        """End the process as a client does: close standard input and wait for it to exit.

        A process still running after ``timeout`` seconds (the client's :attr:`timeout` by
        default) is killed. Then standard error is read to its end (see :attr:`stderr`).
        Calling it again does nothing more.

        :returns: the exit status (negative for a signal, as :attr:`subprocess.Popen.returncode`).
        """
        stdin = self.process.stdin
        if stdin is not None and not stdin.closed:
            try:
                stdin.close()
            except BrokenPipeError:
                pass
        try:
            self.process.wait(self.timeout if timeout is None else timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._collect()
        return self.process.returncode

    def _collect(self) -> None:
        """After exit: let the readers reach the end of their pipes, then close them.

        A child the process started may still hold a pipe open; its reader is then left
        running (a daemon thread) and its pipe open, rather than closed under it.
        """
        streams: list[IO[bytes] | None] = [self.process.stdout, self.process.stderr]
        for thread, stream in zip(self._threads, streams, strict=True):
            thread.join(timeout=5.0)
            if not thread.is_alive() and stream is not None and not stream.closed:
                stream.close()

    def __enter__(self) -> RpcClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- errors ---------------------------------------------------------------------------------

    def _ended(self, what: str) -> RpcClientError:
        """The error for a process that closed a pipe (so it is exiting) before ``what``."""
        try:
            self.process.wait(self.timeout)
        except subprocess.TimeoutExpired:
            return self._error(f"the process closed a pipe before {what}, and still runs")
        self._collect()
        return self._error(f"the process exited with status {self.process.returncode} before {what}")

    def _error(self, message: str) -> RpcClientError:
        stderr = self.stderr
        shown = stderr if len(stderr) <= _STDERR_SHOWN else "[...]\n" + stderr[-_STDERR_SHOWN:]
        recent = [str(record.get("type")) for record in self.records[-10:]]
        text = (
            f"{' '.join(self.args)}: {message}\n"
            f"--- last records read ({len(self.records)} in all) ---\n{', '.join(recent) or '(none)'}\n"
            f"--- stderr ---\n{shown or '(empty)'}"
        )
        return RpcClientError(text, stderr=stderr, returncode=self.process.poll())
