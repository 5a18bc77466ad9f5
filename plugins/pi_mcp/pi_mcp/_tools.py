"""MCP tools as pi-host tools: names, schemas, results, truncation and abort."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
from pydantic import BaseModel, ConfigDict

from pi_host import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_LINES,
    AbortedError,
    AbortSignal,
    ImageContent,
    TextContent,
    Tool,
    ToolCallContext,
    ToolResult,
    format_size,
    truncate_head,
)

if TYPE_CHECKING:
    import mcp.types as mt

    from ._config import ServerConfig

__all__ = [
    "McpArguments",
    "convert_result",
    "estimate_schema_tokens",
    "is_offered",
    "race_abort",
    "tool_name",
]

_T = TypeVar("_T")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
# Providers accept tool names of at most 64 characters.
_MAX_NAME = 64


class McpArguments(BaseModel):
    """Whatever the model sends: the MCP server validates against its own schema."""

    model_config = ConfigDict(extra="allow")


def tool_name(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>`` (Claude Code's naming), made safe for every provider."""
    name = f"mcp__{_UNSAFE.sub('_', server)}__{_UNSAFE.sub('_', tool)}"
    return name[:_MAX_NAME]


def is_offered(config: ServerConfig, tool: str) -> bool:
    """Whether the server's allow and deny lists let the model see *tool*."""
    if config.allowed_tools is not None and not any(fnmatchcase(tool, p) for p in config.allowed_tools):
        return False
    return not any(fnmatchcase(tool, p) for p in config.disabled_tools)


def input_schema(tool: mt.Tool) -> dict[str, Any]:
    """The tool's JSON schema as sent to the model (an object schema, whatever the server sent)."""
    schema = dict(tool.input_schema or {})
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return schema


def estimate_schema_tokens(tools: list[Tool[Any]]) -> int:
    """What the tools' specs cost in the request: characters / 4, as pi estimates tokens."""
    chars = sum(len(json.dumps(tool.spec().model_dump(), separators=(",", ":"))) for tool in tools)
    return (chars + 3) // 4


async def race_abort(signal: AbortSignal | None, work: Callable[[], Awaitable[_T]]) -> _T:
    """Run *work*, cancelled (and :class:`AbortedError` raised) when *signal* aborts first."""
    if signal is None:
        return await work()
    if signal.aborted:
        raise AbortedError("Aborted")
    result: list[_T] = []
    failure: list[Exception] = []
    async with anyio.create_task_group() as group:

        async def watch() -> None:
            await signal.wait()
            group.cancel_scope.cancel()

        async def run() -> None:
            # Kept and raised after the group, so the caller sees the error itself, not a group.
            try:
                result.append(await work())
            except Exception as exc:
                failure.append(exc)
            finally:
                group.cancel_scope.cancel()

        group.start_soon(watch)
        group.start_soon(run)
    if failure:
        raise failure[0]
    if not result:
        raise AbortedError("Aborted")
    return result[0]


def convert_result(server: str, tool: str, result: mt.CallToolResult) -> ToolResult:
    """Text and images for the model; ``structuredContent`` and the cut kept in ``details``.

    :raises RuntimeError: the server reported the call as an error (the model reads the text).
    """
    import mcp.types as mt

    texts: list[str] = []
    images: list[ImageContent] = []
    for block in result.content:
        if isinstance(block, mt.TextContent):
            texts.append(block.text)
        elif isinstance(block, mt.ImageContent):
            images.append(ImageContent(data=block.data, mime_type=block.mime_type))
        elif isinstance(block, mt.EmbeddedResource):
            resource = block.resource
            if isinstance(resource, mt.TextResourceContents):
                texts.append(resource.text)
            else:
                texts.append(f"[binary resource {resource.uri} ({resource.mime_type or 'unknown type'})]")
        elif isinstance(block, mt.ResourceLink):
            texts.append(f"[resource {block.uri}: {block.name}]")
        elif isinstance(block, mt.AudioContent):
            texts.append(f"[audio ({block.mime_type}) not shown]")
    if not texts and not images and result.structured_content is not None:
        texts.append(json.dumps(result.structured_content, indent=2, ensure_ascii=False))
    text = "\n".join(texts)
    if result.is_error:
        raise RuntimeError(text or f'MCP tool "{tool}" of server "{server}" failed without a message')
    details: dict[str, Any] = {"server": server, "tool": tool}
    if result.structured_content is not None:
        details["structuredContent"] = result.structured_content
    cut = truncate_head(text, max_lines=DEFAULT_MAX_LINES, max_bytes=DEFAULT_MAX_BYTES)
    if cut.truncated:
        text = (
            f"{cut.content}\n\n[Output truncated: {cut.output_lines} of {cut.total_lines} lines "
            f"({format_size(cut.output_bytes)} of {format_size(cut.total_bytes)}) shown]"
        )
        details["truncation"] = {
            "truncated": True,
            "truncatedBy": cut.truncated_by,
            "totalLines": cut.total_lines,
            "totalBytes": cut.total_bytes,
            "outputLines": cut.output_lines,
            "outputBytes": cut.output_bytes,
        }
    content: list[TextContent | ImageContent] = []
    if text or not images:
        content.append(TextContent(text=text))
    content.extend(images)
    return ToolResult(content=content, details=details)


def make_tool(
    config: ServerConfig,
    tool: mt.Tool,
    call: Callable[[str, dict[str, Any], ToolCallContext], Awaitable[ToolResult]],
) -> Tool[McpArguments]:
    """The pi-host tool for one MCP tool; ``call`` does the request (see ``_plugin``)."""

    async def execute(params: McpArguments, ctx: ToolCallContext) -> ToolResult:
        return await call(tool.name, dict(params.model_extra or {}), ctx)

    description = tool.description or tool.title or f"{tool.name} (MCP server {config.name})"
    return Tool(
        name=tool_name(config.name, tool.name),
        description=description,
        parameters=McpArguments,
        parameters_schema=input_schema(tool),
        execute=execute,
        label=f"{config.name}: {tool.title or tool.name}",
    )
