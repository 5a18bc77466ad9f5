"""The built-in wire protocols: ``anthropic-messages`` and ``openai-completions``.

An essential plugin (registered by module path, cannot be disabled). Both providers are
registered by reference, so neither httpx nor the Anthropic SDK is imported until a model of
that API streams its first reply.
"""

from __future__ import annotations

from collections.abc import Callable

from pi_host.hookspecs import hookimpl
from pi_host.providers import Provider

__all__ = ["pi_register_providers"]


@hookimpl(trylast=True)
def pi_register_providers(register: Callable[[Provider], None]) -> None:
    """Register the Anthropic Messages and OpenAI chat-completions providers."""
    register(Provider(api="anthropic-messages", stream="pi_host.providers._anthropic:stream"))
    register(Provider(api="openai-completions", stream="pi_host.providers._openai:stream"))
