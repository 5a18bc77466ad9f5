"""The ``bash`` tool's definition: pi's name, parameters, schema and texts.

Registering the tool imports only this; the process runner and the output handling
(:mod:`pi_bash._execute`) are imported by the first call.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.json_schema import SkipJsonSchema

from pi_host import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, Tool, ToolCallContext, ToolResult

from ._limits import DEFAULT_KILL_GRACE, BackgroundPolicy

__all__ = [
    "BASH_DESCRIPTION",
    "BASH_PROMPT_SNIPPET",
    "DEFAULT_TIMEOUT",
    "UPDATE_INTERVAL",
    "BashParams",
    "create_bash_tool",
    "format_number",
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

    # The validator is built by the first call, not when the tool is registered.
    model_config = ConfigDict(json_schema_extra=_pi_schema, defer_build=True)

    command: str = Field(description="Bash command to execute")
    timeout: _Seconds = Field(
        default=None, description=_PI_TIMEOUT_DESCRIPTION, json_schema_extra=_drop_null_default
    )


def _timeout_description(default_timeout: float | None) -> str:
    if default_timeout is None:
        return _PI_TIMEOUT_DESCRIPTION
    return f"Timeout in seconds (optional, default {format_number(default_timeout)} seconds)"


def _schema(default_timeout: float | None) -> dict[str, Any]:
    """The JSON schema :func:`_params_model` generates, written out (pydantic's key order); a
    test pins the two together."""
    return {
        "properties": {
            "command": {"description": "Bash command to execute", "type": "string"},
            "timeout": {"description": _timeout_description(default_timeout), "type": "number"},
        },
        "required": ["command"],
        "type": "object",
    }


@functools.lru_cache(maxsize=8)
def _params_model(default_timeout: float | None) -> type[BashParams]:
    if default_timeout is None:
        return BashParams
    # The model must not be told "no default timeout" when there is one. Cached: building a
    # pydantic model costs milliseconds, and the tool is registered again for every session.
    description = _timeout_description(default_timeout)
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
        from ._execute import run_bash_call

        return await run_bash_call(
            params,
            ctx,
            shell_path=shell_path,
            command_prefix=command_prefix,
            default_timeout=default_timeout,
            kill_grace=kill_grace,
            background=background,
            env=env,
            update_interval=update_interval,
        )

    return Tool(
        name="bash",
        label="bash",
        description=BASH_DESCRIPTION,
        parameters=parameters,
        execute=execute,
        prompt_snippet=BASH_PROMPT_SNIPPET,
        parameters_schema=_schema(default_timeout),
    )


def format_number(value: float) -> str:
    """A number as JavaScript prints it in a template string: ``5``, ``2.5``."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))
