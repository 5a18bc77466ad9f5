"""The scripted provider: replies queued in advance, or computed from each request.

A thin layer over :class:`pi_host.providers.FauxProvider` that adds the step vocabulary of
the testing kit and keeps every request the model received, for assertions.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from pi_host.hookspecs import hookimpl
from pi_host.messages import (
    AssistantMessage,
    ImageContent,
    Message,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from pi_host.providers import (
    FauxProvider,
    FauxReply,
    FauxState,
    LlmContext,
    Model,
    Provider,
    StreamOptions,
    faux_assistant_message,
)
from pi_host.providers._faux import _script_reply

__all__ = [
    "Request",
    "Responder",
    "ScriptedProvider",
    "Step",
    "error",
    "reply",
    "tool_call",
]

Block: TypeAlias = TextContent | ThinkingContent | ToolCall

Step: TypeAlias = (
    str
    | Block
    | Sequence[Block | str]
    | Mapping[str, Any]
    | AssistantMessage
    | FauxReply
    | Callable[["Request"], Any]
)
"""One model reply, in any of the forms :func:`to_reply` understands."""

Responder: TypeAlias = Callable[["Request"], "Step | Awaitable[Step]"]
"""``respond(request) -> step``, sync or async: computes a reply from what the model was sent."""

_DEFAULT_ID_PREFIX = "call"
_call_ids = itertools.count(1)


# -- the step vocabulary ----------------------------------------------------------------------


def tool_call(
    name: str, arguments: Mapping[str, Any] | None = None, /, *, id: str | None = None, **kwargs: Any
) -> ToolCall:
    """A tool call the scripted model makes: ``tool_call("read", path="a.txt")``.

    Pass ``arguments`` as a dict when an argument is called ``id`` or is not a Python name.
    Without ``id`` the call gets a unique one.
    """
    merged = {**(arguments or {}), **kwargs}
    return ToolCall(id=id or f"{_DEFAULT_ID_PREFIX}_{next(_call_ids)}", name=name, arguments=merged)


def reply(
    text: str | None = None,
    *,
    thinking: str | None = None,
    tool_calls: Iterable[ToolCall] = (),
    usage: Usage | Mapping[str, Any] | None = None,
    delay: float | None = None,
    stop_reason: StopReason | None = None,
) -> FauxReply:
    """One scripted reply: thinking, then text, then tool calls.

    :param usage: reported instead of the estimated usage (a :class:`~pi_host.Usage` or pi's
        camelCase usage object).
    :param delay: seconds before each streamed chunk (to test aborts and steering).
    :param stop_reason: defaults to ``"toolUse"`` when there are tool calls, else ``"stop"``.
    """
    blocks: list[Block] = []
    if thinking is not None:
        blocks.append(ThinkingContent(thinking=thinking))
    if text is not None:
        blocks.append(TextContent(text=text))
    calls = list(tool_calls)
    blocks.extend(calls)
    reason: StopReason = stop_reason or ("toolUse" if calls else "stop")
    usage_value = (
        None if usage is None else usage if isinstance(usage, Usage) else Usage.model_validate(usage)
    )
    return FauxReply(faux_assistant_message(blocks, stop_reason=reason), chunk_delay=delay, usage=usage_value)


def error(message: str, *, aborted: bool = False) -> FauxReply:
    """A reply that fails with ``message`` (stop reason ``error``, or ``aborted``)."""
    reason: StopReason = "aborted" if aborted else "error"
    return FauxReply(faux_assistant_message([], stop_reason=reason, error_message=message))


def to_reply(step: Any, index: int = 0) -> FauxReply:
    """Normalise a step (anything but a callable) into a :class:`FauxReply`.

    - a string: a text reply;
    - a text, thinking or tool-call block: a reply with that block;
    - a list of blocks and strings: one reply with those blocks (several tool calls run in
      one batch);
    - a dict in the JSON script format of ``PI_HOST_FAUX_SCRIPT`` (``text``, ``thinking``,
      ``toolCalls``, ``error``, ``usage``, ``stopReason``, ``delayMs``);
    - an :class:`~pi_host.AssistantMessage` or a :class:`~pi_host.providers.FauxReply`.

    :raises TypeError: for anything else, naming the step.
    """
    if isinstance(step, FauxReply):
        return step
    if isinstance(step, AssistantMessage):
        return FauxReply(step)
    if isinstance(step, str | TextContent | ThinkingContent | ToolCall):
        step = [step]
    if isinstance(step, Mapping):
        return _script_reply(dict(step), index, "the test's steps")
    if isinstance(step, Sequence):
        blocks = [TextContent(text=item) if isinstance(item, str) else item for item in step]
        if not all(isinstance(block, TextContent | ThinkingContent | ToolCall) for block in blocks):
            raise TypeError(
                f"step {index}: a list step holds text, thinking and tool-call blocks, got {step!r}"
            )
        reason: StopReason = "toolUse" if any(isinstance(b, ToolCall) for b in blocks) else "stop"
        return FauxReply(faux_assistant_message(blocks, stop_reason=reason))
    raise TypeError(
        f"step {index}: {step!r} is not a reply; use a string, reply(...), tool_call(...), error(...), "
        "a JSON-script dict or a function of the request"
    )


# -- requests ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """What the scripted model was sent in one provider call.

    :ivar index: 0 for the first call of the provider, 1 for the next …
    :ivar model: the model that was asked.
    :ivar context: the system prompt, messages (after ``pi_context`` and conversion) and tools.
    :ivar options: the stream options (signal, session id, reasoning …).
    """

    index: int
    model: Model
    context: LlmContext
    options: StreamOptions

    @property
    def system_prompt(self) -> str:
        return self.context.system_prompt or ""

    @property
    def messages(self) -> list[Message]:
        return list(self.context.messages)

    @property
    def tool_names(self) -> list[str]:
        """The names of the tools the model could call, in the order they were sent."""
        return [tool.name for tool in self.context.tools or ()]

    @property
    def user_texts(self) -> list[str]:
        """The text of every user message, oldest first."""
        return [
            _text(message.content) for message in self.context.messages if isinstance(message, UserMessage)
        ]

    @property
    def last_user_text(self) -> str | None:
        texts = self.user_texts
        return texts[-1] if texts else None

    @property
    def tool_results(self) -> list[ToolResultMessage]:
        """Every tool result the model can see, oldest first."""
        return [message for message in self.context.messages if isinstance(message, ToolResultMessage)]

    @property
    def last_tool_result(self) -> ToolResultMessage | None:
        """The tool result of the previous turn (the last one, when there were several)."""
        results = self.tool_results
        return results[-1] if results else None


def _text(content: str | Sequence[TextContent | ImageContent]) -> str:
    if isinstance(content, str):
        return content
    return "".join(block.text for block in content if isinstance(block, TextContent))


# -- the provider -----------------------------------------------------------------------------


class ScriptedProvider:
    """A model that plays back steps, then (optionally) asks ``respond`` for each further reply.

    ::

        provider = ScriptedProvider([tool_call("read", path="a.txt"), "It says hello."])
        provider = ScriptedProvider(respond=lambda request: f"you said {request.last_user_text}")

    Once the steps are used up and there is no ``respond``, a request gets an error reply
    (``No more faux responses queued``), the way a real provider error would look.

    :param steps: the replies, in order (see :func:`to_reply`); a callable step is called with
        the :class:`Request` and returns a step (sync or async).
    :param respond: computes every reply after the steps.
    :param name: the provider and API name (``faux``: the model is ``faux/faux-1``).
    :param models: model definitions (``[{"id": "big", "reasoning": True}]``).
    :param tokens_per_second: streaming pace; ``None`` streams as fast as possible.
    """

    def __init__(
        self,
        steps: Iterable[Step] = (),
        *,
        respond: Responder | None = None,
        name: str = "faux",
        models: Sequence[Mapping[str, Any]] | None = None,
        tokens_per_second: float | None = None,
    ) -> None:
        self._faux = FauxProvider(
            api=name, provider=name, models=models, tokens_per_second=tokens_per_second, seed=0
        )
        self._added = 0
        self.respond = respond
        self.add(*steps)

    @property
    def name(self) -> str:
        return self._faux.provider

    @property
    def model(self) -> Model:
        """The first model (the one sessions use unless told otherwise)."""
        return self._faux.model

    @property
    def models(self) -> tuple[Model, ...]:
        return self._faux.models

    @property
    def requests(self) -> list[Request]:
        """Every request so far, oldest first."""
        return [
            Request(index, recorded.model, recorded.context, recorded.options)
            for index, recorded in enumerate(self._faux.requests)
        ]

    @property
    def last_request(self) -> Request:
        """The most recent request.

        :raises AssertionError: if the model was never asked.
        """
        requests = self.requests
        assert requests, "the scripted model received no request"
        return requests[-1]

    @property
    def pending(self) -> int:
        """How many queued steps have not been used."""
        return self._faux.pending_response_count

    def add(self, *steps: Step) -> None:
        """Queue more steps after the current ones."""
        self._faux.append_responses(self._factory(step, self._added + n) for n, step in enumerate(steps))
        self._added += len(steps)

    def assert_used_up(self) -> None:
        """Fail if some queued steps were never requested (the run ended earlier than scripted)."""
        assert self.pending == 0, f"{self.pending} scripted step(s) were never requested by the agent"

    def _factory(self, step: Any, index: int) -> Any:
        if not callable(step) or isinstance(step, FauxReply | AssistantMessage):
            return to_reply(step, index)
        return self._call(step, index)

    def _call(self, function: Callable[[Request], Any], index: int) -> Any:
        async def factory(
            context: LlmContext, options: StreamOptions, state: FauxState, model: Model
        ) -> FauxReply:
            request = Request(state.call_count - 1, model, context, options)
            step = function(request)
            if inspect.isawaitable(step):
                step = await step
            return to_reply(step, index)

        return factory

    def stream(self, model: Model, context: LlmContext, options: StreamOptions) -> Any:
        """The stream function (see :class:`pi_host.providers.StreamFn`)."""
        if self.respond is not None and not self._faux.pending_response_count:
            self._faux.append_responses([self._call(self.respond, self._added)])
        return self._faux.stream(model, context, options)

    def as_provider(self) -> Provider:
        """This provider for registration: no credentials needed."""
        return Provider(api=self.name, stream=self.stream, models=self.models, requires_auth=False)

    def plugin(self) -> object:
        """A plugin that registers this provider (register it after the essentials)."""
        return _ProviderPlugin(self)


class _ProviderPlugin:
    """Registers a :class:`ScriptedProvider`; the testing kit adds it last so it wins over ``faux``."""

    def __init__(self, provider: ScriptedProvider) -> None:
        self._provider = provider

    @hookimpl
    def pi_register_providers(self, register: Callable[[Provider], None]) -> None:
        register(self._provider.as_provider())
