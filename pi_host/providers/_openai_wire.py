"""The OpenAI chat-completions wire format (OpenAI and compatible servers), without I/O.

Request (pi's ``openai-completions`` provider): the system prompt as ``developer`` (reasoning
models on servers that support it) or ``system``; assistant text as one plain string; tool calls
with JSON-string arguments; consecutive tool results as ``tool`` messages, their images in one
following user message; reasoning controls per ``compat.thinkingFormat``; usage requested with
``stream_options.include_usage``.

``compat`` (per model, from ``models.json``) adapts the request to servers that differ from
OpenAI; unset switches are detected from the provider name and base URL as pi does. The ones
that matter for local servers (Ollama, vLLM, llama.cpp, LM Studio): ``supportsDeveloperRole``,
``supportsReasoningEffort``, ``supportsUsageInStreaming``, ``maxTokensField``,
``requiresToolResultName``, ``requiresAssistantAfterToolResult``, ``requiresThinkingAsText``,
``thinkingFormat``, ``supportsStrictMode``.

Response: ``chat.completion.chunk`` events; text, reasoning (``reasoning_content``,
``reasoning`` or ``reasoning_text``, whichever a server sends) and tool calls whose argument
fragments may interleave across calls (keyed by the chunk's ``index``). Blocks end when the
stream ends, as in pi.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from pi_host.messages import (
    AssistantMessage,
    AssistantMessageEvent,
    ImageContent,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

from ._builder import ReplyBuilder
from ._cost import make_usage
from ._errors import redact
from ._http import ProviderFailure
from ._sse import ServerSentEvent
from ._thinking import clamp_thinking_level
from ._transform import sanitize_surrogates, transform_messages
from ._types import LlmContext, Model, StreamOptions, ThinkingLevel, ToolSpec

__all__ = ["OpenAICompat", "OpenAIStreamMapper", "build_request", "convert_messages", "resolve_compat"]

_REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_text")
_INVALID_ID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
_ASSISTANT_BRIDGE = "I have processed the tool results."


@dataclass(frozen=True)
class OpenAICompat:
    """The resolved compatibility switches (``models.json`` names, snake_cased)."""

    supports_store: bool = True
    supports_developer_role: bool = True
    supports_reasoning_effort: bool = True
    supports_usage_in_streaming: bool = True
    max_tokens_field: Literal["max_completion_tokens", "max_tokens"] = "max_completion_tokens"
    requires_tool_result_name: bool = False
    requires_assistant_after_tool_result: bool = False
    requires_thinking_as_text: bool = False
    requires_reasoning_content_on_assistant_messages: bool = False
    thinking_format: str = "openai"
    open_router_routing: dict[str, Any] = field(default_factory=dict)
    vercel_gateway_routing: dict[str, Any] = field(default_factory=dict)
    zai_tool_stream: bool = False
    supports_strict_mode: bool = True
    cache_control_format: str | None = None
    send_session_affinity_headers: bool = False
    supports_long_cache_retention: bool = True


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


_COMPAT_KEYS = {f.name: _camel(f.name) for f in fields(OpenAICompat)}


def _detect_compat(model: Model) -> OpenAICompat:
    provider, base_url = model.provider, model.base_url
    zai = provider == "zai" or "api.z.ai" in base_url
    moonshot = provider in ("moonshotai", "moonshotai-cn") or "api.moonshot." in base_url
    workers_ai = provider == "cloudflare-workers-ai" or "api.cloudflare.com" in base_url
    ai_gateway = provider == "cloudflare-ai-gateway" or "gateway.ai.cloudflare.com" in base_url
    grok = provider == "xai" or "api.x.ai" in base_url
    deepseek = provider == "deepseek" or "deepseek.com" in base_url
    non_standard = (
        provider == "cerebras"
        or "cerebras.ai" in base_url
        or grok
        or "chutes.ai" in base_url
        or "deepseek.com" in base_url
        or zai
        or moonshot
        or provider == "opencode"
        or "opencode.ai" in base_url
        or workers_ai
        or ai_gateway
    )
    if deepseek:
        thinking_format = "deepseek"
    elif zai:
        thinking_format = "zai"
    elif provider == "openrouter" or "openrouter.ai" in base_url:
        thinking_format = "openrouter"
    else:
        thinking_format = "openai"
    return OpenAICompat(
        supports_store=not non_standard,
        supports_developer_role=not non_standard,
        supports_reasoning_effort=not (grok or zai or moonshot or ai_gateway),
        max_tokens_field="max_tokens"
        if ("chutes.ai" in base_url or moonshot or ai_gateway)
        else "max_completion_tokens",
        requires_reasoning_content_on_assistant_messages=deepseek,
        thinking_format=thinking_format,
        supports_strict_mode=not (moonshot or ai_gateway),
        cache_control_format="anthropic"
        if provider == "openrouter" and model.id.startswith("anthropic/")
        else None,
        supports_long_cache_retention=not (workers_ai or ai_gateway),
    )


def resolve_compat(model: Model) -> OpenAICompat:
    """The model's ``compat`` over the switches detected from its provider and base URL."""
    detected = _detect_compat(model)
    configured = model.compat or {}
    values = {name: configured.get(key, getattr(detected, name)) for name, key in _COMPAT_KEYS.items()}
    if "openRouterRouting" not in configured:
        values["open_router_routing"] = {}
    return OpenAICompat(**values)


def _normalize_id(model: Model) -> Any:
    def normalize(tool_call_id: str) -> str:
        # OpenAI Responses ids look like "{call_id}|{item_id}", hundreds of characters long.
        if "|" in tool_call_id:
            return _INVALID_ID_CHARS.sub("_", tool_call_id.split("|", 1)[0])[:40]
        if model.provider == "openai":
            return tool_call_id[:40]
        return tool_call_id

    return normalize


def _image_part(image: ImageContent) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:{image.mime_type};base64,{image.data}"}}


def convert_messages(model: Model, context: LlmContext, compat: OpenAICompat) -> list[dict[str, Any]]:
    """pi's messages (and system prompt) as chat-completions ``messages``."""
    out: list[dict[str, Any]] = []
    messages = transform_messages(context.messages, model, _normalize_id(model))
    if context.system_prompt:
        role = "developer" if model.reasoning and compat.supports_developer_role else "system"
        out.append({"role": role, "content": sanitize_surrogates(context.system_prompt)})
    last_role: str | None = None
    index = 0
    while index < len(messages):
        message = messages[index]
        if (
            compat.requires_assistant_after_tool_result
            and last_role == "toolResult"
            and message.role == "user"
        ):
            out.append({"role": "assistant", "content": _ASSISTANT_BRIDGE})
        if isinstance(message, UserMessage):
            if isinstance(message.content, str):
                out.append({"role": "user", "content": sanitize_surrogates(message.content)})
            elif message.content:
                out.append(
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": sanitize_surrogates(part.text)}
                            if isinstance(part, TextContent)
                            else _image_part(part)
                            for part in message.content
                        ],
                    }
                )
        elif isinstance(message, AssistantMessage):
            converted = _assistant(message, model, compat)
            if converted is not None:
                out.append(converted)
        else:
            images: list[dict[str, Any]] = []
            while index < len(messages) and isinstance(messages[index], ToolResultMessage):
                result = messages[index]
                assert isinstance(result, ToolResultMessage)
                text = "\n".join(part.text for part in result.content if isinstance(part, TextContent))
                tool_message: dict[str, Any] = {
                    "role": "tool",
                    "content": sanitize_surrogates(text or "(see attached image)"),
                    "tool_call_id": result.tool_call_id,
                }
                if compat.requires_tool_result_name and result.tool_name:
                    tool_message["name"] = result.tool_name
                out.append(tool_message)
                if "image" in model.input:
                    images += [_image_part(part) for part in result.content if isinstance(part, ImageContent)]
                index += 1
            if images:
                if compat.requires_assistant_after_tool_result:
                    out.append({"role": "assistant", "content": _ASSISTANT_BRIDGE})
                out.append(
                    {
                        "role": "user",
                        "content": [{"type": "text", "text": "Attached image(s) from tool result:"}, *images],
                    }
                )
                last_role = "user"
            else:
                last_role = "toolResult"
            continue
        last_role = message.role
        index += 1
    return out


def _assistant(message: AssistantMessage, model: Model, compat: OpenAICompat) -> dict[str, Any] | None:
    converted: dict[str, Any] = {
        "role": "assistant",
        "content": "" if compat.requires_assistant_after_tool_result else None,
    }
    texts = [
        sanitize_surrogates(block.text)
        for block in message.content
        if isinstance(block, TextContent) and block.text.strip()
    ]
    text = "".join(texts)
    thinking = [
        block for block in message.content if isinstance(block, ThinkingContent) and block.thinking.strip()
    ]
    if thinking and compat.requires_thinking_as_text:
        joined = "\n\n".join(sanitize_surrogates(block.thinking) for block in thinking)
        converted["content"] = [
            {"type": "text", "text": joined},
            *({"type": "text", "text": t} for t in texts),
        ]
    else:
        if text:
            # A plain string, never content parts: some models mirror the part structure back.
            converted["content"] = text
        if thinking and thinking[0].thinking_signature:
            # The field the reasoning arrived in (llama.cpp's reasoning_content for gpt-oss …).
            converted[thinking[0].thinking_signature] = "\n".join(block.thinking for block in thinking)
    calls = [block for block in message.content if isinstance(block, ToolCall)]
    if calls:
        converted["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments, ensure_ascii=False)},
            }
            for call in calls
        ]
        details = []
        for call in calls:
            if call.thought_signature:
                try:
                    details.append(json.loads(call.thought_signature))
                except ValueError:
                    continue
        if details:
            converted["reasoning_details"] = details
    if compat.requires_reasoning_content_on_assistant_messages and model.reasoning:
        converted.setdefault("reasoning_content", "")
    content = converted["content"]
    if not content and "tool_calls" not in converted:
        return None
    return converted


def _convert_tools(tools: Sequence[ToolSpec], compat: OpenAICompat) -> list[dict[str, Any]]:
    converted = []
    for tool in tools:
        function: dict[str, Any] = {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        }
        if compat.supports_strict_mode:
            function["strict"] = False
        converted.append({"type": "function", "function": function})
    return converted


def _apply_cache_control(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, marker: dict[str, Any]
) -> None:
    for message in messages:
        if message["role"] in ("system", "developer"):
            _mark_text(message, marker)
            break
    if tools:
        tools[-1]["cache_control"] = marker
    for message in reversed(messages):
        if message["role"] in ("user", "assistant") and _mark_text(message, marker):
            break


def _mark_text(message: dict[str, Any], marker: dict[str, Any]) -> bool:
    content = message.get("content")
    if isinstance(content, str):
        if not content:
            return False
        message["content"] = [{"type": "text", "text": content, "cache_control": marker}]
        return True
    if isinstance(content, list):
        for part in reversed(content):
            if isinstance(part, dict) and part.get("type") == "text":
                part["cache_control"] = marker
                return True
    return False


def _has_tool_history(context: LlmContext) -> bool:
    return any(
        isinstance(message, ToolResultMessage)
        or (isinstance(message, AssistantMessage) and any(isinstance(b, ToolCall) for b in message.content))
        for message in context.messages
    )


@dataclass(frozen=True)
class OpenAIRequest:
    """The JSON body and the headers (auth included) of one request."""

    params: dict[str, Any]
    headers: dict[str, str]


def build_request(model: Model, context: LlmContext, options: StreamOptions, api_key: str) -> OpenAIRequest:
    """Build the chat-completions request pi would send (see the module docstring)."""
    compat = resolve_compat(model)
    retention = options.cache_retention
    messages = convert_messages(model, context, compat)
    params: dict[str, Any] = {"model": model.id, "messages": messages, "stream": True}
    long_cache = retention == "long" and compat.supports_long_cache_retention
    if options.session_id and (("api.openai.com" in model.base_url and retention != "none") or long_cache):
        params["prompt_cache_key"] = options.session_id
    if long_cache:
        params["prompt_cache_retention"] = "24h"
    if compat.supports_usage_in_streaming:
        params["stream_options"] = {"include_usage": True}
    if compat.supports_store:
        params["store"] = False
    max_tokens = options.max_tokens
    if max_tokens is None and model.max_tokens > 0:
        max_tokens = min(model.max_tokens, 32_000)
    if max_tokens:
        params[compat.max_tokens_field] = max_tokens
    if options.temperature is not None:
        params["temperature"] = options.temperature
    tools: list[dict[str, Any]] | None = None
    if context.tools:
        tools = _convert_tools(context.tools, compat)
        params["tools"] = tools
        if compat.zai_tool_stream:
            params["tool_stream"] = True
    elif _has_tool_history(context):
        # Anthropic behind LiteLLM-style proxies wants "tools" whenever the history has tool use.
        params["tools"] = []
    if compat.cache_control_format == "anthropic" and retention != "none":
        marker: dict[str, Any] = {"type": "ephemeral", **({"ttl": "1h"} if long_cache else {})}
        _apply_cache_control(messages, tools, marker)
    _apply_reasoning(params, model, compat, options.reasoning)
    if "openrouter.ai" in model.base_url and compat.open_router_routing:
        params["provider"] = compat.open_router_routing
    routing = compat.vercel_gateway_routing
    if "ai-gateway.vercel.sh" in model.base_url and (routing.get("only") or routing.get("order")):
        params["providerOptions"] = {"gateway": {k: routing[k] for k in ("only", "order") if routing.get(k)}}

    headers: dict[str, str] = {**(model.headers or {})}
    if options.session_id and retention != "none" and compat.send_session_affinity_headers:
        headers.update(
            {
                "session_id": options.session_id,
                "x-client-request-id": options.session_id,
                "x-session-affinity": options.session_id,
            }
        )
    headers.update(options.headers)
    if not any(name.lower() == "authorization" for name in headers):
        headers["Authorization"] = f"Bearer {api_key}"
    return OpenAIRequest(params=params, headers=headers)


def _apply_reasoning(
    params: dict[str, Any], model: Model, compat: OpenAICompat, requested: ThinkingLevel | None
) -> None:
    if not model.reasoning:
        return
    level: ThinkingLevel | None = clamp_thinking_level(model, requested) if requested else None
    effort = None if level in (None, "off") else level
    level_map = model.thinking_level_map or {}
    mapped = level_map.get(effort, effort) if effort else None
    style = compat.thinking_format
    if style in ("zai", "qwen"):
        params["enable_thinking"] = effort is not None
    elif style == "qwen-chat-template":
        params["chat_template_kwargs"] = {"enable_thinking": effort is not None, "preserve_thinking": True}
    elif style == "deepseek":
        params["thinking"] = {"type": "enabled" if effort else "disabled"}
        if effort:
            params["reasoning_effort"] = mapped
    elif style == "openrouter":
        if effort:
            params["reasoning"] = {"effort": mapped}
        elif not ("off" in level_map and level_map["off"] is None):
            params["reasoning"] = {"effort": level_map.get("off") or "none"}
    elif compat.supports_reasoning_effort:
        if effort:
            params["reasoning_effort"] = mapped
        elif isinstance(level_map.get("off"), str):
            params["reasoning_effort"] = level_map["off"]


_FINISH_REASONS: dict[str, StopReason] = {
    "stop": "stop",
    "end": "stop",
    "length": "length",
    "function_call": "toolUse",
    "tool_calls": "toolUse",
}


class OpenAIStreamMapper:
    """Turn chat-completion chunks into pi's events, through a :class:`ReplyBuilder`."""

    def __init__(self, builder: ReplyBuilder, *, api_key: str | None = None) -> None:
        self._builder = builder
        self._api_key = api_key
        self._text: int | None = None
        self._thinking: int | None = None
        self._calls_by_index: dict[int, int] = {}
        self._calls_by_id: dict[str, int] = {}
        self._saw_data = False
        self._saw_finish = False
        self._saw_done = False

    def handle(self, sse: ServerSentEvent) -> list[AssistantMessageEvent]:
        data = sse.data.strip()
        if not data:
            return []
        self._saw_data = True
        if data == "[DONE]":
            self._saw_done = True
            return []
        if self._saw_done:
            return []
        try:
            chunk = json.loads(data)
        except ValueError as exc:
            raise ProviderFailure(
                redact(f"Could not parse SSE chunk as JSON: {exc}; data={data}", self._api_key)
            ) from None
        if sse.event == "error" or (isinstance(chunk, dict) and chunk.get("error") is not None):
            raise ProviderFailure(redact(_stream_error(chunk), self._api_key))
        if not isinstance(chunk, dict):
            return []
        try:
            return self._chunk(chunk)
        except (KeyError, TypeError, AttributeError) as exc:
            raise ProviderFailure(redact(f"Malformed chunk: {exc!r}; data={data}", self._api_key)) from None

    def finish(self) -> list[AssistantMessageEvent]:
        """Close every open block, in content order. :raises ProviderFailure: on a cut-off stream."""
        if not self._saw_data:
            raise ProviderFailure("OpenAI-compatible stream ended without any data")
        if not self._saw_finish and not self._saw_done:
            raise ProviderFailure("OpenAI-compatible stream ended without a finish_reason or [DONE]")
        builder = self._builder
        events: list[AssistantMessageEvent] = []
        for position, block in enumerate(builder.content):
            if isinstance(block, TextContent):
                events.append(builder.close_text(position))
            elif isinstance(block, ThinkingContent):
                events.append(builder.close_thinking(position))
            else:
                events.append(builder.close_tool_call(position))
        return events

    def _chunk(self, chunk: dict[str, Any]) -> list[AssistantMessageEvent]:
        builder = self._builder
        if builder.response_id is None and isinstance(chunk.get("id"), str):
            builder.response_id = chunk["id"]
        reported_model = chunk.get("model")
        if isinstance(reported_model, str) and reported_model and reported_model != builder.model.id:
            builder.extra.setdefault("responseModel", reported_model)
        if chunk.get("usage"):
            self._usage(chunk["usage"])
        choices = chunk.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else None
        if not isinstance(choice, dict):
            return []
        if not chunk.get("usage") and choice.get("usage"):
            self._usage(choice["usage"])  # Moonshot reports usage on the choice
        reason = choice.get("finish_reason")
        if reason:
            self._saw_finish = True
            builder.stop_reason = _FINISH_REASONS.get(reason, "error")
            if builder.stop_reason == "error":
                builder.error_message = f"Provider finish_reason: {reason}"
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            return []
        events: list[AssistantMessageEvent] = []
        content = delta.get("content")
        if isinstance(content, str) and content:
            if self._text is None:
                self._text, start = builder.open_text()
                events.append(start)
            events.append(builder.text_delta(self._text, content))
        for name in _REASONING_FIELDS:
            value = delta.get(name)
            if isinstance(value, str) and value:
                if self._thinking is None:
                    self._thinking, thinking_start = builder.open_thinking(signature=name)
                    events.append(thinking_start)
                events.append(builder.thinking_delta(self._thinking, value))
                break
        for call in delta.get("tool_calls") or ():
            events += self._tool_call(call)
        for detail in delta.get("reasoning_details") or ():
            if isinstance(detail, dict) and detail.get("type") == "reasoning.encrypted" and detail.get("id"):
                position = self._calls_by_id.get(detail["id"])
                if position is not None and detail.get("data"):
                    builder.update_tool_call(
                        position, thought_signature=json.dumps(detail, separators=(",", ":"))
                    )
        return events

    def _tool_call(self, call: dict[str, Any]) -> list[AssistantMessageEvent]:
        builder = self._builder
        events: list[AssistantMessageEvent] = []
        stream_index = call.get("index") if isinstance(call.get("index"), int) else None
        call_id = call.get("id") or None
        function = call.get("function") or {}
        position = self._calls_by_index.get(stream_index) if stream_index is not None else None
        if position is None and call_id:
            position = self._calls_by_id.get(call_id)
        if position is None:
            position, start = builder.open_tool_call(id=call_id or "", name=function.get("name") or "")
            events.append(start)
        else:
            block = builder.content[position]
            assert isinstance(block, ToolCall)
            builder.update_tool_call(
                position,
                id=call_id if call_id and not block.id else None,
                name=function.get("name") if function.get("name") and not block.name else None,
            )
        if stream_index is not None:
            self._calls_by_index.setdefault(stream_index, position)
        if call_id:
            self._calls_by_id[call_id] = position
        events.append(builder.tool_call_delta(position, function.get("arguments") or ""))
        return events

    def _usage(self, raw: dict[str, Any]) -> None:
        prompt = int(raw.get("prompt_tokens") or 0)
        details = raw.get("prompt_tokens_details") or {}
        reported_cached = details.get("cached_tokens")
        if reported_cached is None:
            reported_cached = raw.get("prompt_cache_hit_tokens") or 0
        cache_write = int(details.get("cache_write_tokens") or 0)
        # Some servers (OpenRouter) count this request's cache writes in cached_tokens as well.
        cache_read = max(0, int(reported_cached) - cache_write) if cache_write > 0 else int(reported_cached)
        self._builder.usage = make_usage(
            self._builder.model,
            input=max(0, prompt - cache_read - cache_write),
            output=int(raw.get("completion_tokens") or 0),
            cache_read=cache_read,
            cache_write=cache_write,
        )


def _stream_error(chunk: Any) -> str:
    error = chunk.get("error", chunk) if isinstance(chunk, dict) else chunk
    if isinstance(error, dict):
        message = error.get("message")
        text = message if isinstance(message, str) and message else json.dumps(error, ensure_ascii=False)
        raw = (error.get("metadata") or {}).get("raw") if isinstance(error.get("metadata"), dict) else None
        return f"{text}\n{raw}" if raw else text
    return error if isinstance(error, str) else json.dumps(error, ensure_ascii=False)
