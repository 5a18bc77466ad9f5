"""What a message cost: a reply's own usage, or what a tool spent on the model's behalf."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from ._content import AssistantMessage, ToolResultMessage, Usage

__all__ = ["message_usage"]


def message_usage(message: Any) -> Usage | None:
    """The tokens and cost ``message`` accounts for in a session's totals, ``None`` for none.

    An assistant reply counts its own ``usage``. A tool result counts the usage its tool
    recorded under ``details["usage"]`` (pi's usage object): the requests a sub-agent made
    for the call, which the session's footer and stats include though no reply of this
    session made them. Anything else counts nothing.
    """
    if isinstance(message, AssistantMessage):
        return message.usage
    if isinstance(message, ToolResultMessage) and isinstance(message.details, dict):
        recorded = message.details.get("usage")
        if isinstance(recorded, dict):
            try:
                return Usage.model_validate(recorded)
            except ValidationError:
                return None
    return None
