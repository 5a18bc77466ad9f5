"""The Agent driven by the faux provider end to end (pi's e2e.test.ts)."""

from __future__ import annotations

import ast
import operator
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from pi_host.agent import Agent, AgentError, Tool, ToolCallContext
from pi_host.messages import (
    AgentEvent,
    AgentMessage,
    AssistantMessage,
    MessageUpdateEvent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResult,
    ToolResultMessage,
    UserMessage,
)
from pi_host.providers import AbortSignal, LlmContext, Model, StreamOptions
from pi_host.providers._faux import (
    FauxProvider,
    FauxState,
    faux_assistant_message,
    faux_text,
    faux_thinking,
    faux_tool_call,
)


class Expression(BaseModel):
    expression: str


_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def _evaluate(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_evaluate(node.left), _evaluate(node.right))  # type: ignore[no-any-return]
    raise ValueError(f"unsupported expression: {ast.dump(node)}")


async def calculate(params: Expression, ctx: ToolCallContext) -> ToolResult:
    value = _evaluate(ast.parse(params.expression, mode="eval"))
    shown = int(value) if float(value).is_integer() else value
    return ToolResult.text(f"{params.expression} = {shown}")


CALCULATE = Tool(
    name="calculate",
    description="Evaluate an arithmetic expression",
    parameters=Expression,
    execute=calculate,
    label="Calculator",
)


def text_of(message: AgentMessage) -> str:
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    return "\n".join(block.text for block in content if isinstance(block, TextContent))


def make_agent(faux: FauxProvider, **options: Any) -> Agent:
    options.setdefault("system_prompt", "You are a helpful assistant.")
    options.setdefault("model", faux.model)
    return Agent(stream_fn=faux.stream, **options)


async def test_basic_text_prompt() -> None:
    faux = FauxProvider([faux_assistant_message("4")])
    agent = make_agent(faux, system_prompt="You are a helpful assistant. Keep your responses concise.")
    await agent.prompt("What is 2+2? Answer with just the number.")
    assert agent.state.is_streaming is False
    assert [m.role for m in agent.state.messages] == ["user", "assistant"]
    reply = agent.state.messages[1]
    assert isinstance(reply, AssistantMessage) and "4" in text_of(reply)
    assert (reply.api, reply.provider, reply.model) == ("faux", "faux", "faux-1")
    request = faux.requests[0]
    assert request.context.system_prompt == "You are a helpful assistant. Keep your responses concise."
    assert request.model is faux.model


async def test_tools_execute_and_pending_tool_calls_are_tracked() -> None:
    faux = FauxProvider(
        [
            faux_assistant_message(
                [
                    faux_text("Let me calculate that."),
                    faux_tool_call("calculate", {"expression": "123 * 456"}, "calc-1"),
                ],
                stop_reason="toolUse",
            ),
            faux_assistant_message("The result is 56088."),
        ]
    )
    agent = make_agent(faux, tools=[CALCULATE])
    snapshots: list[tuple[str, list[str]]] = []

    async def listener(event: AgentEvent, signal: AbortSignal) -> None:
        if event.type in ("tool_execution_start", "tool_execution_end"):
            snapshots.append((event.type, sorted(agent.state.pending_tool_calls)))

    agent.subscribe(listener)
    await agent.prompt("Calculate 123 * 456 using the calculator tool.")
    assert agent.state.is_streaming is False
    assert len(agent.state.messages) >= 4
    result = next(m for m in agent.state.messages if isinstance(m, ToolResultMessage))
    assert "123 * 456 = 56088" in text_of(result)
    assert "56088" in text_of(agent.state.messages[-1])
    assert agent.state.pending_tool_calls == frozenset()
    assert snapshots == [("tool_execution_start", ["calc-1"]), ("tool_execution_end", [])]
    # The second request carries the tool result and the tool's schema.
    second = faux.requests[1].context
    assert [m.role for m in second.messages] == ["user", "assistant", "toolResult"]
    assert second.tools[0].name == "calculate"


async def test_abort_during_streaming() -> None:
    faux = FauxProvider(
        [
            faux_assistant_message(
                "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen"
            )
        ],
        tokens_per_second=20,
        token_size=(2, 2),
    )
    agent = make_agent(faux)
    first_delta = anyio.Event()

    async def listener(event: AgentEvent, signal: AbortSignal) -> None:
        if isinstance(event, MessageUpdateEvent) and event.assistant_message_event.type == "text_delta":
            first_delta.set()

    agent.subscribe(listener)
    async with anyio.create_task_group() as group:
        group.start_soon(agent.prompt, "Count slowly from 1 to 20.")
        await first_delta.wait()
        agent.abort()
    assert agent.state.is_streaming is False
    assert len(agent.state.messages) >= 2
    last = agent.state.messages[-1]
    assert isinstance(last, AssistantMessage)
    assert last.stop_reason == "aborted"
    assert last.error_message == "Request was aborted"
    assert agent.state.error_message == last.error_message
    assert text_of(last) == "one two "  # the partial reply is kept


async def test_lifecycle_events_in_order() -> None:
    faux = FauxProvider([faux_assistant_message("1 2 3 4 5")], token_size=(1, 1))
    agent = make_agent(faux)
    events: list[str] = []

    async def listener(event: AgentEvent, signal: AbortSignal) -> None:
        events.append(event.type)

    agent.subscribe(listener)
    await agent.prompt("Count from 1 to 5.")
    for kind in ("agent_start", "turn_start", "message_start", "message_update", "message_end", "turn_end"):
        assert kind in events
    assert events.index("agent_start") < events.index("message_start") < events.index("message_end")
    assert events.index("message_end") < len(events) - 1 and events[-1] == "agent_end"
    # Sequence A: text_start, three deltas of one token each, text_end.
    assert events == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        *["message_update"] * 5,
        "message_end",
        "turn_end",
        "agent_end",
    ]
    assert len(agent.state.messages) == 2


async def test_context_is_kept_across_turns() -> None:
    def answer(
        context: LlmContext, options: StreamOptions, state: FauxState, model: Model
    ) -> AssistantMessage:
        knows = any(m.role == "user" and "Alice" in text_of(m) for m in context.messages)
        return faux_assistant_message("Your name is Alice." if knows else "I do not know your name.")

    faux = FauxProvider([faux_assistant_message("Nice to meet you, Alice."), answer])
    agent = make_agent(faux)
    await agent.prompt("My name is Alice.")
    assert len(agent.state.messages) == 2
    await agent.prompt("What is my name?")
    assert len(agent.state.messages) == 4
    assert "alice" in text_of(agent.state.messages[3]).lower()


async def test_thinking_blocks_are_preserved() -> None:
    faux = FauxProvider(
        [faux_assistant_message([faux_thinking("step by step"), faux_text("4")])],
        models=[{"id": "faux-reasoning", "reasoning": True}],
    )
    agent = make_agent(faux, thinking_level="low")
    await agent.prompt("What is 2+2?")
    reply = agent.state.messages[1]
    assert isinstance(reply, AssistantMessage)
    assert [block.to_json_dict() for block in reply.content] == [
        {"type": "thinking", "thinking": "step by step"},
        {"type": "text", "text": "4"},
    ]
    assert faux.requests[0].options.reasoning == "low"
    assert reply.model == "faux-reasoning"


async def test_continue_without_messages_raises() -> None:
    agent = make_agent(FauxProvider(), system_prompt="Test")
    with pytest.raises(AgentError, match="No messages to continue from"):
        await agent.continue_()


async def test_continue_from_assistant_tail_raises() -> None:
    faux = FauxProvider()
    agent = make_agent(faux, system_prompt="Test")
    agent.state.messages = [
        AssistantMessage(
            content=[TextContent(text="Hello")],
            api="faux",
            provider="faux",
            model="faux-1",
            stop_reason="stop",
        )
    ]
    with pytest.raises(AgentError, match="Cannot continue from message role: assistant"):
        await agent.continue_()
    assert faux.call_count == 0


async def test_continue_from_a_user_message() -> None:
    faux = FauxProvider([faux_assistant_message("HELLO WORLD")])
    agent = make_agent(faux, system_prompt="You are a helpful assistant. Follow instructions exactly.")
    agent.state.messages = [UserMessage(content=[TextContent(text="Say exactly: HELLO WORLD")])]
    await agent.continue_()
    assert agent.state.is_streaming is False
    assert [m.role for m in agent.state.messages] == ["user", "assistant"]
    assert "HELLO WORLD" in text_of(agent.state.messages[1]).upper()


async def test_continue_from_a_tool_result() -> None:
    faux = FauxProvider([faux_assistant_message("The answer is 8.")])
    agent = make_agent(faux, tools=[CALCULATE])
    agent.state.messages = [
        UserMessage(content=[TextContent(text="What is 5 + 3?")]),
        AssistantMessage(
            content=[
                TextContent(text="Let me calculate that."),
                ToolCall(id="calc-1", name="calculate", arguments={"expression": "5 + 3"}),
            ],
            api="faux",
            provider="faux",
            model="faux-1",
            stop_reason="toolUse",
        ),
        ToolResultMessage(
            tool_call_id="calc-1", tool_name="calculate", content=[TextContent(text="5 + 3 = 8")]
        ),
    ]
    await agent.continue_()
    assert agent.state.is_streaming is False
    assert len(agent.state.messages) >= 4
    last = agent.state.messages[-1]
    assert last.role == "assistant" and "8" in text_of(last)


async def test_a_transcript_with_an_aborted_tool_call_is_repaired_before_the_next_request() -> None:
    release = anyio.Event()
    started = anyio.Event()

    async def slow(params: Expression, ctx: ToolCallContext) -> ToolResult:
        started.set()
        await release.wait()
        return ToolResult.text("never")  # pragma: no cover

    slow_tool = Tool(name="slow", description="", parameters=Expression, execute=slow)
    faux = FauxProvider(
        [
            faux_assistant_message(
                [faux_tool_call("slow", {"expression": "x"}, "s-1")], stop_reason="toolUse"
            ),
            faux_assistant_message("fresh start"),
        ]
    )
    agent = make_agent(faux, tools=[slow_tool])
    async with anyio.create_task_group() as group:
        group.start_soon(agent.prompt, "go")
        await started.wait()
        agent.abort()
    assert [m.role for m in agent.state.messages] == ["user", "assistant", "toolResult", "assistant"]
    assert agent.state.messages[-1].stop_reason == "aborted"  # type: ignore[union-attr]
    # Drop the tool result as a crashed run would have: the next request must still be valid.
    del agent.state.messages[2]
    await agent.prompt("again")
    sent = faux.requests[-1].context.messages
    assert [m.role for m in sent] == ["user", "assistant", "toolResult", "user"]
    synthetic = sent[2]
    assert isinstance(synthetic, ToolResultMessage)
    assert (synthetic.tool_call_id, synthetic.is_error, text_of(synthetic)) == (
        "s-1",
        True,
        "No result provided",
    )


async def test_faux_usage_is_reported_on_the_reply() -> None:
    faux = FauxProvider([faux_assistant_message("12345678")])
    agent = make_agent(faux, system_prompt="")
    await agent.prompt("abcd")
    reply = agent.state.messages[-1]
    assert isinstance(reply, AssistantMessage)
    # "user:abcd" is 9 characters -> 3 tokens; "12345678" -> 2 tokens.
    assert (reply.usage.input, reply.usage.output, reply.usage.total_tokens) == (3, 2, 5)
    assert reply.usage.cost.total == 0


async def test_thinking_and_tool_call_deltas_reach_listeners() -> None:
    faux = FauxProvider(
        [
            faux_assistant_message(
                [faux_thinking("hmm"), faux_tool_call("calculate", {"expression": "1 + 1"}, "c1")],
                stop_reason="toolUse",
            ),
            faux_assistant_message("2"),
        ],
        token_size=(1, 1),
    )
    agent = make_agent(faux, tools=[CALCULATE])
    kinds: list[str] = []

    async def listener(event: AgentEvent, signal: AbortSignal) -> None:
        if isinstance(event, MessageUpdateEvent):
            kinds.append(event.assistant_message_event.type)

    agent.subscribe(listener)
    await agent.prompt("1+1")
    assert kinds[:3] == ["thinking_start", "thinking_delta", "thinking_end"]
    assert kinds[3] == "toolcall_start" and kinds.count("toolcall_end") == 1
    assert isinstance(agent.state.messages[1].content[0], ThinkingContent)  # type: ignore[union-attr]
    assert text_of(agent.state.messages[2]) == "1 + 1 = 2"
