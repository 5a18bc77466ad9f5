"""Wire models keep pydantic's own per-instance state: nothing is shared behind pydantic's back."""

from __future__ import annotations

from pi_host.messages import UserMessage, parse_message


def test_each_instance_has_its_own_fields_set() -> None:
    # A set shared between instances given the same fields (as an earlier memory saving did)
    # would carry one instance's change to every other one.
    first = parse_message({"role": "user", "content": "one", "timestamp": 1})
    second = parse_message({"role": "user", "content": "two", "timestamp": 2})
    assert first.model_fields_set == second.model_fields_set == {"role", "content", "timestamp"}
    first.model_fields_set.add("extra_field")
    assert second.model_fields_set == {"role", "content", "timestamp"}
    assert UserMessage(content="three").model_fields_set == {"content"}
