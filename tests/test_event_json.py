"""Event serialisation: the fast path for message_update writes exactly pi's JSON."""

from __future__ import annotations

import json

import anyio

from pi_host.agent import Agent
from pi_host.messages import MessageUpdateEvent, WireModel
from pi_host.providers import FauxProvider, faux_assistant_message, faux_text, faux_thinking, faux_tool_call


def test_message_update_json_equals_the_generic_serialisation() -> None:
    reply = faux_assistant_message(
        [
            faux_thinking("let me think"),
            faux_text('hello "world" ünïcode'),
            faux_tool_call("read", {"path": "a"}),
        ]
    )
    faux = FauxProvider([reply])
    agent = Agent(stream_fn=faux.stream, model=faux.models[0])
    updates: list[MessageUpdateEvent] = []

    async def listen(event: object, signal: object) -> None:
        if isinstance(event, MessageUpdateEvent):
            updates.append(event)

    agent.subscribe(listen)
    anyio.run(agent.prompt, "hi")
    assert len(updates) > 5
    kinds = set()
    for event in updates:
        fast = event.to_json()
        assert fast == WireModel.to_json(event)
        data = json.loads(fast)
        kinds.add(data["assistantMessageEvent"]["type"])
        assert data["assistantMessageEvent"]["partial"] == data["message"]
    assert {"thinking_delta", "text_delta", "toolcall_delta", "toolcall_end"} <= kinds


def test_message_update_with_a_different_partial_uses_the_generic_path() -> None:
    faux = FauxProvider([faux_assistant_message([faux_text("x")])])
    agent = Agent(stream_fn=faux.stream, model=faux.models[0])
    updates: list[MessageUpdateEvent] = []

    async def listen(event: object, signal: object) -> None:
        if isinstance(event, MessageUpdateEvent):
            updates.append(event)

    agent.subscribe(listen)
    anyio.run(agent.prompt, "hi")
    event = updates[-1]
    other = event.model_copy(update={"message": event.message.model_copy()})
    assert other.to_json() == WireModel.to_json(other)
