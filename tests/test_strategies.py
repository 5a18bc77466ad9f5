"""The combination rules, as pure reducers: no event loop, no plugin manager."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pi_host._frozen import FrozenList
from pi_host.errors import HookError
from pi_host.hookspecs import (
    BeforeAgentStartOutcome,
    BeforeAgentStartResult,
    Cancel,
    CompactionResult,
    DiscoveredResources,
    HookContract,
    InputHandled,
    InputTransform,
    NextTurnUpdate,
    ResourcePaths,
    SourcedPath,
    Strategy,
    ToolCallBlock,
    ToolCallRewrite,
    ToolResultPatch,
    get_contract,
    iter_hookspecs,
)
from pi_host.hookspecs._reducers import (
    BeforeAgentStartReducer,
    CollectReducer,
    ContextReducer,
    FirstReducer,
    InputReducer,
    MessageEndReducer,
    NextTurnReducer,
    NotifyReducer,
    PipelineReducer,
    PipelineUntilReducer,
    ResourcesReducer,
    ToolCallReducer,
    ToolResultReducer,
    VetoFailure,
    VetoReducer,
    describe_types,
)
from pi_host.messages import AssistantMessage, CustomMessage, ImageContent, TextContent, UserMessage
from pi_host.plugin import Reducer, ResultRejected, reducer_for
from pi_host.providers import Model

CONTRACTS = {function.__name__: contract for _, function, contract in iter_hookspecs()}


def reducer(hook: str) -> Reducer[Any, Any]:
    return reducer_for(hook, CONTRACTS[hook])


def run(
    red: Reducer[Any, Any], args: Mapping[str, Any], results: Iterable[object], plugin: str = "p"
) -> tuple[Any, list[Mapping[str, Any]]]:
    """Drive a reducer like the dispatcher does; also return the arguments each step saw."""
    state = red.start(args)
    seen = []
    current = args
    for result in results:
        seen.append(current)
        if result is None:
            continue
        step = red.step(state, result, plugin)
        state = step.state
        if step.stop:
            break
        if red.threads:
            current = red.arguments(state, args)
    return red.finish(state), seen


def test_each_builtin_hook_gets_its_reducer() -> None:
    expected = {
        "pi_input": InputReducer,
        "pi_before_agent_start": BeforeAgentStartReducer,
        "pi_resources_discover": ResourcesReducer,
        "pi_context": ContextReducer,
        "pi_message_end": MessageEndReducer,
        "pi_tool_call": ToolCallReducer,
        "pi_tool_result": ToolResultReducer,
        "pi_prepare_next_turn": NextTurnReducer,
        "pi_before_provider_request": PipelineReducer,
        "pi_session_before_compact": FirstReducer,
        "pi_turn_end": NotifyReducer,
    }
    for hook, cls in expected.items():
        assert type(reducer(hook)) is cls, hook
    for hook, contract in CONTRACTS.items():
        if contract.strategy is not Strategy.SYNC:
            assert isinstance(reducer(hook), Reducer)


def test_only_the_veto_hook_fails_closed() -> None:
    closed = {
        hook for hook, c in CONTRACTS.items() if c.strategy is not Strategy.SYNC and reducer(hook).fail_closed
    }
    assert closed == {"pi_tool_call"}


# -- generic strategies ------------------------------------------------------------------------


def test_notify_rejects_any_value() -> None:
    red = reducer("pi_turn_end")
    with pytest.raises(
        ResultRejected, match="pi_turn_end is a notification and ignores results; return None"
    ):
        red.step(red.start({}), "oops", "p")
    assert red.finish(red.start({})) is None


def test_first_keeps_the_first_result_and_stops() -> None:
    red = reducer("pi_session_before_compact")
    compaction = CompactionResult(summary="s", first_kept_entry_id="e", tokens_before=1)
    result, seen = run(red, {}, [None, compaction, Cancel()])
    assert result is compaction
    assert len(seen) == 2  # the Cancel after it is never reached


def test_first_rejects_a_wrong_type_naming_the_hook_and_the_accepted_types() -> None:
    red = reducer("pi_session_before_compact")
    with pytest.raises(ResultRejected) as info:
        red.step(None, {"cancel": True}, "p")
    assert (
        str(info.value)
        == "pi_session_before_compact returned dict; expected Cancel, CompactionResult or None"
    )


def test_first_with_bool_results() -> None:
    red = reducer("pi_will_continue_run")
    assert run(red, {}, [None, False, True])[0] is False
    assert run(red, {}, [])[0] is None


def test_collect_keeps_every_result_in_order() -> None:
    red = CollectReducer("pi_x", (int,))
    assert run(red, {}, [1, None, 2, 3])[0] == [1, 2, 3]
    with pytest.raises(ResultRejected):
        red.step((), "a", "p")


def test_generic_pipeline_threads_the_piped_argument() -> None:
    red = reducer("pi_before_provider_request")
    result, seen = run(red, {"payload": {"a": 1}, "model": "m"}, [{"a": 2}, None, {"a": 3}])
    assert result == {"a": 3}
    assert [args["payload"] for args in seen] == [{"a": 1}, {"a": 2}, {"a": 2}]
    assert all(args["model"] == "m" for args in seen)
    assert run(red, {"payload": "p", "model": "m"}, [])[0] == "p"


def test_reducer_for_third_party_hooks() -> None:
    assert isinstance(reducer_for("pi_x", HookContract(Strategy.FIRST, (str,))), FirstReducer)
    assert isinstance(reducer_for("pi_x", HookContract(Strategy.COLLECT, (str,))), CollectReducer)
    piped = reducer_for("pi_x", HookContract(Strategy.PIPELINE, (str,), pipe="text"))
    assert isinstance(piped, PipelineReducer) and piped.pipe == "text"
    for contract in (
        HookContract(Strategy.PIPELINE, (str,)),
        HookContract(Strategy.PIPELINE_UNTIL, (str,), pipe="text"),
    ):
        with pytest.raises(HookError, match="without what it needs"):
            reducer_for("pi_x", contract)


class Deny(str):
    """A block result of a third-party veto hook."""


def test_third_party_veto_blocks_rewrites_and_fails_closed() -> None:
    contract = HookContract(Strategy.VETO, (Deny, str), pipe="request", stop_on=(Deny,))
    veto = reducer_for("pi_x_check", contract)
    assert isinstance(veto, VetoReducer) and veto.fail_closed
    outcome, seen = run(veto, {"request": "a"}, ["b", Deny("no"), "never"])
    assert outcome == Deny("no") and [args["request"] for args in seen] == ["a", "b"]
    assert run(veto, {"request": "a"}, ["b"])[0] == "b"
    assert run(veto, {"request": "a"}, [])[0] is None
    failed = veto.fail(veto.start({"request": "a"}), "p", "ValueError: boom")
    assert failed.stop and veto.finish(failed.state) == VetoFailure("p", "ValueError: boom")
    # Without a pipe, every accepted result blocks.
    plain = reducer_for("pi_x_check", HookContract(Strategy.VETO, (Deny,)))
    assert run(plain, {}, [Deny("x")])[0] == Deny("x")


def test_third_party_pipeline_until_stops_on_its_type() -> None:
    contract = HookContract(Strategy.PIPELINE_UNTIL, (int, str), pipe="value", stop_on=(str,))
    until = reducer_for("pi_x_until", contract)
    assert isinstance(until, PipelineUntilReducer)
    outcome, seen = run(until, {"value": 1}, [2, 3, "done", 4])
    assert outcome == "done" and [args["value"] for args in seen] == [1, 2, 3]
    assert run(until, {"value": 1}, [2])[0] == 2


def test_hookspec_declares_what_each_strategy_needs() -> None:
    from pi_host.hookspecs import hookspec

    with pytest.raises(ValueError, match="PIPELINE needs pipe"):
        hookspec(strategy=Strategy.PIPELINE)
    with pytest.raises(ValueError, match="PIPELINE_UNTIL needs pipe= and stop_on="):
        hookspec(strategy=Strategy.PIPELINE_UNTIL, pipe="x")
    with pytest.raises(ValueError, match="stop_on= is only meaningful"):
        hookspec(strategy=Strategy.FIRST, stop_on=str)


def test_describe_types() -> None:
    assert describe_types((ToolCallBlock, ToolCallRewrite)) == "ToolCallBlock, ToolCallRewrite or None"
    assert describe_types((bool,)) == "bool or None"


# -- pi_input ------------------------------------------------------------------------------------

IMAGE = ImageContent(data="aGk=", mime_type="image/png")


def test_input_transforms_chain_and_each_sees_the_previous_text() -> None:
    red = reducer("pi_input")
    args = {"text": "a", "images": (), "source": "interactive"}
    result, seen = run(red, args, [InputTransform(text="b"), InputTransform(text="c", images=[IMAGE])])
    assert [a["text"] for a in seen] == ["a", "b"]
    assert result == InputTransform(text="c", images=(IMAGE,))


def test_input_transform_without_images_keeps_the_current_ones() -> None:
    red = reducer("pi_input")
    result, _ = run(red, {"text": "a", "images": [IMAGE]}, [InputTransform(text="b")])
    assert result == InputTransform(text="b", images=(IMAGE,))


def test_input_handled_stops_the_chain() -> None:
    red = reducer("pi_input")
    result, seen = run(
        red, {"text": "a", "images": ()}, [InputTransform(text="b"), InputHandled(), InputTransform(text="c")]
    )
    assert result == InputHandled()
    assert len(seen) == 2


def test_input_unchanged_is_none() -> None:
    red = reducer("pi_input")
    assert run(red, {"text": "a", "images": ()}, [None, InputTransform(text="a")])[0] is None


@given(
    st.lists(
        st.one_of(
            st.none(), st.text(max_size=3).map(lambda t: InputTransform(text=t)), st.just(InputHandled())
        )
    )
)
def test_input_matches_a_simple_model(results: list[InputTransform | InputHandled | None]) -> None:
    text = "start"
    expected: object = None
    for result in results:
        if isinstance(result, InputHandled):
            expected = InputHandled()
            break
        if isinstance(result, InputTransform):
            text = result.text
    else:
        expected = None if text == "start" else InputTransform(text=text, images=())
    assert run(reducer("pi_input"), {"text": "start", "images": ()}, results)[0] == expected


# -- pi_before_agent_start -----------------------------------------------------------------------


def test_before_agent_start_collects_messages_and_chains_the_system_prompt() -> None:
    red = reducer("pi_before_agent_start")
    first = CustomMessage(custom_type="a", content="one")
    second = CustomMessage(custom_type="b", content="two")
    result, seen = run(
        red,
        {"prompt": "hi", "system_prompt": "base"},
        [
            BeforeAgentStartResult(message=first, system_prompt="base+1"),
            BeforeAgentStartResult(message=second),
            BeforeAgentStartResult(system_prompt="base+1+3"),
        ],
    )
    assert [a["system_prompt"] for a in seen] == ["base", "base+1", "base+1"]
    assert result == BeforeAgentStartOutcome(messages=(first, second), system_prompt="base+1+3")


def test_before_agent_start_without_replacement_reports_no_system_prompt() -> None:
    red = reducer("pi_before_agent_start")
    assert run(red, {"system_prompt": "base"}, [])[0] == BeforeAgentStartOutcome()


# -- pi_context and pi_message_end ---------------------------------------------------------------


def test_context_pipeline_accepts_lists_and_tuples_and_returns_a_list() -> None:
    red = reducer("pi_context")
    one, two = UserMessage(content="1"), UserMessage(content="2")
    result, seen = run(red, {"messages": [one, two]}, [(two,), None, [one]])
    assert result == [one]
    # A returned list or tuple reaches the next implementation as a read-only list.
    assert [a["messages"] for a in seen] == [[one, two], [two], [two]]
    assert all(type(a["messages"]) is FrozenList for a in seen[1:])


def test_context_rejects_a_list_of_non_messages() -> None:
    red = reducer("pi_context")
    with pytest.raises(ResultRejected, match="item 1 is dict, not a message"):
        red.step([], [UserMessage(content="x"), {"role": "user"}], "p")
    with pytest.raises(ResultRejected, match="pi_context returned str"):
        red.step([], "x", "p")


def test_message_end_replacement_must_keep_the_role() -> None:
    red = reducer("pi_message_end")
    original = AssistantMessage(content=[TextContent(text="a")])
    replaced = original.model_copy(update={"content": [TextContent(text="b")]})
    assert run(red, {"message": original}, [replaced])[0] is replaced
    with pytest.raises(ResultRejected, match="same role \\('assistant'\\), not 'user'"):
        red.step(original, UserMessage(content="x"), "p")


# -- pi_tool_call ------------------------------------------------------------------------------


def test_tool_call_first_block_wins() -> None:
    red = reducer("pi_tool_call")
    result, seen = run(red, {"input": {}}, [None, ToolCallBlock(reason="no"), ToolCallBlock(reason="later")])
    assert result == ToolCallBlock(reason="no")
    assert len(seen) == 2


def test_tool_call_rewrites_are_seen_by_later_implementations() -> None:
    red = reducer("pi_tool_call")
    result, seen = run(
        red,
        {"input": {"command": "ls"}, "tool_name": "bash"},
        [ToolCallRewrite(input={"command": "ls -a"}), None, ToolCallRewrite(input={"command": "ls -la"})],
    )
    assert [a["input"] for a in seen] == [{"command": "ls"}, {"command": "ls -a"}, {"command": "ls -a"}]
    assert result == ToolCallRewrite(input={"command": "ls -la"})


def test_tool_call_block_after_rewrite_is_a_block() -> None:
    red = reducer("pi_tool_call")
    result, _ = run(red, {"input": {}}, [ToolCallRewrite(input={"x": 1}), ToolCallBlock(reason="x")])
    assert result == ToolCallBlock(reason="x")


def test_tool_call_failure_blocks_naming_the_plugin() -> None:
    red = reducer("pi_tool_call")
    step = red.fail(red.start({"input": {}}), "guard", "ValueError: boom")
    assert step.stop
    assert red.finish(step.state) == ToolCallBlock(
        reason='Plugin "guard" failed, blocking execution: ValueError: boom'
    )


def test_tool_call_untouched_is_none() -> None:
    assert run(reducer("pi_tool_call"), {"input": {}}, [None])[0] is None


# -- pi_tool_result ------------------------------------------------------------------------------

TEXT_A, TEXT_B = TextContent(text="a"), TextContent(text="b")


def test_tool_result_patches_apply_field_by_field() -> None:
    red = reducer("pi_tool_result")
    args = {"content": [TEXT_A], "details": {"n": 1}, "is_error": False}
    result, seen = run(
        red,
        args,
        [ToolResultPatch(content=[TEXT_B]), ToolResultPatch(is_error=True), ToolResultPatch(details=None)],
    )
    assert result == ToolResultPatch(content=(TEXT_B,), details=None, is_error=True)
    assert seen[1]["content"] == (TEXT_B,) and seen[1]["details"] == {"n": 1}
    assert seen[2]["is_error"] is True


def test_tool_result_unpatched_is_none() -> None:
    red = reducer("pi_tool_result")
    assert run(red, {"content": [], "details": None, "is_error": False}, [None, ToolResultPatch()])[0] is None


@given(
    st.lists(
        st.fixed_dictionaries(
            {},
            optional={
                "details": st.integers() | st.none(),
                "is_error": st.booleans(),
                "content": st.just([TEXT_B]),
            },
        )
    )
)
def test_tool_result_matches_a_dict_merge(patches: list[dict[str, Any]]) -> None:
    expected: dict[str, Any] = {"content": (TEXT_A,), "details": "d", "is_error": False}
    for patch in patches:
        expected.update({key: tuple(value) if key == "content" else value for key, value in patch.items()})
    result, _ = run(
        reducer("pi_tool_result"),
        {"content": [TEXT_A], "details": "d", "is_error": False},
        [ToolResultPatch(**patch) for patch in patches],
    )
    if any(patches):
        assert result == ToolResultPatch(**expected)
    else:
        assert result is None


# -- pi_resources_discover and pi_prepare_next_turn ----------------------------------------------


def test_resources_are_aggregated_with_their_source() -> None:
    red = reducer("pi_resources_discover")
    state = red.start({})
    state = red.step(state, ResourcePaths(skill_paths=["/a"], prompt_paths=["/p"]), "one").state
    state = red.step(state, ResourcePaths(skill_paths=["/b"], theme_paths=["/t"]), "two").state
    assert red.finish(state) == DiscoveredResources(
        skill_paths=(SourcedPath(path="/a", plugin="one"), SourcedPath(path="/b", plugin="two")),
        prompt_paths=(SourcedPath(path="/p", plugin="one"),),
        theme_paths=(SourcedPath(path="/t", plugin="two"),),
    )


def test_next_turn_updates_merge_and_messages_chain() -> None:
    red = reducer("pi_prepare_next_turn")
    model = Model(id="m", api="faux", provider="faux")
    short = (UserMessage(content="summary"),)
    result, seen = run(
        red,
        {"messages": [UserMessage(content="long")], "message": None},
        [
            NextTurnUpdate(messages=short),
            NextTurnUpdate(thinking_level="low"),
            NextTurnUpdate(model=model, thinking_level="high"),
        ],
    )
    assert seen[1]["messages"] == short
    assert result == NextTurnUpdate(messages=short, model=model, thinking_level="high")
    assert run(red, {"messages": []}, [None])[0] is None


def test_contracts_are_attached_to_the_spec_functions() -> None:
    for _, function, contract in iter_hookspecs():
        assert get_contract(function) is contract
