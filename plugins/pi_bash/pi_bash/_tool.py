"""The ``bash`` tool: pi's name, parameters, texts and truncation, over the group runner."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeAlias

import anyio
from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.json_schema import SkipJsonSchema

from pi_host import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_LINES,
    TextContent,
    Tool,
    ToolCallContext,
    ToolResult,
    format_size,
)

from ._output import OutputAccumulator, OutputSnapshot
from ._process import (
    DEFAULT_KILL_GRACE,
    BackgroundPolicy,
    BashError,
    build_env,
    run_shell_command,
)

__all__ = [
    "BASH_DESCRIPTION",
    "BASH_PROMPT_SNIPPET",
    "DEFAULT_TIMEOUT",
    "UPDATE_INTERVAL",
    "BashParams",
    "create_bash_tool",
]

DEFAULT_TIMEOUT = 120.0
"""Seconds a tool call may run when the model gives no ``timeout``.

pi has no default (pi#9460: a hung command wedges the session). Two minutes is Claude Code's
default too; a model that knows a command is slow passes a larger ``timeout``.
"""

UPDATE_INTERVAL = 0.1
"""Partial output is reported at most this often (seconds), as pi throttles it."""

BASH_DESCRIPTION = (
    "Execute a bash command in the current working directory. Returns stdout and stderr. "
    f"Output is truncated to last {DEFAULT_MAX_LINES} lines or {DEFAULT_MAX_BYTES // 1024}KB "
    "(whichever is hit first). If truncated, full output is saved to a temp file. "
    "Optionally provide a timeout in seconds."
)
BASH_PROMPT_SNIPPET = "Execute bash commands (ls, grep, find, etc.)"

_PI_TIMEOUT_DESCRIPTION = "Timeout in seconds (optional, no default timeout)"


def _drop_null_default(schema: dict[str, Any]) -> None:
    # An optional parameter is simply absent from "required", as in pi's schema.
    schema.pop("default", None)


# Optional in the schema without an "or null" branch: pi's parameter is a plain number.
_Seconds: TypeAlias = float | SkipJsonSchema[None]


def _pi_schema(schema: dict[str, Any]) -> None:
    # The schema pi sends: no docstring description, no generated titles.
    schema.pop("description", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)


class BashParams(BaseModel):
    """The ``bash`` tool's arguments."""

    model_config = ConfigDict(json_schema_extra=_pi_schema)

    command: str = Field(description="Bash command to execute")
    timeout: _Seconds = Field(
        default=None, description=_PI_TIMEOUT_DESCRIPTION, json_schema_extra=_drop_null_default
    )


@functools.lru_cache(maxsize=8)
def _params_model(default_timeout: float | None) -> type[BashParams]:
    if default_timeout is None:
        return BashParams
    # The model must not be told "no default timeout" when there is one. Cached: building a
    # pydantic model costs milliseconds, and the tool is registered again for every session.
    description = f"Timeout in seconds (optional, default {_format_number(default_timeout)} seconds)"
    return create_model(
        "BashParams",
        __base__=BashParams,
        __doc__=BashParams.__doc__,
        timeout=(
            _Seconds,
            Field(default=None, description=description, json_schema_extra=_drop_null_default),
        ),
    )


def create_bash_tool(
    *,
    shell_path: str | None = None,
    command_prefix: str | None = None,
    default_timeout: float | None = DEFAULT_TIMEOUT,
    kill_grace: float = DEFAULT_KILL_GRACE,
    background: BackgroundPolicy = "keep",
    env: Mapping[str, str] | None = None,
    update_interval: float = UPDATE_INTERVAL,
) -> Tool[BashParams]:
    """Build the ``bash`` tool.

    :param shell_path: the shell to run (pi's ``shellPath`` setting); default ``/bin/bash``,
        else ``bash`` on ``PATH``, else ``sh``.
    :param command_prefix: lines run before every command (pi's ``shellCommandPrefix``,
        e.g. ``shopt -s expand_aliases``).
    :param default_timeout: seconds a call may run when the model passes no positive
        ``timeout``; ``None`` means no limit (pi's behaviour).
    :param kill_grace: seconds between SIGTERM and SIGKILL when a call is stopped.
    :param background: ``"keep"`` leaves processes a command started in the background
        running after it returns (until :func:`~pi_bash.kill_background_processes`);
        ``"kill"`` stops them when the command returns.
    :param env: extra environment variables for every command.
    :param update_interval: minimum seconds between two partial-output updates.
    """
    parameters = _params_model(default_timeout)

    async def execute(params: BashParams, ctx: ToolCallContext) -> ToolResult:
        command = f"{command_prefix}\n{params.command}" if command_prefix else params.command
        timeout = params.timeout if params.timeout is not None and params.timeout > 0 else default_timeout
        output = OutputAccumulator(temp_file_prefix="pi-bash")
        try:
            await ctx.update(ToolResult(content=[], details=None))
            throttle = _Throttle(lambda: ctx.update(_partial_result(output)), update_interval)
            async with anyio.create_task_group() as task_group:
                task_group.start_soon(throttle.run)

                def on_data(data: bytes) -> None:
                    output.append(data)
                    throttle.mark_dirty()

                # Caught here, or the task group would wrap it in an exception group.
                failure: BashError | None = None
                try:
                    outcome = await run_shell_command(
                        command,
                        ctx.cwd,
                        on_data=on_data,
                        signal=ctx.signal,
                        timeout=timeout,
                        shell_path=shell_path,
                        env=build_env(env),
                        kill_grace=kill_grace,
                        background=background,
                    )
                except BashError as exc:
                    failure = exc
                finally:
                    task_group.cancel_scope.cancel()
            if failure is not None:
                raise failure
            output.finish()
            await throttle.flush()
            snapshot = output.snapshot(persist_if_truncated=True)
        finally:
            output.close()

        if outcome.aborted:
            raise BashError(_with_status(_format(output, snapshot, ""), "Command aborted"))
        if outcome.timed_out:
            assert timeout is not None
            status = f"Command timed out after {_format_number(timeout)} seconds"
            raise BashError(_with_status(_format(output, snapshot, ""), status))
        text = _format(output, snapshot, "(no output)")
        if outcome.exit_code not in (0, None):
            raise BashError(_with_status(text, f"Command exited with code {outcome.exit_code}"))
        details = _details(snapshot) if snapshot.truncation.truncated else None
        return ToolResult(content=[TextContent(text=text)], details=details)

    return Tool(
        name="bash",
        label="bash",
        description=BASH_DESCRIPTION,
        parameters=parameters,
        execute=execute,
        prompt_snippet=BASH_PROMPT_SNIPPET,
    )


def _partial_result(output: OutputAccumulator) -> ToolResult:
    snapshot = output.snapshot(persist_if_truncated=True)
    return ToolResult(content=[TextContent(text=snapshot.content)], details=_details(snapshot))


def _details(snapshot: OutputSnapshot) -> dict[str, Any]:
    """pi's bash ``details``: the truncation record and the spill file, when there are any."""
    details: dict[str, Any] = {}
    if snapshot.truncation.truncated:
        details["truncation"] = snapshot.truncation.to_json_dict()
    if snapshot.full_output_path is not None:
        details["fullOutputPath"] = snapshot.full_output_path
    return details


def _format(output: OutputAccumulator, snapshot: OutputSnapshot, empty_text: str) -> str:
    """The text the model reads: the kept output plus pi's truncation notice."""
    truncation = snapshot.truncation
    text = snapshot.content or empty_text
    if not truncation.truncated:
        return text
    path = snapshot.full_output_path
    end_line = truncation.total_lines
    start_line = end_line - truncation.output_lines + 1
    if truncation.last_line_partial:
        shown = format_size(truncation.output_bytes)
        line_size = format_size(output.last_line_bytes)
        notice = f"[Showing last {shown} of line {end_line} (line is {line_size}). Full output: {path}]"
    elif truncation.truncated_by == "lines":
        notice = f"[Showing lines {start_line}-{end_line} of {end_line}. Full output: {path}]"
    else:
        limit = format_size(DEFAULT_MAX_BYTES)
        notice = f"[Showing lines {start_line}-{end_line} of {end_line} ({limit} limit). Full output: {path}]"
    return f"{text}\n\n{notice}"


def _with_status(text: str, status: str) -> str:
    return f"{text}\n\n{status}" if text else status


def _format_number(value: float) -> str:
    """A number as JavaScript prints it in a template string: ``5``, ``2.5``."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


class _Throttle:
    """Coalesces partial-output updates: the first at once, then at most one per interval."""

    def __init__(self, emit: Callable[[], Awaitable[None]], interval: float) -> None:
        self._emit = emit
        self._interval = interval
        self._dirty = False
        self._wake = anyio.Event()
        self._last = float("-inf")

    def mark_dirty(self) -> None:
        self._dirty = True
        self._wake.set()

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            delay = self._last + self._interval - anyio.current_time()
            if delay > 0:
                await anyio.sleep(delay)
            await self.flush()

    async def flush(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        self._last = anyio.current_time()
        await self._emit()
