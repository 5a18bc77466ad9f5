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
    updates = _streamed_updates(reply)
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
    event = _streamed_updates(faux_assistant_message([faux_text("x")]))[-1]
    other = event.model_copy(update={"message": event.message.model_copy()})
    assert other.to_json() == WireModel.to_json(other)


def _streamed_updates(reply: object) -> list[MessageUpdateEvent]:
    faux = FauxProvider([reply])
    agent = Agent(stream_fn=faux.stream, model=faux.models[0])
    updates: list[MessageUpdateEvent] = []

    async def listen(event: object, signal: object) -> None:
        if isinstance(event, MessageUpdateEvent):
            updates.append(event)

    agent.subscribe(listen)
    anyio.run(agent.prompt, "hi")
    return updates


def test_the_loops_unvalidated_update_equals_a_validated_one() -> None:
    updates = _streamed_updates(faux_assistant_message([faux_thinking("hm"), faux_text("hello")]))
    assert updates
    for event in updates:
        validated = MessageUpdateEvent(
            message=event.message, assistant_message_event=event.assistant_message_event
        )
        assert event == validated  # pydantic's equality includes extras and private values
        assert event.model_fields_set == validated.model_fields_set
        assert event.model_extra == validated.model_extra
        assert event.message is validated.message
        assert event.assistant_message_event is validated.assistant_message_event
        assert event.model_dump() == validated.model_dump()


def test_each_update_has_its_own_fields_set() -> None:
    # Regression: the loop's updates once shared one module-level set, so marking a field as
    # set on one event (pydantic's fields set is a plain mutable set) changed them all.
    first, second = _streamed_updates(faux_assistant_message([faux_text("hello")]))[:2]
    first.model_fields_set.add("type")
    assert second.model_fields_set == {"message", "assistant_message_event"}


def test_json_parts_join_to_the_model_based_serialisation() -> None:
    text = 'quotes " backslash \\ newline \n tab \t control \x01 del \x7f ü € 😀 \u2028 </script>'
    updates = _streamed_updates(
        faux_assistant_message([faux_thinking(text), faux_text(text), faux_tool_call("read", {"path": text})])
    )
    for event in updates:
        assert b"".join(event.json_parts()) == WireModel.to_json(event).encode("utf-8")


def test_an_event_with_extra_fields_keeps_the_generic_field_order() -> None:
    event = _streamed_updates(faux_assistant_message([faux_text("x")]))[-1]
    inner = event.assistant_message_event.model_copy(update={"later": 1})
    odd = MessageUpdateEvent(message=event.message, assistant_message_event=inner)
    assert odd.to_json() == WireModel.to_json(odd)
    assert odd.json_parts() == (WireModel.to_json(odd).encode("utf-8"),)


def test_to_json_bytes_is_to_json_encoded_also_where_a_subclass_overrides_to_json() -> None:
    from pi_host.messages import AgentEndEvent, UserMessage
    from pi_host.session import SessionMessageEntry

    message = UserMessage(content="héllo \u2028 😀", timestamp=1)
    event = AgentEndEvent(messages=[message])
    assert event.to_json_bytes() == event.to_json().encode("utf-8")
    entry = SessionMessageEntry(
        id="a1b2c3d4", parent_id=None, timestamp="2026-01-01T00:00:00.000Z", message=message
    )
    assert entry.to_json_bytes() == entry.to_json().encode("utf-8")
    assert '"parentId":null' in entry.to_json()  # the session's own serialisation, not pydantic's
