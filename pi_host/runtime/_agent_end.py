"""``agent_end`` as sessions emit it: the one session-level event every run emits."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pi_host.messages import AgentMessage, WireModel

__all__ = ["SessionAgentEndEvent"]


class SessionAgentEndEvent(WireModel):
    """``agent_end`` as sessions emit it: with ``will_retry`` set when auto-retry follows.

    ``will_retry`` is for Python subscribers only: pi 0.73's JSON and RPC ``agent_end`` is
    ``{type, messages}``, so the field is left out of the JSON.
    """

    type: Literal["agent_end"] = "agent_end"
    messages: list[AgentMessage]
    will_retry: bool = Field(default=False, exclude=True)
