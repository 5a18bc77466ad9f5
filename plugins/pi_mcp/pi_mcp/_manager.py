"""The session's MCP servers: start them, turn their tools into pi-host tools, report state.

One manager per session (kept in ``ctx.stash``). Servers start concurrently; one that fails
is reported and the others work. Below the search threshold every MCP tool is registered;
above it the model gets ``mcp_tool_search`` and a tool is registered when a search finds it.
A server's tool list is followed through the session (:meth:`McpManager.sync`): after each
restart, and when the server announces a change, new tools are registered, removed ones
unregistered and changed ones replaced, from the model's next request on.

A sub-agent's session (a child made with ``create_child_session``, in this process and event
loop) uses its parent's running servers instead of starting its own: its manager is built with
``parent`` (the parent session's manager, from ``ctx.parent_stash``) and borrows each parent
connection whose server it would start the same way (see :meth:`McpManager.shareable`). The
parent's manager owns a borrowed connection: only it stops the server (when its session
ends); a child's end, its ``/mcp restart``, never does. A shared server that crashed is
restarted by the next use of whichever session, and every session using it follows its new
tool list. Each session keeps its own tools (so a sub-agent's ``tools:`` allow-list and the
project's trust still decide what it gets), settings and reports.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any, Literal

import anyio

from pi_host import PluginEvent, Tool, ToolCallContext, ToolResult

from ._config import LoadedConfig, ServerConfig
from ._connection import McpServerError, ServerConnection
from ._settings import McpSettings, tool_timeout_seconds
from ._tools import McpArguments, convert_result, estimate_schema_tokens, is_offered, make_tool, race_abort

if TYPE_CHECKING:
    import mcp.types as mt

    from pi_host.hookspecs import PluginContext

__all__ = ["SEARCH_TOOL", "McpManager", "McpServerFailedEvent", "ServerSummary"]

SEARCH_TOOL = "mcp_tool_search"
RESOURCE_TOOL = "mcp_read_resource"


class McpServerFailedEvent(PluginEvent):
    """A configured MCP server could not start (JSON and RPC clients see ``mcp_server_failed``)."""

    type: Literal["mcp_server_failed"] = "mcp_server_failed"
    server: str
    error: str


@dataclass(frozen=True)
class ServerSummary:
    """One line of ``/mcp`` and ``pi-host mcp list``."""

    name: str
    transport: str
    state: str
    tools: int
    offered: int
    prompts: int
    schema_tokens: int
    error: str | None
    source: str


class _SearchParams(McpArguments):
    pass


@dataclass
class McpManager:
    """Every server of one session (see the module docs)."""

    config: LoadedConfig
    settings: McpSettings
    cwd: str
    connections: dict[str, ServerConnection] = field(default_factory=dict)
    #: Every offered MCP tool, by pi-host name, from the servers' latest tool lists.
    tools: dict[str, Tool[Any]] = field(default_factory=dict)
    #: pi-host name -> (server, the server's tool name), for every tool offered in the
    #: session (a removed one's too: its later call is told which server dropped it).
    origins: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: The tools registered in the session now (MCP tools and the helper tools), by name.
    registered: dict[str, Tool[Any]] = field(default_factory=dict)
    #: The prompts registered as slash commands.
    commands: set[str] = field(default_factory=set)
    #: The session's context once a prompt used the servers: a server's changed tool list
    #: (a restart, an announced change) updates the session's tools through it.
    ctx: PluginContext | None = None
    #: Server name -> the start (``ServerConnection.starts``) whose failure was reported.
    reported: dict[str, int] = field(default_factory=dict)
    #: The background start of ``"startup": "eager"``, until the first prompt waits for it.
    starting: asyncio.Task[None] | None = None
    #: How a failed start is tried again outside a session (``pi-host mcp list``); in a
    #: session, the error says when the next use tries and that ``/mcp restart`` does now.
    retry_hint: str | None = None
    _started: bool = False
    #: The parent session's manager, whose connections this one borrows where it can.
    parent: McpManager | None = field(default=None, repr=False)
    #: The servers whose connection is the parent's (it starts them once, stops them).
    borrowed: set[str] = field(default_factory=set)
    #: The event loop the manager was made in (a connection serves one loop only).
    loop: asyncio.AbstractEventLoop | None = field(default=None, repr=False)
    #: Inside start_all: the servers' listings wait for its end, so the search threshold is
    #: decided with every server's tools, not the first one's.
    _starting_all: int = 0

    def __post_init__(self) -> None:
        timeout = self.settings.startup_timeout_ms / 1000
        backoff = self.settings.restart_backoff_ms / 1000
        with contextlib.suppress(RuntimeError):  # made outside a loop: pi-host mcp list
            self.loop = asyncio.get_running_loop()
        for name, server in self.config.servers.items():
            connection = self.shareable(server)
            if connection is not None:
                self.borrowed.add(name)
                if self.parent is not None and name in self.parent.reported:
                    # The parent told the user of this failure already.
                    self.reported[name] = self.parent.reported[name]
            else:
                connection = ServerConnection(
                    server,
                    cwd=self.cwd,
                    startup_timeout=timeout,
                    restart_backoff=backoff,
                    retry_hint=self.retry_hint,
                )
            connection.tools_listeners.append(self._tools_listed)
            self.connections[name] = connection
        self._rebuild_tools()  # a borrowed server may be running, its tools listed

    def shareable(self, server: ServerConfig) -> ServerConnection | None:
        """The parent's connection to *server*, when this session may use it instead of its own.

        It may when the parent's manager runs in this event loop, has not stopped its servers,
        and starts this server the same way: the same definition (where it was read may
        differ), and for a stdio server the same working directory, since a server may work on
        the directory it runs in (a sub-agent in a worktree of its own starts its own servers).
        """
        parent = self.parent
        if parent is None or parent.loop is None or parent.loop is not self.loop:
            return None
        connection = parent.connections.get(server.name)
        if connection is None or connection.closed:
            return None
        if connection.config.model_dump(exclude={"source"}) != server.model_dump(exclude={"source"}):
            return None
        if server.transport == "stdio" and (server.cwd or connection.cwd) != (server.cwd or self.cwd):
            return None
        return connection

    def owned(self) -> list[ServerConnection]:
        """The connections this manager started and stops (not the borrowed ones)."""
        return [c for name, c in self.connections.items() if name not in self.borrowed]

    # -- starting ---------------------------------------------------------------------------

    def startable(self) -> list[ServerConnection]:
        """The servers a use may start now: not ready, and not held by a failed start's backoff."""
        return [c for c in self.connections.values() if c.may_start()]

    async def start_all(self, names: list[str] | None = None, *, force: bool = False) -> None:
        """Start the servers not yet ready (all, or ``names``), concurrently.

        Failures are recorded on the connections, not raised. A server whose failed start's
        backoff still holds is left alone unless ``force`` (``/mcp restart``).
        """

        async def start(connection: ServerConnection) -> None:
            try:
                await connection.ensure_started(force=force)
            except McpServerError:
                pass

        self._starting_all += 1
        try:
            async with anyio.create_task_group() as group:
                for name, connection in self.connections.items():
                    if names is not None and name not in names:
                        continue
                    if connection.state != "ready" and (force or connection.may_start()):
                        group.start_soon(start, connection)
        finally:
            self._starting_all -= 1
        self._started = True
        self._rebuild_tools()

    def start_in_background(self) -> None:
        """``"startup": "eager"``: start every server now; the first prompt waits for ``starting``."""
        self.starting = asyncio.create_task(self.start_all(), name="pi-mcp eager start")

    async def settle_background_start(self) -> None:
        """Wait for the background start, if any, whatever its outcome (before stopping)."""
        starting, self.starting = self.starting, None
        if starting is not None:
            await asyncio.gather(starting, return_exceptions=True)

    async def stop_all(self) -> None:
        """Stop every server this manager owns, for good; returns once their processes are gone.

        A borrowed server (the parent session's) goes on running: this manager stops
        following it.
        """
        for connection in self.connections.values():
            with contextlib.suppress(ValueError):
                connection.tools_listeners.remove(self._tools_listed)
        async with anyio.create_task_group() as group:
            for connection in self.owned():
                group.start_soon(connection.close)

    def _rebuild_tools(self) -> None:
        """``tools`` from the servers' latest lists; an unchanged tool keeps its object.

        A server that is down keeps the tools it last listed: a call of one restarts it.
        """
        tools: dict[str, Tool[Any]] = {}
        origins: dict[str, tuple[str, str]] = {}
        for connection in self.connections.values():
            for tool in connection.tools:
                if not is_offered(connection.config, tool.name):
                    continue
                built = make_tool(connection.config, tool, self._caller(connection))
                if built.name in tools:
                    continue
                origin = (connection.name, tool.name)
                old = self.tools.get(built.name)
                if old is not None and self.origins.get(built.name) == origin and old.spec() == built.spec():
                    built = old  # unchanged: the session keeps the object it has
                tools[built.name] = built
                origins[built.name] = origin
        self.tools = tools
        self.origins.update(origins)

    def _tools_listed(self, connection: ServerConnection) -> None:
        # A server listed its tools: a restart on a use, or a change it announced.
        self._rebuild_tools()
        if self._starting_all == 0 and self.ctx is not None:
            self.sync(self.ctx)

    def gone_reason(self, name: str) -> str | None:
        """Why the registered tool *name* is not offered any more (for the model's error)."""
        origin = self.origins.get(name)
        if origin is None:
            return None  # a helper tool: no server has it to lose
        server, tool = origin
        return (
            f'MCP server "{server}" no longer offers the tool "{tool}" (its tool list changed: '
            "it was restarted, or announced a change)"
        )

    def _wanted(self) -> dict[str, Tool[Any]]:
        """The tools the session should have now: ``tools_to_register`` and the searched-for ones."""
        wanted = {tool.name: tool for tool in self.tools_to_register()}
        if self.search_mode:
            for name in self.registered:
                if name in self.tools:
                    wanted.setdefault(name, self.tools[name])
        return wanted

    def sync(self, ctx: PluginContext) -> None:
        """Make the session's tools what the servers offer now; effective from the next request.

        A new tool is registered (in search mode: found by the search), a removed one
        unregistered with the reason a later call of it gets, and one whose schema or
        description changed replaced by its new definition (staying inactive if it was).
        """
        wanted = self._wanted()
        for name, tool in list(self.registered.items()):
            new = wanted.get(name)
            if new is None:
                ctx.unregister_tool(name, reason=self.gone_reason(name))
                del self.registered[name]
            elif new is not tool and new.spec() != tool.spec():
                active = name in ctx.get_active_tools()
                ctx.unregister_tool(name)
                ctx.register_tool(new)
                self.registered[name] = new
                if not active:
                    ctx.set_active_tools([n for n in ctx.get_active_tools() if n != name])
        for name, tool in wanted.items():
            if name not in self.registered:
                ctx.register_tool(tool)
                self.registered[name] = tool

    def unregister_all(self, ctx: PluginContext) -> None:
        """Take every tool back from the session (it ends: the servers stop)."""
        for name in list(self.registered):
            ctx.unregister_tool(name)
        self.registered.clear()

    @property
    def search_mode(self) -> bool:
        """Whether the model gets the search tool instead of every schema."""
        return len(self.tools) > self.settings.tool_search_threshold

    def tools_to_register(self) -> list[Tool[Any]]:
        """The tools the model sees now: all of them, or the search tool (and what it found)."""
        extra: list[Tool[Any]] = []
        if any(c.has_resources and c.state == "ready" for c in self.connections.values()):
            extra.append(self._resource_tool())
        if self.search_mode:
            return [self._search_tool(), *extra]
        return [*self.tools.values(), *extra]

    def report_failures(self, ctx: PluginContext) -> None:
        """Name each server that could not start: on stderr in print mode, as an event otherwise."""
        for connection in self.connections.values():
            if connection.state != "failed" or self.reported.get(connection.name) == connection.starts:
                continue
            self.reported[connection.name] = connection.starts
            error = connection.error or "failed"
            if ctx.mode == "print":
                print(f"pi-mcp: {error}", file=sys.stderr, flush=True)
            elif ctx.mode in ("json", "rpc"):
                ctx.emit(McpServerFailedEvent(server=connection.name, error=error))
            else:
                ctx.ui.notify(f"pi-mcp: {error}", "warning")

    # -- calling ----------------------------------------------------------------------------

    def _caller(self, connection: ServerConnection) -> Any:
        async def call(tool: str, arguments: dict[str, Any], ctx: ToolCallContext) -> ToolResult:
            timeout, source = tool_timeout_seconds(self.settings)

            async def work() -> mt.CallToolResult:
                await connection.ensure_started()  # a restart lists the tools again
                if not connection.offers(tool):
                    # The request that made this call still had the tool; the next one does not.
                    raise McpServerError(
                        f'MCP server "{connection.name}" no longer offers the tool "{tool}": its '
                        "tool list changed (it was restarted, or announced a change), and the tool "
                        "is gone from your tools"
                    )
                result = await connection.request(
                    f'the call of tool "{tool}"',
                    lambda session: session.call_tool(tool, arguments),
                    timeout=timeout,
                    timeout_source=source,
                )
                await connection.settle_changes()
                return result

            result = await race_abort(ctx.signal, work)
            return convert_result(connection.name, tool, result)

        return call

    # -- the search tool --------------------------------------------------------------------

    def search(self, query: str, limit: int) -> list[Tool[Any]]:
        """The tools best matching *query*: every word scored in the name and description."""
        words = [w for w in query.lower().replace("__", " ").split() if w]
        scored: list[tuple[int, str, Tool[Any]]] = []
        for name, tool in self.tools.items():
            haystack_name = name.lower()
            haystack = f"{haystack_name} {tool.description.lower()}"
            if any(c in query for c in "*?") and fnmatchcase(name, query.strip()):
                scored.append((100, name, tool))
                continue
            score = sum(3 if w in haystack_name else 1 for w in words if w in haystack)
            if score:
                scored.append((score, name, tool))
        scored.sort(key=lambda item: (-item[0], item[1]))
        return [tool for _, _, tool in scored[:limit]]

    def _search_tool(self) -> Tool[Any]:
        servers = ", ".join(sorted(c.name for c in self.connections.values() if c.state == "ready"))

        async def execute(params: McpArguments, ctx: ToolCallContext) -> ToolResult:
            extra = params.model_extra or {}
            query = extra.get("query")
            if not isinstance(query, str) or not query.strip():
                raise ValueError(
                    'mcp_tool_search needs "query": words from the tool you need, or a name pattern'
                )
            limit = extra.get("limit", 5)
            limit = limit if isinstance(limit, int) and 0 < limit <= 20 else 5
            session = ctx.session
            if self.startable():
                # A use of the search is a use of every server not running: one that failed
                # to start (its backoff passed) or crashed may have tools to find now.
                await race_abort(ctx.signal, self.start_all)
                if session is not None:
                    self.sync(session)
            found = self.search(query, limit)
            if not found:
                message = f"No MCP tool matches {query!r}; try other words (servers: {servers})"
                down = [c for c in self.connections.values() if c.state == "failed"]
                if down:
                    message += ". Not running, so not searched: " + "; ".join(
                        c.error or f'MCP server "{c.name}" failed' for c in down
                    )
                raise ValueError(message)
            for tool in found:
                if tool.name not in self.registered and session is not None:
                    session.register_tool(tool)
                    self.registered[tool.name] = tool
            lines = [f"Loaded {len(found)} tool(s); call them by name from your next message:"]
            for tool in found:
                lines.append(
                    f"- {tool.name}: {tool.description}\n  parameters: {json.dumps(tool.spec().parameters)}"
                )
            return ToolResult.text("\n".join(lines), details={"loaded": [t.name for t in found]})

        return Tool(
            name=SEARCH_TOOL,
            description=(
                f"Find tools of the connected MCP servers ({servers}; {len(self.tools)} tools) by words or a "
                "name pattern like mcp__server__*. The tools found become callable from the next message."
            ),
            parameters=_SearchParams,
            parameters_schema={
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "description": "Words describing the tool, or a name pattern",
                    },
                    "limit": {"type": "integer", "description": "At most this many tools (default 5)"},
                },
                "required": ["query"],
            },
            execute=execute,
            label="MCP tool search",
        )

    # -- resources --------------------------------------------------------------------------

    def _resource_tool(self) -> Tool[Any]:
        servers = sorted(c.name for c in self.connections.values() if c.has_resources)

        async def execute(params: McpArguments, ctx: ToolCallContext) -> ToolResult:
            extra = params.model_extra or {}
            server = extra.get("server")
            connection = self.connections.get(server) if isinstance(server, str) else None
            if connection is None:
                raise ValueError(f'"server" must be one of: {", ".join(servers)}')
            uri = extra.get("uri")
            timeout, source = tool_timeout_seconds(self.settings)
            if not isinstance(uri, str) or not uri:

                async def listing() -> Any:
                    return await connection.request(
                        "the resource listing",
                        lambda s: s.list_resources(),
                        timeout=timeout,
                        timeout_source=source,
                    )

                found = await race_abort(ctx.signal, listing)
                lines = [f"{r.uri} — {r.name}: {r.description or ''}".rstrip(": ") for r in found.resources]
                return ToolResult.text("\n".join(lines) or f'Server "{server}" lists no resources.')

            async def read() -> Any:
                return await connection.request(
                    f"the read of {uri}",
                    lambda s: s.read_resource(uri),
                    timeout=timeout,
                    timeout_source=source,
                )

            import mcp.types as mt

            result = await race_abort(ctx.signal, read)
            texts = [
                c.text
                if isinstance(c, mt.TextResourceContents)
                else f"[binary {c.uri} ({c.mime_type or '?'})]"
                for c in result.contents
            ]
            return convert_result(
                connection.name, uri, mt.CallToolResult(content=[mt.TextContent(text="\n".join(texts))])
            )

        return Tool(
            name=RESOURCE_TOOL,
            description=(
                f"Read a resource of an MCP server ({', '.join(servers)}) by URI; without a URI, list them."
            ),
            parameters=_SearchParams,
            parameters_schema={
                "type": "object",
                "properties": {
                    "server": {"type": "string", "enum": servers},
                    "uri": {"type": "string", "description": "The resource's URI; leave out to list"},
                },
                "required": ["server"],
            },
            execute=execute,
            label="MCP resource",
        )

    # -- reporting --------------------------------------------------------------------------

    def summaries(self) -> list[ServerSummary]:
        """State, tool counts, schema cost and error of every server."""
        out = []
        for name, connection in self.connections.items():
            offered = [t for t in self.tools.values() if t.label.startswith(f"{name}: ")]
            out.append(
                ServerSummary(
                    name=name,
                    transport=connection.config.transport,
                    state=connection.state,
                    tools=len(connection.tools),
                    offered=len(offered),
                    prompts=len(connection.prompts),
                    schema_tokens=estimate_schema_tokens(offered),
                    error=connection.error,
                    source=connection.config.source,
                )
            )
        return out

    def report(self) -> str:
        """The ``/mcp`` text."""
        lines = []
        for problem in self.config.problems:
            lines.append(f"config error: {problem}")
        for path in self.config.untrusted_files:
            lines.append(f"ignored {path}: the project is not trusted (trust it with /trust or --approve)")
        if not self.connections:
            lines.append("No MCP servers configured (add them to .mcp.json or <agent dir>/mcp.json).")
        for s in self.summaries():
            shared = ", the parent session's" if s.name in self.borrowed else ""
            lines.append(
                f"{s.name} ({s.transport}): {s.state}{shared}, {s.offered}/{s.tools} tools offered, "
                f"{s.prompts} prompts, ~{s.schema_tokens} tokens of schemas"
            )
            if s.error:
                lines.append(f"  error: {s.error}")
        all_tokens = estimate_schema_tokens(list(self.tools.values()))
        sent = self.tools_to_register()
        if self.tools:
            mode = (
                "the search tool instead (schemas load on first use)" if self.search_mode else "every schema"
            )
            helpers = [t.name for t in sent if not t.name.startswith("mcp__")]
            extra = f"; with {', '.join(helpers)}" if helpers else ""
            lines.append(
                f"MCP tool schemas: ~{all_tokens} tokens; sent to the model: "
                f"~{estimate_schema_tokens(sent)} tokens ({mode}{extra})"
            )
        return "\n".join(lines)


def server_of(config: ServerConfig) -> str:
    return config.name
