"""The faux provider: a scripted model for tests and offline demos (pi's ``faux`` provider).

Replies are queued in advance and streamed like a real provider would: ``start``, then per
content block ``*_start``, chunked ``*_delta`` events and ``*_end``, then ``done`` (or ``error``
when the scripted reply failed). Tests assert on what the model was sent through
:attr:`FauxProvider.requests`, or by queueing a factory that inspects the request and answers.

::

    faux = FauxProvider([
        faux_assistant_message([faux_text("Let me look."), faux_tool_call("read", {"path": "a.txt"})],
                               stop_reason="toolUse"),
        faux_assistant_message("Done."),
    ])
    agent = Agent(stream_fn=faux.stream, model=faux.model)

:func:`load_faux_script` builds one from a JSON file, for the command line.
"""

from __future__ import annotations

import inspect
import json
import math
import os
import random
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

import anyio
import pydantic_core
from pydantic import ValidationError

from pi_host.messages import (
    AssistantMessage,
    AssistantMessageEvent,
    DoneEvent,
    ErrorEvent,
    ImageContent,
    Message,
    StartEvent,
    StopReason,
    TextContent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingContent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    ToolResultMessage,
    Usage,
    now_ms,
)

from ._abort import AbortSignal
from ._faux_models import DEFAULT_API as _DEFAULT_API
from ._faux_models import DEFAULT_MODEL_ID as _DEFAULT_MODEL_ID
from ._faux_models import DEFAULT_PROVIDER as _DEFAULT_PROVIDER
from ._faux_models import faux_models
from ._types import LlmContext, Model, Provider, StreamOptions

__all__ = [
    "FAUX_ABORTED_MESSAGE",
    "FAUX_NO_MORE_RESPONSES",
    "FauxFactory",
    "FauxProvider",
    "FauxReply",
    "FauxRequest",
    "FauxScriptError",
    "FauxState",
    "FauxStep",
    "faux_assistant_message",
    "faux_text",
    "faux_thinking",
    "faux_tool_call",
    "load_faux_script",
]

FAUX_NO_MORE_RESPONSES = "No more faux responses queued"
FAUX_ABORTED_MESSAGE = "Request was aborted"

_DEFAULT_TOKEN_SIZE = (3, 5)
_CHARS_PER_TOKEN = 4


# -- building replies -----------------------------------------------------------------------


def faux_text(text: str) -> TextContent:
    """A text block for :func:`faux_assistant_message`."""
    return TextContent(text=text)


def faux_thinking(thinking: str) -> ThinkingContent:
    """A thinking block for :func:`faux_assistant_message`."""
    return ThinkingContent(thinking=thinking)


def faux_tool_call(name: str, arguments: Mapping[str, Any], id: str | None = None) -> ToolCall:
    """A tool call block; ``id`` defaults to a fresh unique id."""
    return ToolCall(id=id or _random_id("tool"), name=name, arguments=dict(arguments))


FauxBlock: TypeAlias = TextContent | ThinkingContent | ToolCall


def faux_assistant_message(
    content: str | FauxBlock | Sequence[FauxBlock],
    *,
    stop_reason: StopReason = "stop",
    error_message: str | None = None,
    response_id: str | None = None,
    timestamp: int | None = None,
) -> AssistantMessage:
    """A scripted reply. A plain string becomes one text block.

    ``api``, ``provider`` and ``model`` are filled in from the request when it is streamed.
    """
    if isinstance(content, str):
        blocks: list[FauxBlock] = [faux_text(content)]
    elif isinstance(content, TextContent | ThinkingContent | ToolCall):
        blocks = [content]
    else:
        blocks = list(content)
    return AssistantMessage(
        content=blocks,
        api=_DEFAULT_API,
        provider=_DEFAULT_PROVIDER,
        model=_DEFAULT_MODEL_ID,
        usage=Usage(),
        stop_reason=stop_reason,
        error_message=error_message,
        response_id=response_id,
        timestamp=now_ms() if timestamp is None else timestamp,
    )


@dataclass
class FauxState:
    """Mutable provider state handed to factories; ``call_count`` counts stream calls."""

    call_count: int = 0


@dataclass(frozen=True)
class FauxRequest:
    """One recorded stream call: what the model was asked."""

    model: Model
    context: LlmContext
    options: StreamOptions


@dataclass(frozen=True)
class FauxReply:
    """A scripted reply with streaming knobs.

    :ivar chunk_delay: seconds to wait before each streamed chunk (``None``: the provider's
        pace).
    :ivar usage: reported instead of the estimated usage.
    """

    message: AssistantMessage
    chunk_delay: float | None = None
    usage: Usage | None = None


FauxFactory: TypeAlias = Callable[
    [LlmContext, StreamOptions, FauxState, Model],
    AssistantMessage | FauxReply | Awaitable[AssistantMessage | FauxReply],
]
"""``(context, options, state, model) -> reply``, sync or async: decides a reply from the request."""

FauxStep: TypeAlias = AssistantMessage | FauxReply | FauxFactory


# -- the provider ---------------------------------------------------------------------------


class FauxProvider:
    """A scripted provider: each stream call consumes the next queued step.

    :param responses: the initial steps: replies, :class:`FauxReply` or factories.
    :param api: the ``api`` its models and replies carry (``"faux"``).
    :param provider: the provider name (``"faux"``).
    :param models: model definitions as keyword mappings (``{"id": "faux-r", "reasoning":
        True}``); missing fields default to pi's faux model. Default: one model ``faux-1``.
    :param tokens_per_second: streaming pace; ``None`` or ``0`` streams as fast as possible,
        still yielding to the event loop between chunks.
    :param token_size: ``(min, max)`` tokens per chunk (a token is 4 characters).
    :param exhausted_message: the error reply once the queue is empty.
    :param seed: seeds the chunk-size randomness, for reproducible chunking.
    """

    def __init__(
        self,
        responses: Iterable[FauxStep] = (),
        *,
        api: str = _DEFAULT_API,
        provider: str = _DEFAULT_PROVIDER,
        models: Sequence[Mapping[str, Any]] | None = None,
        tokens_per_second: float | None = None,
        token_size: tuple[int, int] = _DEFAULT_TOKEN_SIZE,
        exhausted_message: str = FAUX_NO_MORE_RESPONSES,
        seed: int | None = None,
    ) -> None:
        self.api = api
        self.provider = provider
        low = max(1, min(token_size))
        self._token_size = (low, max(low, max(token_size)))
        self.tokens_per_second = tokens_per_second
        self.exhausted_message = exhausted_message
        self.state = FauxState()
        self.requests: list[FauxRequest] = []
        self._responses: deque[FauxStep] = deque(responses)
        self._rng = random.Random(seed)
        self._prompt_cache: dict[str, str] = {}
        self.models: tuple[Model, ...] = faux_models(models, api=api, provider=provider)

    @property
    def model(self) -> Model:
        """The first model."""
        return self.models[0]

    def get_model(self, model_id: str | None = None) -> Model | None:
        """The model with ``model_id`` (the first one when omitted), or ``None``."""
        if model_id is None:
            return self.models[0]
        return next((model for model in self.models if model.id == model_id), None)

    @property
    def call_count(self) -> int:
        """How many times :meth:`stream` was called."""
        return self.state.call_count

    @property
    def pending_response_count(self) -> int:
        """How many queued steps are left."""
        return len(self._responses)

    def set_responses(self, responses: Iterable[FauxStep]) -> None:
        """Replace the queue."""
        self._responses = deque(responses)

    def append_responses(self, responses: Iterable[FauxStep]) -> None:
        """Add steps at the end of the queue."""
        self._responses.extend(responses)

    def as_provider(self) -> Provider:
        """This provider for a provider registry (``Provider(api, stream)``)."""
        return Provider(api=self.api, stream=self.stream)

    def stream(
        self, model: Model, context: LlmContext, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        """The stream function. Consumes the next step at call time, like pi's."""
        step = self._responses.popleft() if self._responses else None
        self.state.call_count += 1
        self.requests.append(FauxRequest(model, context, options))
        return self._stream(step, model, context, options)

    async def _resolve(
        self, step: FauxStep | None, model: Model, context: LlmContext, options: StreamOptions
    ) -> tuple[AssistantMessage, float | None, bool]:
        """The reply to stream and its chunk delay; an error reply and ``True`` if the step
        failed (or the queue is empty)."""
        reply: FauxReply | None = None
        failure: str | None = None
        try:
            if options.on_response is not None:
                await options.on_response(200, {}, model)
            if step is None:
                failure = self.exhausted_message
            else:
                resolved: Any = step(context, options, self.state, model) if callable(step) else step
                if inspect.isawaitable(resolved):
                    resolved = await resolved
                if isinstance(resolved, AssistantMessage):
                    resolved = FauxReply(resolved)
                if not isinstance(resolved, FauxReply):
                    kind = type(resolved).__name__
                    raise TypeError(f"a faux step must give an AssistantMessage or FauxReply, not {kind}")
                reply = resolved
        except Exception as exc:
            failure = str(exc) or type(exc).__name__
        if reply is None:
            error = AssistantMessage(
                content=[],
                api=self.api,
                provider=self.provider,
                model=model.id,
                usage=Usage(),
                stop_reason="error",
                error_message=failure,
                timestamp=now_ms(),
            )
            return self._with_usage(error, context, options), None, True
        message = reply.message.model_copy(
            update={"api": self.api, "provider": self.provider, "model": model.id}
        )
        if reply.usage is not None:
            return message.model_copy(update={"usage": reply.usage}), reply.chunk_delay, False
        return self._with_usage(message, context, options), reply.chunk_delay, False

    # -- streaming --------------------------------------------------------------------------

    def _chunks(self, text: str) -> list[str]:
        low, high = self._token_size
        chunks = []
        index = 0
        while index < len(text):
            size = self._rng.randint(low, high) * _CHARS_PER_TOKEN
            chunks.append(text[index : index + size])
            index += size
        return chunks or [""]

    async def _pace(self, chunk: str, chunk_delay: float | None, signal: AbortSignal | None) -> bool:
        """Wait before a chunk; return ``False`` if the request was aborted meanwhile."""
        delay = chunk_delay
        if delay is None and self.tokens_per_second:
            delay = math.ceil(len(chunk) / _CHARS_PER_TOKEN) / self.tokens_per_second
        if delay:
            if signal is None:
                await anyio.sleep(delay)
            else:
                with signal.scope():
                    await anyio.sleep(delay)
        else:
            await anyio.lowlevel.checkpoint()
        return signal is None or not signal.aborted

    async def _stream(
        self, step: FauxStep | None, model: Model, context: LlmContext, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        message, chunk_delay, failed = await self._resolve(step, model, context, options)
        if failed:
            # Like a provider refusing the request: no start, just the error.
            yield ErrorEvent(reason="error", error=message)
            return
        signal = options.signal
        partial = message.model_copy(update={"content": []})

        def aborted() -> ErrorEvent:
            stopped = partial.model_copy(
                update={
                    "stop_reason": "aborted",
                    "error_message": FAUX_ABORTED_MESSAGE,
                    "timestamp": now_ms(),
                }
            )
            return ErrorEvent(reason="aborted", error=stopped)

        if signal is not None and signal.aborted:
            yield aborted()
            return
        yield StartEvent(partial=partial)
        content: list[TextContent | ThinkingContent | ToolCall] = []

        def grow(block: TextContent | ThinkingContent | ToolCall, index: int) -> AssistantMessage:
            if index == len(content):
                content.append(block)
            else:
                content[index] = block
            return partial.model_copy(update={"content": list(content)})

        for index, block in enumerate(message.content):
            if signal is not None and signal.aborted:
                yield aborted()
                return
            if isinstance(block, ThinkingContent):
                partial = grow(ThinkingContent(thinking=""), index)
                yield ThinkingStartEvent(content_index=index, partial=partial)
                so_far = ""
                for chunk in self._chunks(block.thinking):
                    if not await self._pace(chunk, chunk_delay, signal):
                        yield aborted()
                        return
                    so_far += chunk
                    partial = grow(ThinkingContent(thinking=so_far), index)
                    yield ThinkingDeltaEvent(content_index=index, delta=chunk, partial=partial)
                partial = grow(block, index)
                yield ThinkingEndEvent(content_index=index, content=block.thinking, partial=partial)
            elif isinstance(block, TextContent):
                partial = grow(TextContent(text=""), index)
                yield TextStartEvent(content_index=index, partial=partial)
                so_far = ""
                for chunk in self._chunks(block.text):
                    if not await self._pace(chunk, chunk_delay, signal):
                        yield aborted()
                        return
                    so_far += chunk
                    partial = grow(TextContent(text=so_far), index)
                    yield TextDeltaEvent(content_index=index, delta=chunk, partial=partial)
                partial = grow(block, index)
                yield TextEndEvent(content_index=index, content=block.text, partial=partial)
            else:
                partial = grow(ToolCall(id=block.id, name=block.name, arguments={}), index)
                yield ToolCallStartEvent(content_index=index, partial=partial)
                buffer = ""
                arguments: dict[str, Any] = {}
                for chunk in self._chunks(_compact_json(block.arguments)):
                    if not await self._pace(chunk, chunk_delay, signal):
                        yield aborted()
                        return
                    buffer += chunk
                    arguments = _parse_partial_object(buffer, arguments)
                    partial = grow(ToolCall(id=block.id, name=block.name, arguments=arguments), index)
                    yield ToolCallDeltaEvent(content_index=index, delta=chunk, partial=partial)
                partial = grow(block, index)
                yield ToolCallEndEvent(content_index=index, tool_call=block, partial=partial)

        if message.stop_reason in ("error", "aborted"):
            yield ErrorEvent(reason=message.stop_reason, error=message)
        else:
            yield DoneEvent(reason=message.stop_reason, message=message)

    # -- usage ------------------------------------------------------------------------------

    def _with_usage(
        self, message: AssistantMessage, context: LlmContext, options: StreamOptions
    ) -> AssistantMessage:
        """Estimate usage like pi: 4 characters a token; a session id simulates prompt caching."""
        prompt = _serialize_context(context)
        prompt_tokens = _estimate_tokens(prompt)
        output = _estimate_tokens(_assistant_text(message.content))
        input_tokens, cache_read, cache_write = prompt_tokens, 0, 0
        session_id = options.session_id
        if session_id and options.cache_retention != "none":
            previous = self._prompt_cache.get(session_id)
            if previous is None:
                cache_write = prompt_tokens
            else:
                shared = _common_prefix_length(previous, prompt)
                cache_read = _estimate_tokens(previous[:shared])
                cache_write = _estimate_tokens(prompt[shared:])
                input_tokens = max(0, prompt_tokens - cache_read)
            self._prompt_cache[session_id] = prompt
        usage = Usage(
            input=input_tokens,
            output=output,
            cache_read=cache_read,
            cache_write=cache_write,
            total_tokens=input_tokens + output + cache_read + cache_write,
        )
        return message.model_copy(update={"usage": usage})


def _random_id(prefix: str) -> str:
    return f"{prefix}_{now_ms()}_{os.urandom(5).hex()}"


def _compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _parse_partial_object(buffer: str, previous: dict[str, Any]) -> dict[str, Any]:
    """Best-effort parse of a JSON object prefix; the last good parse if this one fails."""
    try:
        value = pydantic_core.from_json(buffer, allow_partial="trailing-strings")
    except ValueError:
        return previous
    return value if isinstance(value, dict) else previous


def _estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / _CHARS_PER_TOKEN)


def _common_prefix_length(a: str, b: str) -> int:
    limit = min(len(a), len(b))
    index = 0
    while index < limit and a[index] == b[index]:
        index += 1
    return index


def _user_text(content: str | Sequence[TextContent | ImageContent]) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(
        block.text if isinstance(block, TextContent) else f"[image:{block.mime_type}:{len(block.data)}]"
        for block in content
    )


def _assistant_text(content: Sequence[TextContent | ThinkingContent | ToolCall]) -> str:
    parts = []
    for block in content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, ThinkingContent):
            parts.append(block.thinking)
        else:
            parts.append(f"{block.name}:{_compact_json(block.arguments)}")
    return "\n".join(parts)


def _message_text(message: Message) -> str:
    if isinstance(message, AssistantMessage):
        return _assistant_text(message.content)
    if isinstance(message, ToolResultMessage):
        return "\n".join([message.tool_name, *(_user_text([block]) for block in message.content)])
    return _user_text(message.content)


def _serialize_context(context: LlmContext) -> str:
    parts = []
    if context.system_prompt:
        parts.append(f"system:{context.system_prompt}")
    parts.extend(f"{message.role}:{_message_text(message)}" for message in context.messages)
    if context.tools:
        parts.append("tools:" + _compact_json([tool.to_json_dict() for tool in context.tools]))
    return "\n\n".join(parts)


# -- JSON scripts ---------------------------------------------------------------------------


class FauxScriptError(ValueError):
    """A faux script file cannot be read or does not describe replies."""


_SCRIPT_KEYS = ("text", "thinking", "toolCalls", "error", "usage", "stopReason", "delayMs")
_STOP_REASONS = ("stop", "length", "toolUse", "error", "aborted")


def load_faux_script(path: str | os.PathLike[str], **options: Any) -> FauxProvider:
    """Build a :class:`FauxProvider` from a JSON script: a list of replies, one per request.

    Each reply is an object with any of ``text``, ``thinking``, ``toolCalls`` (a list of
    ``{"name": ..., "arguments": {...}, "id": optional}``) and ``error`` (the reply fails with
    that message), plus optional ``usage`` (pi's usage object), ``stopReason`` and ``delayMs``
    (pause before each streamed chunk)::

        [{"text": "Let me look.", "toolCalls": [{"name": "bash", "arguments": {"command": "ls"}}]},
         {"thinking": "Two files.", "text": "There are two files."},
         {"error": "overloaded"}]

    Once every reply is used, further requests get an error reply saying so.

    :param options: passed on to :class:`FauxProvider` (``tokens_per_second``, ``seed`` …).
    :raises FauxScriptError: naming the file (and the entry) that is wrong.
    """
    source = os.fspath(path)
    try:
        text = Path(source).read_text(encoding="utf-8")
    except OSError as exc:
        raise FauxScriptError(f"cannot read faux script {source}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FauxScriptError(
            f"faux script {source} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
    if not isinstance(data, list):
        raise FauxScriptError(
            f"faux script {source} must be a JSON list of replies, not a JSON {_json_type(data)}"
        )
    steps = [_script_reply(entry, index, source) for index, entry in enumerate(data)]
    options.setdefault(
        "exhausted_message",
        f"{FAUX_NO_MORE_RESPONSES}: all {len(steps)} replies of the faux script {source} were used",
    )
    return FauxProvider(steps, **options)


def _json_type(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if value is None:
        return "null"
    return "list" if isinstance(value, list) else type(value).__name__


def _script_reply(entry: Any, index: int, source: str) -> FauxReply:
    def fail(problem: str) -> FauxScriptError:
        return FauxScriptError(f"faux script {source}, entry [{index}]: {problem}")

    if not isinstance(entry, dict):
        raise fail(f"a reply must be a JSON object, not a JSON {_json_type(entry)}")
    unknown = [key for key in entry if key not in _SCRIPT_KEYS]
    if unknown:
        raise fail(f"unknown key {unknown[0]!r} (expected any of: {', '.join(_SCRIPT_KEYS)})")
    if not any(key in entry for key in ("text", "thinking", "toolCalls", "error")):
        raise fail("a reply needs at least one of text, thinking, toolCalls or error")

    def string(key: str) -> str | None:
        value = entry.get(key)
        if value is not None and not isinstance(value, str):
            raise fail(f"{key!r} must be a string, not a JSON {_json_type(value)}")
        return value

    content: list[TextContent | ThinkingContent | ToolCall] = []
    thinking = string("thinking")
    if thinking is not None:
        content.append(ThinkingContent(thinking=thinking))
    text = string("text")
    if text is not None:
        content.append(TextContent(text=text))
    calls = entry.get("toolCalls")
    if calls is not None:
        if not isinstance(calls, list):
            raise fail(f"'toolCalls' must be a list, not a JSON {_json_type(calls)}")
        for number, call in enumerate(calls):
            where = f"toolCalls[{number}]"
            if not isinstance(call, dict) or not isinstance(call.get("name"), str):
                raise fail(f'{where} must be an object with a string "name"')
            arguments = call.get("arguments", {})
            if not isinstance(arguments, dict):
                raise fail(f"{where}.arguments must be an object, not a JSON {_json_type(arguments)}")
            call_id = call.get("id", f"faux_{index}_{number}")
            if not isinstance(call_id, str):
                raise fail(f"{where}.id must be a string")
            content.append(ToolCall(id=call_id, name=call["name"], arguments=arguments))
    error = string("error")

    default_stop: StopReason = "error" if error is not None else ("toolUse" if calls else "stop")
    stop_reason = entry.get("stopReason", default_stop)
    if stop_reason not in _STOP_REASONS:
        raise fail(f"'stopReason' must be one of {', '.join(_STOP_REASONS)}, not {stop_reason!r}")
    if stop_reason in ("error", "aborted") and error is None:
        error = "Request was aborted" if stop_reason == "aborted" else "faux error"

    usage = None
    if "usage" in entry:
        try:
            usage = Usage.model_validate(entry["usage"])
        except ValidationError as exc:
            problem = exc.errors()[0]
            location = ".".join(str(part) for part in problem["loc"])
            raise fail(f"invalid 'usage'{f' at {location}' if location else ''}: {problem['msg']}") from None

    delay = entry.get("delayMs")
    if delay is not None and (isinstance(delay, bool) or not isinstance(delay, int | float) or delay < 0):
        raise fail(f"'delayMs' must be a number of milliseconds >= 0, not {delay!r}")

    message = faux_assistant_message(content, stop_reason=stop_reason, error_message=error)
    return FauxReply(message, chunk_delay=None if delay is None else delay / 1000, usage=usage)
