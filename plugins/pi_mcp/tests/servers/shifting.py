"""An MCP server whose tools come from a JSON file, for pi-mcp's tool-list-change tests.

``python shifting.py TOOLS_FILE [--list-changed]``, over stdio, made with the SDK's low-level
``Server``. The file holds ``{"NAME": {"description": ..., "properties": {...}}, ...}`` and is
read on every ``tools/list``, so a test changes what a restarted server offers by writing it.
Besides those tools the server always has ``crash`` (exits mid-call) and ``announce`` (sends
``notifications/tools/list_changed``); ``--list-changed`` declares ``tools.listChanged``.
A call of a file tool answers ``NAME got ARGUMENTS``.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

import anyio
import mcp.types as mt
from mcp.server import NotificationOptions, Server
from mcp.server.stdio import stdio_server

FIXED = {
    "crash": {"description": "Exit the server process in the middle of the call.", "properties": {}},
    "announce": {"description": "Tell the client that the tool list changed.", "properties": {}},
}


def read_tools(path: Path) -> dict[str, Any]:
    tools: dict[str, Any] = json.loads(path.read_text())
    return {**tools, **FIXED}


def build(path: Path) -> Server[Any]:
    async def list_tools(ctx: Any, params: mt.PaginatedRequestParams | None) -> mt.ListToolsResult:
        return mt.ListToolsResult(
            tools=[
                mt.Tool(
                    name=name,
                    description=spec["description"],
                    input_schema={"type": "object", "properties": spec.get("properties", {})},
                )
                for name, spec in read_tools(path).items()
            ]
        )

    async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        if params.name == "crash":
            os._exit(3)
        if params.name == "announce":
            await ctx.session.send_tool_list_changed()
            return mt.CallToolResult(content=[mt.TextContent(text="announced")])
        if params.name not in read_tools(path):
            return mt.CallToolResult(content=[mt.TextContent(text=f"no tool {params.name}")], is_error=True)
        arguments = json.dumps(params.arguments or {}, sort_keys=True)
        return mt.CallToolResult(content=[mt.TextContent(text=f"{params.name} got {arguments}")])

    return Server("shifting", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve(path: Path, list_changed: bool) -> None:
    server = build(path)
    options = server.create_initialization_options(NotificationOptions(tools_changed=list_changed))
    async with stdio_server() as (read, write):
        await server.run(read, write, options)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("tools_file", type=Path)
    parser.add_argument("--list-changed", action="store_true")
    args = parser.parse_args()
    anyio.run(serve, args.tools_file, args.list_changed)


if __name__ == "__main__":
    main()
