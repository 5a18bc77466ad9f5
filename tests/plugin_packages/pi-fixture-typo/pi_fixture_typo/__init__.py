"""A plugin with a misspelt hook name (``pi_tool_cal``)."""

from __future__ import annotations

from typing import Any

from pi_host import hookimpl


@hookimpl
def pi_tool_cal(tool_name: str) -> Any:
    return None


@hookimpl
def pi_agent_start() -> None:
    pass
