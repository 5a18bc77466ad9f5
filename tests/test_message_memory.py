"""Wire models share their fields-set bookkeeping, without one instance's changes reaching another."""

from __future__ import annotations

from pi_host.messages import TextContent, ToolResultMessage, UserMessage, parse_message


def test_instances_given_the_same_fields_share_one_fields_set() -> None:
    first = parse_message({"role": "user", "content": "one", "timestamp": 1})
    second = parse_message({"role": "user", "content": "two", "timestamp": 2})
    assert first.model_fields_set is second.model_fields_set
    other = UserMessage(content="three")  # no timestamp given: another combination
    assert other.model_fields_set == {"content"}
    assert other.model_fields_set is not first.model_fields_set


def test_model_copy_does_not_change_the_shared_set() -> None:
    def result(call_id: str, text: str) -> ToolResultMessage:
        return ToolResultMessage(
            tool_call_id=call_id, tool_name="read", content=[TextContent(text=text)], timestamp=1
        )

    first, second = result("a", "x"), result("b", "y")
    changed = first.model_copy(update={"details": {"lines": 1}})
    assert "details" in changed.model_fields_set
    assert "details" not in first.model_fields_set
    assert "details" not in second.model_fields_set
    assert changed.to_json_dict()["details"] == {"lines": 1}
    assert "details" not in second.to_json_dict()


def test_exclude_unset_still_sees_each_instances_own_fields() -> None:
    given = UserMessage(content="hi", timestamp=5)
    assert given.model_dump(exclude_unset=True) == {"content": "hi", "timestamp": 5}
    bare = UserMessage(content="hi")
    assert "timestamp" not in bare.model_dump(exclude_unset=True)
