"""The reply builder's snapshots: built without validation, yet equal to validated instances."""

from __future__ import annotations

import pickle
from typing import Any

import pydantic
import pytest

from pi_host.messages import AssistantMessageEvent
from pi_host.providers import Model
from pi_host.providers._builder import ReplyBuilder


def every_kind_of_event() -> list[AssistantMessageEvent]:
    builder = ReplyBuilder(Model(id="m", api="anthropic-messages", provider="p", max_tokens=10))
    events: list[Any] = [builder.start()]
    thinking, started = builder.open_thinking(signature="")
    events += [started, builder.thinking_delta(thinking, "hm")]
    builder.add_thinking_signature(thinking, "sig")
    events.append(builder.close_thinking(thinking))
    text, started = builder.open_text()
    events += [started, builder.text_delta(text, "Hel"), builder.text_delta(text, "lo")]
    events.append(builder.close_text(text))
    call, started = builder.open_tool_call(id="t1", name="read")
    events += [started, builder.tool_call_delta(call, '{"path": "a'), builder.tool_call_delta(call, '"}')]
    events.append(builder.close_tool_call(call))
    builder.stop_reason = "toolUse"
    events.append(builder.done())
    builder.extra["retryAfterMs"] = 1500
    events.append(builder.fail("error", "boom"))
    return events


@pytest.mark.parametrize("index", range(len(every_kind_of_event())))
def test_builder_instances_equal_validated_ones(index: int) -> None:
    event = every_kind_of_event()[index]
    validated = type(event).model_validate_json(event.to_json())
    assert event == validated
    assert event.to_json() == validated.to_json()
    assert event.model_dump() == validated.model_dump()
    assert pickle.loads(pickle.dumps(event)) == event


def test_builder_instances_are_frozen() -> None:
    event = every_kind_of_event()[5]
    with pytest.raises(pydantic.ValidationError):
        event.type = "other"  # type: ignore[misc,assignment]
