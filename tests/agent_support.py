"""Helpers shared by the agent and loop tests."""

from __future__ import annotations

from pi_host.messages import AgentMessage, TextContent

__all__ = ["text_of"]


def text_of(message: AgentMessage) -> str:
    """The text of a message's text blocks, joined (a plain string content as is)."""
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    return "".join(block.text for block in content if isinstance(block, TextContent))
