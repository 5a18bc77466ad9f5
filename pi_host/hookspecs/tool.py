"""Tool hooks: one tool call, from the model's request to the result the model reads.

Per tool call of an assistant reply, after its ``pi_message_end``::

    pi_tool_execution_start      raw arguments, before lookup and validation
    pi_tool_call                 validated arguments; rewrite or block (not for unknown tools
                                 or invalid arguments, which fail before it)
    pi_tool_execution_update     zero or more partial results while the tool runs
    pi_tool_result               patch the result (not for blocked calls)
    pi_tool_execution_end        the final result
    pi_message_start/_end        the tool-result message

With parallel tool execution, calls are prepared one after another (``pi_tool_call`` is
never called concurrently), then run concurrently: ``pi_tool_execution_update``,
``pi_tool_result`` and ``pi_tool_execution_end`` of different calls may interleave.
"""

# mypy: disable-error-code="empty-body"

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._reducers import ToolCallReducer, ToolResultReducer
from ._results import ToolCallBlock, ToolCallRewrite, ToolResultPatch
from ._strategy import Strategy, hookspec

if TYPE_CHECKING:
    from pi_host.messages import ImageContent, TextContent, ToolResult

    from ._context import PluginContext

__all__ = [
    "pi_tool_call",
    "pi_tool_execution_end",
    "pi_tool_execution_start",
    "pi_tool_execution_update",
    "pi_tool_result",
]


@hookspec(strategy=Strategy.NOTIFY)
def pi_tool_execution_start(
    tool_call_id: str, tool_name: str, args: Mapping[str, Any], ctx: PluginContext
) -> None:
    """A tool call is about to be prepared.

    Fires once per tool call, after the reply's ``pi_message_end``, before the tool is looked
    up, its arguments validated and ``pi_tool_call`` asked.

    :param tool_call_id: the id the model gave the call.
    :param tool_name: the tool's name.
    :param args: the raw arguments from the model, not validated yet.
    :param ctx: the plugin context.

    **Combination:** notify — every implementation runs; return nothing.
    **On error:** reported and skipped.

    Example::

        from pi_host import hookimpl


        @hookimpl
        def pi_tool_execution_start(tool_name, ctx):
            ctx.ui.set_working_message(f"running {tool_name}")
    """


@hookspec(
    strategy=Strategy.VETO,
    returns=(ToolCallBlock, ToolCallRewrite),
    stop_on=ToolCallBlock,
    pipe="input",
    reducer=ToolCallReducer,
)
def pi_tool_call(
    tool_call_id: str, tool_name: str, input: Mapping[str, Any], ctx: PluginContext
) -> ToolCallBlock | ToolCallRewrite | None:
    """Allow, block or rewrite a tool call before the tool runs.

    Fires after ``pi_tool_execution_start`` once the arguments passed validation, before the
    tool executes (and before any ``pi_tool_execution_update``).

    :param tool_call_id: the id the model gave the call.
    :param tool_name: the tool's name.
    :param input: the validated arguments as a dict, as rewritten by earlier implementations.
    :param ctx: the plugin context.
    :returns: ``None`` to allow, :class:`ToolCallBlock` to refuse (the model receives the
        reason as an error result), or :class:`ToolCallRewrite` to run with other arguments.

    **Combination:** veto — implementations run in call order; the first
    :class:`ToolCallBlock` stops the chain and the tool does not run. A
    :class:`ToolCallRewrite` replaces ``input`` for every later implementation and for the
    tool itself. A guard that must see the arguments the tool will really get should be
    ``@hookimpl(trylast=True)``: it then runs after every rewrite.
    **On error:** fails closed — an implementation that raises or returns something else
    blocks the call, with a reason naming the plugin; the error is also reported.

    Example::

        from pi_host import hookimpl
        from pi_host.hookspecs import ToolCallBlock


        @hookimpl(trylast=True)
        def pi_tool_call(tool_name, input):
            if tool_name == "bash" and "rm -rf /" in input.get("command", ""):
                return ToolCallBlock(reason="refusing to delete the file system")
            return None
    """


@hookspec(strategy=Strategy.NOTIFY, bounded=False)
def pi_tool_execution_update(
    tool_call_id: str,
    tool_name: str,
    args: Mapping[str, Any],
    partial_result: ToolResult,
    ctx: PluginContext,
) -> None:
    """A running tool reported partial output (e.g. bash output so far).

    Fires between ``pi_tool_call`` and ``pi_tool_result``, whenever the tool calls
    ``ctx.update(...)``.

    :param tool_call_id: the id the model gave the call.
    :param tool_name: the tool's name.
    :param args: the raw arguments from the model.
    :param partial_result: the output so far.
    :param ctx: the plugin context.

    **Combination:** notify — every implementation runs; return nothing.
    **On error:** reported and skipped.

    Example::

        from pi_host import hookimpl


        @hookimpl
        def pi_tool_execution_update(tool_name, partial_result, ctx):
            lines = sum(block.text.count("\\n") for block in partial_result.content if block.type == "text")
            ctx.ui.set_status("tool", f"{tool_name}: {lines} lines")
    """


@hookspec(strategy=Strategy.PIPELINE, returns=ToolResultPatch, reducer=ToolResultReducer)
def pi_tool_result(
    tool_call_id: str,
    tool_name: str,
    input: Mapping[str, Any],
    content: Sequence[TextContent | ImageContent],
    details: Any,
    is_error: bool,
    ctx: PluginContext,
) -> ToolResultPatch | None:
    """Change a tool's result before the model sees it.

    Fires after the tool returned (or raised) and its last ``pi_tool_execution_update``,
    before ``pi_tool_execution_end``. Blocked calls, unknown tools and invalid arguments
    skip it.

    :param tool_call_id: the id the model gave the call.
    :param tool_name: the tool's name.
    :param input: the arguments the tool ran with.
    :param content: the result's content blocks (as patched by earlier implementations).
    :param details: the result's details (as patched by earlier implementations).
    :param is_error: whether the result is an error (as patched by earlier implementations).
    :param ctx: the plugin context.
    :returns: a :class:`ToolResultPatch` with the fields to replace, or ``None``.

    **Combination:** pipeline — every implementation runs; each patch applies on top of the
    previous ones and later implementations see the patched values.
    **On error:** reported and skipped.

    Example::

        from pi_host import TextContent, hookimpl
        from pi_host.hookspecs import ToolResultPatch


        @hookimpl
        def pi_tool_result(tool_name, content):
            if tool_name != "read":
                return None
            redacted = [
                TextContent(text=block.text.replace("PASSWORD=", "PASSWORD=***"))
                if block.type == "text"
                else block
                for block in content
            ]
            return ToolResultPatch(content=redacted)
    """


@hookspec(strategy=Strategy.NOTIFY)
def pi_tool_execution_end(
    tool_call_id: str, tool_name: str, result: ToolResult, is_error: bool, ctx: PluginContext
) -> None:
    """A tool call finished; ``result`` is what the model will read.

    Fires after ``pi_tool_result`` (or right after ``pi_tool_call`` for a blocked call, or
    ``pi_tool_execution_start`` for an unknown tool or invalid arguments), before the
    tool-result message's ``pi_message_start``.

    :param tool_call_id: the id the model gave the call.
    :param tool_name: the tool's name.
    :param result: the final result.
    :param is_error: whether the call failed or was blocked.
    :param ctx: the plugin context.

    **Combination:** notify — every implementation runs; return nothing.
    **On error:** reported and skipped.

    Example::

        from pi_host import hookimpl


        @hookimpl
        def pi_tool_execution_end(tool_name, is_error, ctx):
            if is_error:
                ctx.ui.notify(f"{tool_name} failed", "warning")
    """
