"""The ``task`` tool on the scripted model: children run concurrently, in-process, as linked sessions."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import pi_subagents
import pytest

from pi_host import AssistantMessage, SessionManager, TextContent, ToolResultMessage, UserMessage
from pi_host.testing import HostFactory, Request, reply, tool_call

CHILD_PREFIX = "child task:"


def _is_child(request: Request) -> bool:
    texts = request.user_texts
    return bool(texts) and texts[0].startswith(CHILD_PREFIX)


def _text(message: Any) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(block.text for block in content if isinstance(block, TextContent))


class Children:
    """A responder for a parent that starts three children in one turn.

    Each child's first request records when it entered and left the provider, and waits until
    all three are inside: children run one after another would never get there (the test's
    deadline fails them), so finishing at all proves they overlapped.
    """

    def __init__(self, count: int = 3) -> None:
        self.count = count
        self.inside = 0
        self.all_inside = anyio.Event()
        self.entered: dict[str, float] = {}
        self.left: dict[str, float] = {}

    async def __call__(self, request: Request) -> Any:
        if _is_child(request):
            name = request.user_texts[0].removeprefix(CHILD_PREFIX).strip()
            self.entered[name] = time.monotonic()
            self.inside += 1
            if self.inside == self.count:
                self.all_inside.set()
            await self.all_inside.wait()
            self.left[name] = time.monotonic()
            return reply(f"answer for {name}")
        if not request.tool_results:
            return reply(
                "Splitting the work.",
                tool_calls=[
                    tool_call("task", description=f"look at {name}", prompt=f"{CHILD_PREFIX} {name}")
                    for name in ("alpha", "beta", "gamma")
                ],
            )
        return reply("All three reported.")


async def test_three_tasks_run_concurrently_and_answer_in_source_order(make_host: HostFactory) -> None:
    children = Children()
    host = make_host(pi_subagents, respond=children, tools=["task"])
    with anyio.fail_after(30):
        outcome = await host.run("Look at alpha, beta and gamma.")
    outcome.assert_ok().assert_text("All three reported.")

    # Concurrent: every child entered the provider before any of them left it.
    assert set(children.entered) == {"alpha", "beta", "gamma"}
    assert max(children.entered.values()) < min(children.left.values())

    # Three results, in the order of the calls, each only the child's answer.
    results = outcome.tool_results
    assert [_text(r) for r in results] == ["answer for alpha", "answer for beta", "answer for gamma"]
    assert [r.tool_call_id for r in results] == [c.id for c in outcome.tool_calls]

    # The parent's context: its prompt, its reply with three calls, three answers, its reply.
    session = await host.session()
    roles = [m.role for m in session.messages]
    assert roles == ["user", "assistant", "toolResult", "toolResult", "toolResult", "assistant"]
    parent_request = host.provider.requests[-1]
    assert [m.role for m in parent_request.messages] == roles[:-1]
    assert not any(CHILD_PREFIX in _text(m) for m in parent_request.messages if isinstance(m, UserMessage))

    # Each child is a session file of its own, linked to the parent's.
    parent_file = session.session_manager.session_file
    assert parent_file is not None
    for result in results:
        details = result.details
        child_file = Path(details["sessionFile"])
        header = json.loads(child_file.read_text(encoding="utf-8").splitlines()[0])
        assert header["type"] == "session"
        assert header["parentSession"] == str(parent_file)
        assert header["id"] == details["subagentId"]
        opened = SessionManager.open(child_file)
        assert opened.warnings == []
        child_messages = opened.build_session_context().messages
        assert [m.role for m in child_messages] == ["user", "assistant"]
        assert isinstance(child_messages[-1], AssistantMessage)
        assert _text(child_messages[-1]) == _text(result)
    await host.close()


async def test_children_are_limited_by_max_concurrency(make_host: HostFactory) -> None:
    inside = 0
    most = 0

    async def respond(request: Request) -> Any:
        nonlocal inside, most
        if _is_child(request):
            inside += 1
            most = max(most, inside)
            # Let every other runnable child reach the provider before this one answers.
            for _ in range(20):
                await anyio.sleep(0)
            inside -= 1
            return reply("ok")
        if not request.tool_results:
            return reply(
                tool_calls=[
                    tool_call("task", description=f"job {n}", prompt=f"{CHILD_PREFIX} {n}") for n in range(3)
                ]
            )
        return reply("done")

    host = make_host(
        pi_subagents, respond=respond, tools=["task"], settings={"subagents": {"maxConcurrency": 1}}
    )
    with anyio.fail_after(30):
        outcome = await host.run("go")
    outcome.assert_ok()
    assert most == 1
    assert [_text(r) for r in outcome.tool_results] == ["ok", "ok", "ok"]
    await host.close()


async def test_unknown_subagent_type_is_a_clear_error(make_host: HostFactory) -> None:
    host = make_host(
        pi_subagents,
        replies=[tool_call("task", description="x", prompt="y", subagent_type="nope"), "ok"],
        tools=["task"],
    )
    outcome = await host.run("go")
    text = outcome.result_text()
    assert "Unknown subagent_type 'nope'" in text
    assert "general-purpose" in text
    assert isinstance(outcome.tool_results[0], ToolResultMessage) and outcome.tool_results[0].is_error
    await host.close()


@pytest.mark.parametrize(
    ("frontmatter", "expected"),
    [
        ("tools: Read, frobnicate", "names tool(s) frobnicate, which no loaded plugin provides"),
        ("model: nowhere/no-such-model", "cannot start"),
    ],
    ids=["tool", "model"],
)
async def test_definition_with_unknown_tool_or_model_is_a_clear_error(
    make_host: HostFactory, frontmatter: str, expected: str
) -> None:
    host = make_host(
        pi_subagents,
        load=["tools_fs"],
        replies=[tool_call("task", description="x", prompt="y", subagent_type="odd"), "ok"],
        tools=["task", "read"],
    )
    agents = host.agent_dir / "agents"
    agents.mkdir()
    (agents / "odd.md").write_text(f"---\nname: odd\ndescription: Odd one.\n{frontmatter}\n---\nBe odd.\n")
    outcome = await host.run("go")
    text = outcome.result_text()
    assert expected in text, text
    assert str(agents / "odd.md") in text
    await host.close()
