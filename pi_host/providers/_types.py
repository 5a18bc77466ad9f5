"""The provider contract: models, the LLM context, stream options and the stream function."""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias

from pydantic import Field

from pi_host._frozen import empty_frozen_list
from pi_host.messages import AssistantMessageEvent, Message, WireModel
from pi_host.messages._base import FrozenSeq

from ._abort import AbortSignal

__all__ = [
    "THINKING_LEVELS",
    "LlmContext",
    "Model",
    "ModelCost",
    "Provider",
    "StreamFn",
    "StreamOptions",
    "ThinkingLevel",
    "ToolSpec",
]

ThinkingLevel: TypeAlias = Literal["off", "minimal", "low", "medium", "high", "xhigh"]
THINKING_LEVELS: tuple[ThinkingLevel, ...] = ("off", "minimal", "low", "medium", "high", "xhigh")


class ModelCost(WireModel):
    """Prices in dollars per million tokens."""

    # int | float keeps a whole price whole, so ``3`` is written ``3`` as pi writes it, not ``3.0``.
    input: int | float = 0
    output: int | float = 0
    cache_read: int | float = 0
    cache_write: int | float = 0


def _text_only() -> list[Literal["text", "image"]]:
    return ["text"]


class Model(WireModel):
    """A model as pi describes it (``models.json`` model entries use the same keys)."""

    id: str
    name: str = ""
    api: str
    provider: str
    base_url: str = ""
    reasoning: bool = False
    input: list[Literal["text", "image"]] = Field(default_factory=_text_only)
    cost: ModelCost = Field(default_factory=ModelCost)
    context_window: int = 128_000
    max_tokens: int = 16_384
    headers: dict[str, str] | None = None
    compat: dict[str, Any] | None = None
    thinking_level_map: dict[str, Any] | None = None

    @property
    def ref(self) -> str:
        """``provider/id``, the form the CLI and settings accept."""
        return f"{self.provider}/{self.id}"


class ToolSpec(WireModel):
    """What a provider is told about a tool: name, description and JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]


class LlmContext(WireModel):
    """One provider request's input: system prompt, provider messages and tools."""

    system_prompt: str = ""
    messages: FrozenSeq[Message] = Field(default_factory=empty_frozen_list)
    tools: FrozenSeq[ToolSpec] = Field(default_factory=empty_frozen_list)


PayloadHook: TypeAlias = Callable[[Any, Model], Awaitable[Any]]
ResponseHook: TypeAlias = Callable[[int, dict[str, str], Model], Awaitable[None]]


@dataclass(frozen=True)
class StreamOptions:
    """Per-request options (pi's ``SimpleStreamOptions``).

    ``on_payload`` receives the provider-specific request body and may return a replacement
    (``None`` keeps it); the host wires it to ``pi_before_provider_request``. ``on_response``
    sees the HTTP status and headers (``pi_after_provider_response``). ``max_retries`` is how
    often a request that failed before its reply began (an overload, a rate limit, a 5xx, a
    lost connection) is retried at once, as the official SDKs do; None means their default, 2.
    """

    signal: AbortSignal | None = None
    api_key: str | None = None
    reasoning: ThinkingLevel | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    headers: dict[str, str] = field(default_factory=dict)
    session_id: str | None = None
    cache_retention: Literal["none", "short", "long"] = "short"
    thinking_budgets: dict[str, int] = field(default_factory=dict)
    timeout_s: float | None = None
    max_retries: int | None = None
    on_payload: PayloadHook | None = None
    on_response: ResponseHook | None = None


class StreamFn(Protocol):
    """Stream one assistant reply. Never raises for request, model or runtime failures.

    The iterator yields ``start``, block events and ends with exactly one ``done`` or ``error``
    event; a failure is an ``error`` event whose message has ``stop_reason`` ``error`` (or
    ``aborted`` once ``options.signal`` is aborted) and an ``error_message``.
    """

    def __call__(
        self, model: Model, context: LlmContext, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]: ...


@dataclass(frozen=True)
class Provider:
    """A wire protocol, registered through ``pi_register_providers`` and chosen by ``api``.

    ``stream`` is either the stream function itself or a lazy ``"module:attribute"``
    reference, imported on first use, so that a provider's SDK costs nothing at start-up.
    ``models`` are models this provider brings with it (they join the model registry), and
    ``requires_auth=False`` marks a provider that needs no credentials (local or scripted), and
    ``listed=False`` keeps its models out of the available ones (``/model``, model cycling,
    ``--list-models``) while they can still be chosen by name.
    """

    api: str
    stream: StreamFn | str
    models: tuple[Model, ...] = ()
    requires_auth: bool = True
    listed: bool = True

    def load(self) -> StreamFn:
        """Return the stream function, importing it if it was given by reference."""
        if isinstance(self.stream, str):
            module_name, _, attribute = self.stream.partition(":")
            fn: StreamFn = getattr(importlib.import_module(module_name), attribute)
            object.__setattr__(self, "stream", fn)
            return fn
        return self.stream
