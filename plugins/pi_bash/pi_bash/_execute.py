"""One call of the ``bash`` tool: the command's output, throttled updates, pi's texts.

Imported by the tool's first call (see :mod:`pi_bash._tool`), with the process runner.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
from anyio.abc import TaskGroup

from pi_host import DEFAULT_MAX_BYTES, TextContent, ToolCallContext, ToolResult, format_size

from ._limits import BackgroundPolicy
from ._output import OutputAccumulator, OutputSnapshot
from ._owner import session_owner
from ._process import BashError, build_env, run_shell_command
from ._tool import BashParams, format_number

__all__ = ["run_bash_call"]


async def run_bash_call(
    params: BashParams,
    ctx: ToolCallContext,
    *,
    shell_path: str | None,
    command_prefix: str | None,
    default_timeout: float | None,
    kill_grace: float,
    background: BackgroundPolicy,
    env: Mapping[str, str] | None,
    update_interval: float,
) -> ToolResult:
    """Run one call with the tool's options (see :func:`~pi_bash.create_bash_tool`)."""
    command = f"{command_prefix}\n{params.command}" if command_prefix else params.command
    timeout = params.timeout if params.timeout is not None and params.timeout > 0 else default_timeout
    output = OutputAccumulator(temp_file_prefix="pi-bash")
    aborted = False
    try:
        await ctx.update(ToolResult(content=[], details=None))
        async with anyio.create_task_group() as task_group:
            throttle = _Throttle(lambda: ctx.update(_partial_result(output)), update_interval, task_group)

            def on_data(data: bytes) -> Awaitable[None]:
                output.append(data)
                return throttle.changed()

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
                    owner=session_owner(ctx.session),
                )
            except BashError as exc:
                failure = exc
            finally:
                if throttle.timer_pending:
                    task_group.cancel_scope.cancel()
        if failure is not None:
            raise failure
        output.finish()
        await throttle.flush()
        snapshot = output.snapshot(persist_if_truncated=True)
    except anyio.get_cancelled_exc_class():
        if not ctx.signal.aborted:
            raise
        # The run's abort cancels the call from outside (the group is dead by now). pi keeps
        # what the command printed for the model and the screen, so the abort becomes this
        # call's error rather than a bare cancellation.
        output.finish()
        snapshot = output.snapshot(persist_if_truncated=True)
        aborted = True
    finally:
        output.close()

    if aborted or outcome.aborted:
        raise BashError(_with_status(_format(output, snapshot, ""), "Command aborted"))
    if outcome.timed_out:
        assert timeout is not None
        status = f"Command timed out after {format_number(timeout)} seconds"
        raise BashError(_with_status(_format(output, snapshot, ""), status))
    text = _format(output, snapshot, "(no output)")
    if outcome.exit_code not in (0, None):
        raise BashError(_with_status(text, f"Command exited with code {outcome.exit_code}"))
    details = _details(snapshot) if snapshot.truncation.truncated else None
    return ToolResult(content=[TextContent(text=text)], details=details)


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


class _Throttle:
    """Coalesces partial-output updates: the first at once, then at most one per interval.

    An update that is due goes out from :meth:`changed` itself (the output pump awaits it);
    only output that arrives within an interval of the last update needs a timer, a task
    started in ``task_group`` that emits it when the interval is over. A command whose output
    comes in one burst (most) so never spawns one.
    """

    def __init__(self, emit: Callable[[], Awaitable[None]], interval: float, task_group: TaskGroup) -> None:
        self._emit = emit
        self._interval = interval
        self._task_group = task_group
        self._dirty = False
        self._last = float("-inf")
        self.timer_pending = False

    async def changed(self) -> None:
        self._dirty = True
        if self.timer_pending:
            return
        delay = self._last + self._interval - anyio.current_time()
        if delay <= 0:
            await self.flush()
        else:
            self.timer_pending = True
            self._task_group.start_soon(self._flush_later, delay)

    async def _flush_later(self, delay: float) -> None:
        await anyio.sleep(delay)
        self.timer_pending = False
        await self.flush()

    async def flush(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        self._last = anyio.current_time()
        await self._emit()
