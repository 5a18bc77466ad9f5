"""Before every provider request the loop makes the tool history valid (SPEC §5)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio

from pi_host.agent import Agent, AgentContext, AgentLoopConfig, run_agent_loop
from pi_host.messages import (
    BLOCK_KINDS,
    MESSAGE_KINDS,
    AgentEvent,
    AgentMessage,
    AssistantMessage,
    DoneEvent,
    KindTable,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    convert_to_llm,
    repair_tool_history,
)
from pi_host.providers import LlmContext, Model, StreamOptions

MODEL = Model(id="mock", api="mock-api", provider="mock")


class Stream:
    def __init__(self) -> None:
        self.contexts: list[LlmContext] = []

    def __call__(self, model: Model, context: LlmContext, options: StreamOptions) -> AsyncIterator[Any]:
        self.contexts.append(context)
        return self._events()

    async def _events(self) -> AsyncIterator[Any]:
        await anyio.lowlevel.checkpoint()
        yield DoneEvent(reason="stop", message=AssistantMessage(content=[TextContent(text="ok")]))


def calls(*ids: str, stop_reason: str = "toolUse") -> AssistantMessage:
    return AssistantMessage(
        content=[ToolCall(id=i, name="read", arguments={"path": i}) for i in ids], stop_reason=stop_reason
    )


def result(call_id: str, text: str = "content") -> ToolResultMessage:
    return ToolResultMessage(tool_call_id=call_id, tool_name="read", content=[TextContent(text=text)])


async def ignore(event: AgentEvent) -> None:
    pass


async def sent_for(history: list[AgentMessage], **config: Any) -> list[Message]:
    stream = Stream()
    await run_agent_loop(
        [UserMessage(content="next")],
        AgentContext(messages=history),
        AgentLoopConfig(model=MODEL, stream_fn=stream, **config),
        ignore,
    )
    return stream.contexts[0].messages


def shape(messages: list[Message]) -> list[str]:
    out = []
    for m in messages:
        if isinstance(m, ToolResultMessage):
            out.append(f"result:{m.tool_call_id}{':error' if m.is_error else ''}")
        elif isinstance(m, AssistantMessage):
            out.append("assistant:" + ",".join(b.id for b in m.content if isinstance(b, ToolCall)))
        else:
            out.append(m.role)
    return out


async def test_a_call_without_a_result_gets_a_synthetic_error_result() -> None:
    sent = await sent_for([UserMessage(content="go"), calls("a")])
    assert shape(sent) == ["user", "assistant:a", "result:a:error", "user"]
    synthetic = sent[2]
    assert isinstance(synthetic, ToolResultMessage)
    assert (synthetic.tool_name, synthetic.content) == ("read", [TextContent(text="No result provided")])


async def test_missing_results_follow_the_results_that_exist() -> None:
    sent = await sent_for([UserMessage(content="go"), calls("a", "b", "c"), result("b")])
    assert shape(sent) == ["user", "assistant:a,b,c", "result:b", "result:a:error", "result:c:error", "user"]


async def test_an_orphan_result_is_dropped() -> None:
    sent = await sent_for([UserMessage(content="go"), result("ghost"), AssistantMessage(content=[])])
    assert shape(sent) == ["user", "assistant:", "user"]


async def test_a_duplicate_result_is_dropped() -> None:
    sent = await sent_for(
        [UserMessage(content="go"), calls("a"), result("a", "first"), result("a", "second")]
    )
    assert shape(sent) == ["user", "assistant:a", "result:a", "user"]
    assert sent[2].content == [TextContent(text="first")]  # type: ignore[union-attr]


async def test_failed_and_aborted_replies_are_not_replayed() -> None:
    history: list[AgentMessage] = [
        UserMessage(content="one"),
        calls("x", stop_reason="aborted"),
        UserMessage(content="two"),
        AssistantMessage(content=[TextContent(text="")], stop_reason="error", error_message="overloaded"),
    ]
    sent = await sent_for(history)
    assert shape(sent) == ["user", "user", "user"]


async def test_repair_runs_on_what_convert_to_llm_returns() -> None:
    async def convert(messages: list[AgentMessage]) -> list[Message]:
        # A converter that injects a dangling call must not produce an invalid request.
        return [*messages, calls("injected")]  # type: ignore[list-item]

    sent = await sent_for([UserMessage(content="go")], convert_to_llm=convert)
    assert shape(sent) == ["user", "user", "assistant:injected", "result:injected:error"]


async def test_the_transcript_itself_is_left_as_it_was() -> None:
    stream = Stream()
    history: list[AgentMessage] = [UserMessage(content="go"), calls("a"), result("ghost")]
    agent = Agent(stream_fn=stream, model=MODEL, messages=history)
    await agent.prompt("next")
    assert agent.state.messages[:3] == history
    assert shape(stream.contexts[0].messages) == ["user", "assistant:a", "result:a:error", "user"]


def test_kind_tables_answer_like_an_isinstance_chain() -> None:
    class Quoted(UserMessage):  # a subclass is its base class's kind, as isinstance says
        pass

    table = KindTable(UserMessage, AssistantMessage)
    assert table[Quoted] is UserMessage
    assert table[AssistantMessage] is AssistantMessage
    assert table[ToolResultMessage] is None
    assert table[str] is None
    assert MESSAGE_KINDS[type(result("c1"))] is ToolResultMessage
    assert BLOCK_KINDS[ToolCall] is ToolCall


def test_a_subclassed_message_converts_like_its_base_class() -> None:
    class Quoted(UserMessage):
        pass

    quoted = Quoted(content="quoted")
    history: list[Message] = [quoted, calls("a"), result("a"), result("orphan")]
    assert convert_to_llm(history) == history
    assert repair_tool_history(history) == history[:3]


def test_transform_rewrites_another_models_history_in_one_pass() -> None:
    from pi_host.messages import ImageContent, ThinkingContent
    from pi_host.providers._transform import transform_messages

    text_only = Model(id="mock", api="mock-api", provider="mock", input=["text"])
    image = ImageContent(data="AAAA", mime_type="image/png")
    own = AssistantMessage(
        content=[ThinkingContent(thinking="  "), TextContent(text="mine")],
        api="mock-api",
        provider="mock",
        model="mock",
    )
    other = AssistantMessage(
        content=[ThinkingContent(thinking="hmm"), ToolCall(id="a|1", name="read", arguments={})],
        api="other-api",
        provider="other",
        model="other",
        stop_reason="toolUse",
    )
    history: list[Message] = [
        UserMessage(content=[TextContent(text="look"), image]),
        own,
        other,
        ToolResultMessage(tool_call_id="a|1", tool_name="read", content=[image]),
        calls("b"),
        UserMessage(content="next"),
    ]
    sent = transform_messages(history, text_only, lambda call_id: call_id.replace("|", "_"))
    assert [type(m).__name__ for m in sent] == [
        "UserMessage",
        "AssistantMessage",
        "AssistantMessage",
        "ToolResultMessage",
        "AssistantMessage",
        "ToolResultMessage",  # the orphaned call "b" gets its synthetic result
        "UserMessage",
    ]
    assert sent[0].content[1] == TextContent(text="(image omitted: model does not support images)")  # type: ignore[index]
    assert sent[1].content == [TextContent(text="mine")]  # type: ignore[union-attr]  # empty thinking dropped
    assert sent[2].content == [  # type: ignore[union-attr]
        TextContent(text="hmm"),
        ToolCall(id="a_1", name="read", arguments={}),
    ]
    assert sent[3].tool_call_id == "a_1"  # type: ignore[union-attr]
    assert sent[3].content == [  # type: ignore[union-attr]
        TextContent(text="(tool image omitted: model does not support images)")
    ]
    assert (sent[5].tool_call_id, sent[5].is_error) == ("b", True)  # type: ignore[union-attr]
    assert sent[6] is history[5]
