"""Tool middleware: a plugin wraps tools it does not own, around the call.

A sandbox, an audit log, an argument repairer and LSP feedback can all wrap ``bash`` at once,
while the name ``bash`` stays with the plugin that registered the tool. Middlewares are
registered with ``pi_register_tool_middleware`` and composed once per tool
(:func:`compose`); a tool that no middleware wraps runs exactly as before.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeAlias

from pydantic import BaseModel

from pi_host.messages import ToolResult

from ._tools import Tool, ToolCallContext

__all__ = ["ToolInvocation", "ToolMiddleware", "ToolMiddlewareError", "ToolNext", "compose"]

ToolNext: TypeAlias = Callable[..., Awaitable[ToolResult]]
"""``await call_next()`` runs the rest of the chain (the next middleware, at the end the tool)
with the arguments as they are; ``await call_next(params)`` with others: a parameters model,
or a mapping that is validated against the tool's parameters first."""


@dataclass(frozen=True)
class ToolInvocation:
    """One call of a wrapped tool, as a middleware sees it.

    :ivar tool: the tool being called (its ``name``, ``parameters`` …), unwrapped.
    :ivar params: the validated arguments, as the middlewares before this one left them.
    :ivar ctx: the call's context (``tool_call_id``, ``signal``, ``cwd``, ``session``).
    :ivar plugin: the plugin that registered the tool.
    """

    tool: Tool[Any]
    params: BaseModel
    ctx: ToolCallContext
    plugin: str = ""

    @property
    def tool_name(self) -> str:
        return self.tool.name


@dataclass(frozen=True)
class ToolMiddleware:
    """Wraps the execution of tools a plugin does not own.

    :ivar name: a name for messages and listings (``"audit-log"``).
    :ivar wrap: ``async def wrap(call: ToolInvocation, call_next: ToolNext) -> ToolResult``.
        Change the arguments (``await call_next(repaired)``), the result (edit what
        ``call_next`` returned), or the call itself (skip ``call_next`` and return a result of
        your own; raise to make the call fail with your message).
    :ivar tools: the tool names it wraps; ``None`` wraps every tool.
    """

    name: str
    wrap: Callable[[ToolInvocation, ToolNext], Awaitable[ToolResult]]
    tools: frozenset[str] | None = None

    def __post_init__(self) -> None:
        if self.tools is not None and not isinstance(self.tools, frozenset):
            tools: Any = self.tools
            names = (tools,) if isinstance(tools, str) else tuple(tools)
            object.__setattr__(self, "tools", frozenset(names))

    def applies_to(self, tool_name: str) -> bool:
        return self.tools is None or tool_name in self.tools


class ToolMiddlewareError(RuntimeError):
    """A middleware raised (not the tool inside it); the model reads which one failed."""


def compose(tool: Tool[Any], middlewares: Sequence[tuple[str, ToolMiddleware]], owner: str = "") -> Tool[Any]:
    """``tool`` with the middlewares that apply to it wrapped around its ``execute``.

    :param middlewares: ``(plugin, middleware)`` pairs, outermost first: the first sees the
        arguments first and the result last.
    :param owner: the plugin that registered ``tool``, for :attr:`ToolInvocation.plugin`.
    :returns: ``tool`` itself when none applies.
    """
    chain = [(plugin, middleware) for plugin, middleware in middlewares if middleware.applies_to(tool.name)]
    if not chain:
        return tool
    execute = tool.execute
    for plugin, middleware in reversed(chain):
        execute = _wrap(tool, owner, plugin, middleware, execute)
    return replace(tool, execute=execute)


def _wrap(
    tool: Tool[Any],
    owner: str,
    plugin: str,
    middleware: ToolMiddleware,
    inner: Callable[[Any, ToolCallContext], Awaitable[ToolResult]],
) -> Callable[[Any, ToolCallContext], Awaitable[ToolResult]]:
    async def execute(params: Any, ctx: ToolCallContext) -> ToolResult:
        inner_failed = False

        async def call_next(new_params: BaseModel | Mapping[str, Any] | None = None) -> ToolResult:
            nonlocal inner_failed
            chosen = params if new_params is None else new_params
            if not isinstance(chosen, BaseModel):
                chosen = tool.validate_arguments(chosen)
            try:
                return await inner(chosen, ctx)
            except Exception:
                inner_failed = True
                raise

        try:
            result = await middleware.wrap(ToolInvocation(tool, params, ctx, owner), call_next)
        except Exception as exc:
            if inner_failed:
                raise
            text = str(exc)
            reason = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
            raise ToolMiddlewareError(
                f'tool middleware "{middleware.name}" of plugin "{plugin}" failed: {reason}'
            ) from exc
        if not isinstance(result, ToolResult):
            raise ToolMiddlewareError(
                f'tool middleware "{middleware.name}" of plugin "{plugin}" returned '
                f"{type(result).__name__}; it must return a ToolResult"
            )
        return result

    return execute
