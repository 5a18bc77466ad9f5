"""A real MCP server for pi-mcp's tests, made with the SDK's MCPServer (FastMCP).

``python demo.py [--name NAME] [--tools N] [--garbage] [--grow] [--record FILE] [--http PORT | --sse PORT]``:
over stdio by default, or streamable HTTP (``/mcp``) or SSE (``/sse``) on 127.0.0.1:PORT.
``--tools N`` adds N generated tools ``t000``… (for the context-cost tests); ``--garbage``
prints a non-JSON line on stdout first (a server that prints nothing else is garbage.py);
``--grow`` adds the tool ``grow``, which adds the tool ``grown`` and sends
``notifications/tools/list_changed``; ``--record FILE`` appends the server's pid to FILE as it
starts (how many processes a test's sessions started).
"""

from __future__ import annotations

import argparse
import base64
import os
import sys
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from pydantic import BaseModel

# A 1x1 transparent PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


class Sum(BaseModel):
    total: int
    terms: list[int]


def build(name: str, extra_tools: int, grow: bool = False) -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer(name, log_level="CRITICAL")

    @server.tool(description="Repeat the text back.")
    def echo(text: str) -> str:
        return f"{name} says: {text}"

    @server.tool(description="Add two integers; the structured result carries both terms.")
    def add(a: int, b: int) -> Sum:
        return Sum(total=a + b, terms=[a, b])

    @server.tool(description="Return a tiny PNG image and a caption.", structured_output=False)
    def picture() -> list[Any]:
        return ["a one-pixel image", Image(data=PNG, format="png")]

    @server.tool(description="Fail with an error the model should read.")
    def fail(reason: str) -> str:
        raise ToolError(f"refused: {reason}")

    @server.tool(description="Crash the server process in the middle of the call.")
    def crash() -> str:
        os._exit(3)

    cancelled = [0]

    @server.tool(description="Never answer (until the call is cancelled or the process stopped).")
    async def hang(started_file: str = "") -> str:
        if started_file:  # tells a test that the call reached the server
            with open(started_file, "w") as handle:
                handle.write("started")
        try:
            await anyio.sleep(3600)
        except anyio.get_cancelled_exc_class():
            # The client's notifications/cancelled interrupted the call (the SDK's default).
            cancelled[0] += 1
            raise
        return "never"

    @server.tool(description="How many calls of hang were cancelled by the client so far.")
    def cancellations() -> str:
        return f"cancelled={cancelled[0]}"

    @server.tool(description="Print many lines.")
    def flood(lines: int) -> str:
        return "\n".join(f"line {i}" for i in range(lines))

    @server.tool(description="Report the server's environment variable VALUE and its pid.")
    def env() -> str:
        return f"VALUE={os.environ.get('VALUE', '')} pid={os.getpid()}"

    @server.tool(description="The value of the HTTP request header NAME the server received.")
    def header(name: str, ctx: Context) -> str:
        # None over stdio, which carries no headers.
        received = ctx.headers or {}
        return f"{name}={received.get(name, '<absent>')}"

    def make(tool_name: str) -> Any:
        def generated(query: str, limit: int = 10) -> str:
            return f"{name}/{tool_name}: {query} (limit {limit})"

        return generated

    for index in range(extra_tools):
        tool_name = f"t{index:03d}"
        server.add_tool(
            make(tool_name),
            name=tool_name,
            description=f"Generated tool {tool_name} of {name}: looks up widgets of kind {tool_name}.",
        )

    if grow:

        def grown() -> str:
            return f"{name} grew"

        @server.tool(description="Add the tool grown, and tell the client its tool list changed.")
        async def grow(ctx: Context) -> str:
            server.add_tool(grown, name="grown", description="The tool that grow added.")
            await ctx.session.send_tool_list_changed()
            return "grew"

    @server.prompt(description="Ask for a review of a file.")
    def review(path: str) -> str:
        return f"Please review {path} carefully."

    @server.resource("demo://readme", description="The demo readme.")
    def readme() -> str:
        return f"readme of {name}"

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="demo")
    parser.add_argument("--tools", type=int, default=0)
    parser.add_argument("--garbage", action="store_true", help="print a non-JSON line first")
    parser.add_argument("--grow", action="store_true", help="add the tool grow")
    parser.add_argument("--http", type=int, default=None)
    parser.add_argument("--sse", type=int, default=None)
    parser.add_argument("--record", default=None, help="append the pid to this file at start")
    args = parser.parse_args()
    if args.record:
        with open(args.record, "a") as handle:
            handle.write(f"{os.getpid()}\n")
    server = build(args.name, args.tools, args.grow)
    if args.garbage:
        sys.stdout.write("this is not JSON-RPC\n")
        sys.stdout.flush()
    if args.sse is not None:
        server.run("sse", host="127.0.0.1", port=args.sse)
    elif args.http is not None:
        server.run("streamable-http", host="127.0.0.1", port=args.http)
    else:
        server.run()


if __name__ == "__main__":
    main()
