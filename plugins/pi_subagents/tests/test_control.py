"""Control over children: the parent's abort stops them, budgets stop them, depth is bounded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pi_subagents
import pytest
from pi_subagents import SubagentEndEvent, SubagentEvent, SubagentStartEvent

from pi_host import AssistantMessage, SessionManager
from pi_host.testing import HostFactory, Request, reply, tool_call

CHILD = "child task:"


def _is_child(request: Request) -> bool:
    texts = request.user_texts
    return bool(texts) and texts[0].startswith(CHILD)


def _start_tasks(count: int) -> Any:
    return reply(
        tool_calls=[tool_call("task", description=f"job {n}", prompt=f"{CHILD} {n}") for n in range(count)]
    )


async def test_abort_mid_child_stops_every_child_and_leaves_valid_sessions(make_host: HostFactory) -> None:
    inside = 0
    all_inside = anyio.Event()

    async def respond(request: Request) -> Any:
        nonlocal inside
        if _is_child(request):
            inside += 1
            if inside == 2:
                all_inside.set()
            await anyio.sleep_forever()  # until the child's abort cancels its request
        if not request.tool_results:
            return _start_tasks(2)
        return reply("after the abort")

    host = make_host(pi_subagents, respond=respond, tools=["task"])
    session = await host.session()
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(host.run, "go")
            await all_inside.wait()
            await session.abort()
    starts = [e for e in host.events if isinstance(e, SubagentStartEvent)]
    ends = [e for e in host.events if isinstance(e, SubagentEndEvent)]
    assert len(starts) == 2
    assert sorted(e.status for e in ends) == ["aborted", "aborted"]
    state = session.stash[pi_subagents._state.STATE]
    assert state.running == {}
    parent_file = session.session_manager.session_file
    if parent_file is not None:  # the parent's file is valid too
        assert SessionManager.open(parent_file).warnings == []
    results = [m for m in session.messages if m.role == "toolResult"]
    assert len(results) == 2 and all(r.is_error for r in results)
    for start in starts:
        assert start.session_file is not None
        opened = SessionManager.open(Path(start.session_file))
        assert opened.warnings == []
        messages = opened.build_session_context().messages
        assert isinstance(messages[-1], AssistantMessage) and messages[-1].stop_reason == "aborted"
    await host.close()


@pytest.mark.parametrize(
    ("settings", "usage", "expected"),
    [
        ({"childMaxTurns": 2}, None, "it reached its budget of 2 turns (subagents.childMaxTurns)"),
        (
            {"childMaxCost": 0.01},
            {"input": 10, "output": 10, "totalTokens": 20, "cost": {"total": 0.006}},
            "over its budget of $0.0100 (subagents.childMaxCost)",
        ),
        (
            {"runMaxTurns": 3},
            None,
            "reached their budget of 3 turns (subagents.runMaxTurns)",
        ),
        (
            {"runMaxCost": 0.01},
            {"input": 10, "output": 10, "totalTokens": 20, "cost": {"total": 0.006}},
            "this run's children spent $0.0120, over the budget of $0.0100 (subagents.runMaxCost)",
        ),
    ],
    ids=["child-turns", "child-cost", "run-turns", "run-cost"],
)
async def test_a_budget_stops_a_child_with_a_clear_message(
    make_host: HostFactory, settings: dict[str, Any], usage: Any, expected: str
) -> None:
    child_requests = 0

    def respond(request: Request) -> Any:
        nonlocal child_requests
        if _is_child(request):
            child_requests += 1
            # A child that never finishes: every turn calls a tool (one it does not have).
            return reply("still going", tool_calls=[tool_call("missing")], usage=usage)
        if not request.tool_results:
            return _start_tasks(1)
        return reply("stopped")

    host = make_host(pi_subagents, respond=respond, tools=["task"], settings={"subagents": settings})
    with anyio.fail_after(30):
        outcome = await host.run("go")
    text = outcome.result_text()
    assert "Sub-agent 'general-purpose' was stopped: " in text, text
    assert expected in text, text
    assert "Its last message: still going" in text
    assert outcome.tool_results[0].is_error
    assert child_requests <= 4
    ends = [e for e in host.events if isinstance(e, SubagentEndEvent)]
    assert [e.status for e in ends] == ["budget"]
    await host.close()


@pytest.mark.parametrize(("max_depth", "child_tools"), [(1, []), (2, ["task"])])
async def test_depth_limit_decides_whether_a_child_can_start_children(
    make_host: HostFactory, max_depth: int, child_tools: list[str]
) -> None:
    seen: list[list[str]] = []

    def respond(request: Request) -> Any:
        if _is_child(request):
            seen.append(request.tool_names)
            return reply("child done")
        if not request.tool_results:
            return _start_tasks(1)
        return reply("done")

    host = make_host(
        pi_subagents, respond=respond, tools=["task"], settings={"subagents": {"maxDepth": max_depth}}
    )
    outcome = await host.run("go")
    outcome.assert_ok()
    assert seen == [child_tools]
    await host.close()


async def test_child_events_reach_the_parent_tagged_with_the_child_id(make_host: HostFactory) -> None:
    def respond(request: Request) -> Any:
        if _is_child(request):
            if not request.tool_results:
                return reply(tool_calls=[tool_call("missing", path="x")])
            return reply("child done")
        if not request.tool_results:
            return _start_tasks(1)
        return reply("done")

    host = make_host(pi_subagents, respond=respond, tools=["task"])
    outcome = await host.run("go")
    outcome.assert_ok()
    start = next(e for e in host.events if isinstance(e, SubagentStartEvent))
    forwarded = [e for e in host.events if isinstance(e, SubagentEvent)]
    assert {e.subagent_id for e in forwarded} == {start.subagent_id}
    kinds = [e.event["type"] for e in forwarded]
    for kind in ("agent_start", "message_end", "tool_execution_start", "tool_execution_end", "agent_end"):
        assert kind in kinds
    line = forwarded[0].to_json_dict()
    assert line["type"] == "subagent_event" and line["subagentId"] == start.subagent_id
    # The parent's task call reported the child's current tool as it ran.
    updates = [e for e in host.events if getattr(e, "type", None) == "tool_execution_update"]
    assert any((u.partial_result.details or {}).get("currentTool") == "missing x" for u in updates)
    await host.close()


async def test_children_tokens_and_cost_roll_up_into_the_parents_totals(make_host: HostFactory) -> None:
    from pi_host.modes._interactive._footer import UsageTotals

    spent = {
        "input": 100,
        "output": 20,
        "totalTokens": 120,
        "cost": {"input": 0.007, "output": 0.003, "total": 0.01},
    }

    def respond(request: Request) -> Any:
        if _is_child(request):
            if (
                len(request.user_texts) == 1
                and not request.tool_results
                and "stop me" in request.user_texts[0]
            ):
                return reply("looping", tool_calls=[tool_call("missing")], usage=spent)
            return reply("child done", usage=spent)
        if not request.tool_results:
            return reply(
                tool_calls=[
                    tool_call("task", description="a", prompt=f"{CHILD} a"),
                    tool_call("task", description="b", prompt=f"{CHILD} stop me"),
                ],
                usage={"input": 1, "output": 1, "totalTokens": 2, "cost": {"total": 0.001}},
            )
        return reply("done", usage={"input": 1, "output": 1, "totalTokens": 2, "cost": {"total": 0.001}})

    host = make_host(
        pi_subagents, respond=respond, tools=["task"], settings={"subagents": {"childMaxTurns": 1}}
    )
    outcome = await host.run("go")
    ok, stopped = outcome.tool_results
    assert not ok.is_error and stopped.is_error  # the second child hit its turn budget ...
    assert stopped.details["usage"]["cost"]["total"] == pytest.approx(0.01)  # ... and still reports
    session = await host.session()
    totals = UsageTotals.of(session.messages)
    assert totals.cost == pytest.approx(0.022)
    assert totals.input == 202 and totals.output == 42
    await host.close()


async def test_a_grandchild_reports_through_its_parent_to_the_top(make_host: HostFactory) -> None:
    from pi_host.modes._interactive._footer import UsageTotals

    spent = {"input": 1, "output": 1, "totalTokens": 2, "cost": {"total": 0.5}}
    grandchild_tools: list[list[str]] = []

    def respond(request: Request) -> Any:
        first = request.user_texts[0] if request.user_texts else ""
        if first == "grandchild task":
            grandchild_tools.append(request.tool_names)
            return reply("grandchild answer", usage=spent)
        if first.startswith(CHILD):
            if not request.tool_results:
                return reply(tool_calls=[tool_call("task", description="deeper", prompt="grandchild task")])
            return reply("child answer")
        if not request.tool_results:
            return _start_tasks(1)
        return reply("done")

    host = make_host(pi_subagents, respond=respond, tools=["task"], settings={"subagents": {"maxDepth": 2}})
    outcome = await host.run("go")
    outcome.assert_ok()
    assert outcome.result_text() == "child answer"
    assert grandchild_tools == [[]]  # at the depth limit: no task tool
    nested = [
        e.event for e in host.events if isinstance(e, SubagentEvent) and e.event["type"] == "subagent_start"
    ]
    assert len(nested) == 1 and nested[0]["depth"] == 2
    child_start = next(e for e in host.events if isinstance(e, SubagentStartEvent))
    grandchild_file = Path(nested[0]["sessionFile"])
    assert SessionManager.open(grandchild_file).header.parent_session == child_start.session_file
    session = await host.session()
    assert UsageTotals.of(session.messages).cost == pytest.approx(0.5)  # the grandchild's spending
    await host.close()


async def test_a_spent_run_budget_refuses_the_next_child(make_host: HostFactory) -> None:
    child_requests = 0

    def respond(request: Request) -> Any:
        nonlocal child_requests
        if _is_child(request):
            child_requests += 1
            return reply("child done")
        if len(request.tool_results) < 2:  # one task call per turn, twice
            return _start_tasks(1)
        return reply("done")

    host = make_host(
        pi_subagents, respond=respond, tools=["task"], settings={"subagents": {"runMaxTurns": 1}}
    )
    outcome = await host.run("go")
    first, second = outcome.tool_results
    assert not first.is_error
    assert second.is_error
    text = second.content[0].text  # type: ignore[union-attr]
    assert text.startswith("Sub-agent budget spent: this run's children took 1 turns, the limit is 1")
    assert "(subagents.runMaxTurns). Finish with what you have." in text
    assert child_requests == 1  # the second child never started
    await host.close()


async def test_agents_stop_aborts_a_grandchild_by_id_and_its_parent_goes_on(make_host: HostFactory) -> None:
    inside = anyio.Event()
    child_saw: list[str] = []

    async def respond(request: Request) -> Any:
        first = request.user_texts[0] if request.user_texts else ""
        if first == "grandchild task":
            inside.set()
            await anyio.sleep_forever()  # until it is aborted
        if first.startswith(CHILD):
            if not request.tool_results:
                return reply(tool_calls=[tool_call("task", description="deeper", prompt="grandchild task")])
            child_saw.extend(r.content[0].text for r in request.tool_results)  # type: ignore[union-attr]
            return reply("child answer")
        if not request.tool_results:
            return _start_tasks(1)
        return reply("done")

    host = make_host(pi_subagents, respond=respond, tools=["task"], settings={"subagents": {"maxDepth": 2}})
    session = await host.session()
    agents = host.host.commands["agents"]
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(host.run, "go")
            await inside.wait()
            nested = next(
                e.event
                for e in host.events
                if isinstance(e, SubagentEvent) and e.event["type"] == "subagent_start"
            )
            await agents.handler("stop nope", session.ctx)  # type: ignore[arg-type]
            assert "No running sub-agent has the id 'nope'" in host.ui.messages[-1]
            await agents.handler(f"stop {nested['subagentId'][:-6]}", session.ctx)  # type: ignore[arg-type]
    (text,) = child_saw
    assert text.startswith(
        "Sub-agent 'general-purpose' (deeper) was aborted by the user; its task is not done."
    )
    results = [m for m in session.messages if m.role == "toolResult"]
    assert len(results) == 1 and not results[0].is_error  # the child went on and answered
    assert results[0].content[0].text == "child answer"  # type: ignore[union-attr]
    state = session.stash[pi_subagents._state.STATE]
    assert state.running == {}
    await host.close()
