"""One MCP server's connection: start, list, call, notice a crash, restart, stop.

Each connection lives in a task of its own (the SDK's transports and ``ClientSession`` are
context managers that must be entered and left in the same task); callers reach the
session from any task. A server that dies, hangs at start-up or speaks garbage ends in the
``failed`` state with an error naming it and the remedy; the next use starts it again (at
once after a crash; after a failed start only once its backoff has passed). Every start lists
the tools anew, and so does a ``notifications/tools/list_changed`` from the running server;
each of ``tools_listeners`` hears of each new list.

A connection may serve several sessions of one event loop (a parent's and its sub-agents',
see ``McpManager``): any of them may start or restart it, and the one that created it
closes it (:meth:`close`), after which no use starts it again.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio
import httpx2
from mcp import ClientSession, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

if TYPE_CHECKING:
    import mcp.types as mt

    from ._config import ServerConfig

__all__ = ["McpServerError", "ServerConnection", "State"]

logger = logging.getLogger("pi_mcp")

State = Literal["stopped", "starting", "ready", "failed"]
_T = TypeVar("_T")
_STDERR_TAIL = 600
_GARBAGE_SHOWN = 120
#: The longest wait between two starts of a server that keeps failing to start.
MAX_RESTART_BACKOFF = 300.0

#: The connection whose task (and the transport tasks it spawns, which copy its context) runs.
_CURRENT: contextvars.ContextVar[ServerConnection | None] = contextvars.ContextVar(
    "pi_mcp_connection", default=None
)


class McpServerError(Exception):
    """A server could not do what was asked; the text names the server and the remedy."""


class ServerConnection:
    """The live connection to one configured server (see the module docs)."""

    def __init__(
        self,
        config: ServerConfig,
        *,
        cwd: str,
        startup_timeout: float,
        restart_backoff: float = 10.0,
        retry_hint: str | None = None,
    ) -> None:
        self.config = config
        #: How a failed start is tried again, when not in a session (``pi-host mcp list``).
        self.retry_hint = retry_hint
        self.cwd = cwd
        self.startup_timeout = startup_timeout
        #: After a failed start, how long a use waits before starting the server again;
        #: doubled after each further failed start, up to MAX_RESTART_BACKOFF.
        self.restart_backoff = restart_backoff
        #: Failed starts in a row, and the time.monotonic() before which none is tried again.
        self.failures = 0
        self.retry_at = 0.0
        self.state: State = "stopped"
        self.error: str | None = None
        self.tools: list[mt.Tool] = []
        self.prompts: list[mt.Prompt] = []
        self.has_resources = False
        self.starts = 0
        self.pid: int | None = None
        self._session: ClientSession | None = None
        self._task: asyncio.Task[None] | None = None
        self._stop: anyio.Event | None = None
        self._lock = anyio.Lock()
        self._stderr: Any = None
        #: The first message that was not JSON-RPC, as the user should see it.
        self._garbage: str | None = None
        #: Called with the connection after each listing of its tools: a start, or a change
        #: the server announced (each session's manager that uses it updates its tools).
        self.tools_listeners: list[Callable[[ServerConnection], None]] = []
        #: Set by :meth:`close`: its owner's session ended, and no use starts it again.
        self.closed = False
        #: Tool-list changes the server announced, and how many of them a listing has followed.
        self._announced = 0
        self._followed = 0
        self._change = anyio.Event()
        self._followed_event = anyio.Event()

    @property
    def name(self) -> str:
        return self.config.name

    # -- starting and stopping ------------------------------------------------------------------

    def may_start(self) -> bool:
        """Whether a use may start the server now: it is not ready and no backoff holds it."""
        return self.state != "ready" and (self.state != "failed" or time.monotonic() >= self.retry_at)

    def _backoff(self, failures: int) -> float:
        if failures < 1:
            return 0.0
        wait: float = self.restart_backoff * 2.0 ** (failures - 1)
        return min(wait, MAX_RESTART_BACKOFF)

    async def ensure_started(self, *, force: bool = False) -> ClientSession:
        """The ready session, starting (or restarting) the server first if needed.

        A server whose last start failed is started again only once its backoff has passed
        (so a broken server is not spawned for every call), or with ``force`` (``/mcp restart``).

        :raises McpServerError: it could not start, or its backoff holds; the text says which,
            names the server and the remedy. The server stays ``failed`` until the next try.
        """
        async with self._lock:
            if self.state == "ready" and self._session is not None:
                return self._session
            if self.closed:
                # A sub-agent's call after its parent's session ended: nobody would stop it.
                raise McpServerError(
                    f'MCP server "{self.name}" was stopped: the session that started it has ended'
                )
            wait = self.retry_at - time.monotonic()
            if self.state == "failed" and wait > 0 and not force:
                raise McpServerError(
                    f'MCP server "{self.name}" is not running: its last start failed, and pi-mcp '
                    f"starts it again on a use in {wait:.0f}s or later (mcp.restartBackoffMs), or "
                    f"now with /mcp restart {self.name}. The failure: {self.error}"
                )
            await self._teardown()
            self.state, self.error, self._garbage = "starting", None, None
            self.starts += 1
            ready = anyio.Event()
            self._stop = anyio.Event()
            self._task = asyncio.create_task(self._run(ready, self._stop), name=f"mcp server {self.name}")
            await ready.wait()
            if self._session is None:
                await self._teardown()
                self.state = "failed"
                self.failures += 1
                self.retry_at = time.monotonic() + self._backoff(self.failures)
                raise McpServerError(self.error or f'MCP server "{self.name}" did not start')
            self.state, self.failures, self.retry_at = "ready", 0, 0.0
            session = self._session
        self._tools_listed()
        return session

    def _tools_listed(self) -> None:
        for listener in tuple(self.tools_listeners):
            listener(self)

    async def stop(self) -> None:
        """Close the session and stop the server process (the SDK kills it if it lingers)."""
        async with self._lock:
            await self._teardown()
            if self.state != "failed":
                self.state = "stopped"

    async def close(self) -> None:
        """:meth:`stop` for good: a later use (a sub-agent's) is refused instead of starting it.

        Marked before the stop waits for the lock, so a start queued behind it cannot slip in.
        """
        self.closed = True
        await self.stop()

    async def _teardown(self) -> None:
        task, stop = self._task, self._stop
        self._task = self._stop = None
        self._session = None
        self._mark_followed(self._announced)  # nothing left to list: no waiter waits for it
        if task is None:
            return
        if stop is not None:
            stop.set()
        with anyio.CancelScope(shield=True), anyio.move_on_after(10), contextlib.suppress(BaseException):
            await task
        if not task.done():
            task.cancel()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        try:
            self._stderr.seek(0)
            text: str = self._stderr.read()
        except (OSError, ValueError):
            return ""
        text = text.strip()
        return text[-_STDERR_TAIL:] if text else ""

    def _retry_text(self) -> str:
        """When a failed start is tried again (before ``failures`` counts it)."""
        if self.retry_hint is not None:
            return self.retry_hint
        wait = self._backoff(self.failures + 1)
        later = f"on a use {wait:g}s or more from now" if wait else "on its next use"
        return f"pi-mcp starts it again {later}, /mcp restart {self.name} does now"

    def describe_failure(self, what: str, *, retry: str | None = None) -> str:
        """``MCP server "x" <what>`` plus what it printed and the remedy."""
        parts = [f'MCP server "{self.name}" {what}']
        if self._garbage and self.config.transport == "stdio":
            parts.append(
                f"it wrote a line that is not JSON-RPC on stdout ({self._garbage}); "
                "a stdio server must keep stdout for the protocol"
            )
        elif self._garbage:
            parts.append(f"it sent a message that is not JSON-RPC ({self._garbage})")
        tail = self._stderr_tail()
        if tail:
            parts.append(f"its stderr ends with: {tail}")
        if retry is None:
            retry = self._retry_text()
        if self.config.transport == "stdio":
            command = " ".join([self.config.command, *self.config.args])
            parts.append(f"check that `{command}` runs on its own and fix {self.config.source}; {retry}")
        else:
            parts.append(f"check that {self.config.url} is reachable and fix {self.config.source}; {retry}")
        return ". ".join(parts)

    def record_garbage(self, exc: BaseException | None) -> None:
        """Keep the first message the server sent that is not JSON-RPC, for the error text."""
        if self._garbage is None:
            self._garbage = _garbage_text(exc)

    async def _on_message(self, message: Any) -> None:
        # The session's copy of what the stdio reader already recorded through the SDK's log
        # (see _SdkLogCapture), and the only route for the other transports.
        if isinstance(message, Exception):
            self.record_garbage(message)
        elif getattr(message, "method", None) == "notifications/tools/list_changed":
            # Listed by _follow_changes: a request from inside the SDK's notification
            # handler would wait on the reader that runs it.
            self._announced += 1
            self._change.set()
        await anyio.lowlevel.checkpoint()

    @property
    def announces_changes(self) -> bool:
        """Whether the server declared ``tools.listChanged`` (it says when its tools change)."""
        capabilities = self._session.server_capabilities if self._session is not None else None
        return bool(capabilities and capabilities.tools and capabilities.tools.list_changed)

    def offers(self, tool: str) -> bool:
        """Whether the server's latest tool list has *tool*."""
        return any(t.name == tool for t in self.tools)

    async def _follow_changes(self, session: ClientSession) -> None:
        """List the tools again whenever the server announces a change, until the session ends."""
        while True:
            await self._change.wait()
            self._change = anyio.Event()
            target = self._announced
            try:
                with anyio.fail_after(self.startup_timeout):
                    await self._list(session)
            except Exception as exc:  # the old list stays; the next use or change tries again
                logger.warning("MCP server %s: listing its changed tools failed: %s", self.name, _reason(exc))
            else:
                self._tools_listed()
            finally:
                self._mark_followed(target)

    def _mark_followed(self, count: int) -> None:
        self._followed = max(self._followed, count)
        event, self._followed_event = self._followed_event, anyio.Event()
        event.set()

    async def settle_changes(self) -> None:
        """Wait until the tool-list changes announced so far are listed (or the server is gone).

        A call that makes the server change its tools announces it before answering: the
        model's next request should carry the new tools, not race the listing.
        """
        with anyio.move_on_after(self.startup_timeout):
            while self._followed < self._announced and self._session is not None:
                await self._followed_event.wait()

    def _transport(self) -> contextlib.AbstractAsyncContextManager[Any]:
        config = self.config
        if config.transport == "stdio":
            self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
            params = StdioServerParameters(
                command=config.command,
                args=list(config.args),
                env=dict(config.env) or None,
                cwd=config.cwd or self.cwd,
            )
            return stdio_client(params, errlog=self._stderr)
        if config.transport == "sse":
            return sse_client(config.url, headers=dict(config.headers))
        return _http_transport(config.url, dict(config.headers))

    async def _run(self, ready: anyio.Event, stop: anyio.Event) -> None:
        failure: str | None = None
        token = _CURRENT.set(self)
        _SDK_LOGS.attach()
        try:
            async with contextlib.AsyncExitStack() as stack:
                try:
                    # The transports are task groups: entered outside the timeout's cancel scope,
                    # which must close before them.
                    read, write = await stack.enter_async_context(self._transport())
                    session = await stack.enter_async_context(
                        ClientSession(read, write, message_handler=self._on_message)
                    )
                    with anyio.fail_after(self.startup_timeout):
                        await session.initialize()
                        await self._list(session)
                except TimeoutError:
                    limit = f"{self.startup_timeout:g}s (mcp.startupTimeoutMs)"
                    failure = f"did not finish starting within {limit}"
                except FileNotFoundError as exc:
                    failure = f"could not start: {exc.strerror or exc}: {exc.filename}"
                except Exception as exc:
                    failure = f"could not start: {_reason(exc)}"
                else:
                    self._session = session
                    ready.set()
                    async with anyio.create_task_group() as group:
                        group.start_soon(self._follow_changes, session)
                        await stop.wait()
                        group.cancel_scope.cancel()
        except Exception as exc:  # the transport failed while closing; the error is recorded
            if failure is None and self._session is None:
                failure = f"could not start: {_reason(exc)}"
            logger.debug("MCP server %s closed with %r", self.name, exc)
        finally:
            _SDK_LOGS.detach()
            _CURRENT.reset(token)
            # Described only now that the transport has stopped the server: its reader has
            # parsed what arrived until then (a garbage line that came after the start timeout
            # fired included) and its stderr is complete.
            if failure is not None:
                self.error = self.describe_failure(failure)
            ready.set()

    async def _list(self, session: ClientSession) -> None:
        capabilities = session.server_capabilities
        tools: list[mt.Tool] = []
        cursor: str | None = None
        while True:
            page = await session.list_tools(params=_page(cursor))
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        self.tools = tools
        self.prompts = []
        if capabilities is None or capabilities.prompts is not None:
            with contextlib.suppress(MCPError):
                self.prompts = list((await session.list_prompts()).prompts)
        self.has_resources = capabilities is None or capabilities.resources is not None

    # -- calling -----------------------------------------------------------------------------

    async def request(
        self,
        what: str,
        call: Callable[[ClientSession], Awaitable[_T]],
        *,
        timeout: float,
        timeout_source: str,
    ) -> _T:
        """Run one request on the session; a dead or hung server becomes an ``McpServerError``.

        A crash (the connection closed) marks the server failed, so the next use restarts it.
        A timeout cancels the request (the SDK tells the server) and leaves the server running.
        """
        session = await self.ensure_started()
        try:
            with anyio.fail_after(timeout):
                return await call(session)
        except TimeoutError:
            raise McpServerError(
                f'MCP server "{self.name}" did not answer {what} within {timeout:g}s; '
                f"raise the limit with {timeout_source.split(' ')[0]} if the tool is slow, "
                "or check the server"
            ) from None
        except MCPError as exc:
            if exc.code == -32000 and "closed" in exc.error.message.lower():
                async with self._lock:
                    await self._teardown()
                    self.state = "failed"
                    self.error = self.describe_failure(
                        f"closed the connection during {what} (it crashed or exited)",
                        retry="it is restarted on next use",
                    )
                raise McpServerError(self.error) from None
            raise McpServerError(
                f'MCP server "{self.name}" answered {what} with an error: {exc.error.message}'
            ) from None


def _page(cursor: str | None) -> Any:
    if cursor is None:
        return None
    import mcp.types as mt

    return mt.PaginatedRequestParams(cursor=cursor)


def _garbage_text(exc: BaseException | None) -> str:
    """What the server sent, quoted, when the parse error holds it; else the error's first line."""
    errors = getattr(exc, "errors", None)
    if callable(errors):  # pydantic's ValidationError: the SDK's parse failure
        with contextlib.suppress(Exception):
            first = errors()[0]
            sent = first.get("input")
            if isinstance(sent, str):
                shown = sent if len(sent) <= _GARBAGE_SHOWN else f"{sent[:_GARBAGE_SHOWN]}…"
                return f"{shown!r}: {first.get('msg', 'invalid')}"
            return str(first.get("msg", "invalid"))
    if exc is None:
        return "unreadable"
    text = str(exc)
    return text.splitlines()[0][:200] if text else type(exc).__name__


class _SdkLogCapture(logging.Filter):
    """The SDK's report of a stdout line that is not JSON-RPC becomes the connection's cause.

    The SDK's stdio reader logs such a line with ``logger.exception`` (a traceback on
    pi-host's stderr) from a task that copies the connection task's context, so
    ``_CURRENT`` names the server it came from. That connection records the line, at the
    moment it is parsed, and the record is dropped: the plugin's own error names the server
    and the remedy. Records of other MCP clients in the process pass through untouched. The
    filter sits on the ``mcp.client.stdio`` logger only while a connection runs.
    """

    LOGGER = "mcp.client.stdio"
    PARSE_FAILURE = "Failed to parse JSONRPC message"

    def __init__(self) -> None:
        super().__init__(name=self.LOGGER)
        self.users = 0

    def attach(self) -> None:
        if self.users == 0:
            logging.getLogger(self.LOGGER).addFilter(self)
        self.users += 1

    def detach(self) -> None:
        self.users -= 1
        if self.users == 0:
            logging.getLogger(self.LOGGER).removeFilter(self)

    def filter(self, record: logging.LogRecord) -> bool:
        connection = _CURRENT.get()
        if connection is None or not str(record.msg).startswith(self.PARSE_FAILURE):
            return True
        connection.record_garbage(record.exc_info[1] if record.exc_info else None)
        logger.debug("MCP server %s wrote a line that is not JSON-RPC on stdout", connection.name)
        return False


_SDK_LOGS = _SdkLogCapture()


def _reason(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        leaves = [leaf for leaf in exc.exceptions]
        if leaves:
            return _reason(leaves[0])
    if isinstance(exc, MCPError):
        return exc.error.message
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@contextlib.asynccontextmanager
async def _http_transport(url: str, headers: dict[str, str]) -> Any:
    # The SDK's own defaults: a long read timeout, since a response may be a held-open stream.
    timeout = httpx2.Timeout(30.0, read=300.0)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as client,
        streamable_http_client(url, http_client=client) as streams,
    ):
        yield streams
