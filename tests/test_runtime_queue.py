"""Steering, follow-ups and plugin messages while a run streams: pi's ``agent-session-queue``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from pi_host import (
    Command,
    CommandContext,
    CustomMessage,
    TextContent,
    Tool,
    ToolCallContext,
    ToolResult,
    hookimpl,
)
from pi_host.messages import AssistantMessage, UserMessage
from pi_host.providers import (
    FauxState,
    LlmContext,
    Model,
    StreamOptions,
    faux_assistant_message,
    faux_tool_call,
)
from pi_host.runtime import QueueUpdateEvent, SessionError
from tests.test_runtime_prompt import ECHO, Rig, open_session


class Gate:
    """A tool that blocks until released, so a test can queue messages mid-run."""

    def __init__(self) -> None:
        self.entered = anyio.Event()
        self.release = anyio.Event()

        class Params(BaseModel):
            pass

        async def execute(params: Params, ctx: ToolCallContext) -> ToolResult:
            self.entered.set()
            await self.release.wait()
            return ToolResult(content=[TextContent(text="gate opened")])

        self.tool: Tool[Any] = Tool(name="gate", description="Wait.", parameters=Params, execute=execute)


def user_texts(context: LlmContext) -> list[str]:
    """The text of each user message the model was sent, in order."""
    return [
        message.content
        if isinstance(message.content, str)
        else "".join(block.text for block in message.content if isinstance(block, TextContent))
        for message in context.messages
        if isinstance(message, UserMessage)
    ]


def last_user_text(context: LlmContext) -> str:
    texts = user_texts(context)
    return texts[-1] if texts else ""


def handler(context: LlmContext, options: StreamOptions, state: FauxState, model: Model) -> AssistantMessage:
    """Answers ``handled <last user text>``."""
    return faux_assistant_message(f"handled {last_user_text(context)}")


def gate_call() -> AssistantMessage:
    return faux_assistant_message([faux_tool_call("gate", {}, id="g1")], stop_reason="toolUse")


async def run_with_gate(rig: Rig, gate: Gate, prompt: str, queue: Any) -> None:
    """Prompt; once the gate tool runs, call ``queue()``, then release the gate and finish."""
    async with anyio.create_task_group() as tg:
        tg.start_soon(rig.session.prompt, prompt)
        await gate.entered.wait()
        await queue()
        gate.release.set()


async def test_one_at_a_time_steering_gets_one_model_call_per_message(tmp_path: Path) -> None:
    gate = Gate()
    async with open_session(tmp_path, [gate_call(), handler, handler], tools=[gate.tool]) as rig:

        async def queue() -> None:
            await rig.session.steer("steer 1")
            await rig.session.steer("steer 2")

        await run_with_gate(rig, gate, "start", queue)
        assert rig.assistant_texts() == ["", "handled steer 1", "handled steer 2"]
        assert rig.faux.call_count == 3
        assert user_texts(rig.faux.requests[1].context) == ["start", "steer 1"]


async def test_one_at_a_time_follow_ups_wait_for_the_run_to_finish(tmp_path: Path) -> None:
    gate = Gate()
    steps = [gate_call(), faux_assistant_message("original turn complete"), handler, handler]
    async with open_session(tmp_path, steps, tools=[gate.tool]) as rig:

        async def queue() -> None:
            await rig.session.follow_up("follow-up 1")
            await rig.session.follow_up("follow-up 2")

        await run_with_gate(rig, gate, "start", queue)
        assert rig.assistant_texts() == [
            "",
            "original turn complete",
            "handled follow-up 1",
            "handled follow-up 2",
        ]
        assert rig.faux.call_count == 4


async def test_all_mode_batches_steering_into_one_call(tmp_path: Path) -> None:
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "settings.json").write_text(json.dumps({"steeringMode": "all"}))
    gate = Gate()
    async with open_session(
        tmp_path, [gate_call(), faux_assistant_message("both")], tools=[gate.tool]
    ) as rig:
        assert rig.session.agent.steering_mode == "all"

        async def queue() -> None:
            await rig.session.steer("steer 1")
            await rig.session.steer("steer 2")

        await run_with_gate(rig, gate, "start", queue)
        assert rig.faux.call_count == 2
        assert user_texts(rig.faux.requests[1].context) == ["start", "steer 1", "steer 2"]


async def test_plugin_steer_arrives_before_the_next_model_call(tmp_path: Path) -> None:
    gate = Gate()
    async with open_session(tmp_path, [gate_call(), handler], tools=[gate.tool]) as rig:

        async def queue() -> None:
            await rig.session.send_user_message("from plugin", deliver_as="steer")

        await run_with_gate(rig, gate, "start", queue)
        assert rig.assistant_texts() == ["", "handled from plugin"]
        assert [m.role for m in rig.faux.requests[1].context.messages] == [
            "user",
            "assistant",
            "toolResult",
            "user",
        ]


async def test_custom_messages_delivered_as_steer_and_follow_up(tmp_path: Path) -> None:
    gate = Gate()
    steps = [gate_call(), handler, handler]
    async with open_session(tmp_path, steps, tools=[gate.tool]) as rig:

        async def queue() -> None:
            follow = CustomMessage(custom_type="note", content="later note", display=True)
            steer = CustomMessage(custom_type="note", content="urgent note", display=True)
            await rig.session.send_custom_message(follow, deliver_as="followUp")
            await rig.session.send_custom_message(steer, deliver_as="steer")

        await run_with_gate(rig, gate, "start", queue)
        # The steer goes first (after the tool result), the follow-up once the run would stop.
        assert rig.assistant_texts() == ["", "handled urgent note", "handled later note"]
        assert [m.role for m in rig.session.messages] == [
            "user",
            "assistant",
            "toolResult",
            "custom",
            "assistant",
            "custom",
            "assistant",
        ]


async def test_next_turn_custom_message_goes_with_the_next_prompt(tmp_path: Path) -> None:
    async with open_session(tmp_path, [handler]) as rig:
        note = CustomMessage(custom_type="note", content="context for later", display=False)
        await rig.session.send_custom_message(note, deliver_as="nextTurn")
        assert rig.faux.call_count == 0
        assert rig.session.messages == []
        await rig.session.prompt("question")
        assert user_texts(rig.faux.requests[0].context) == ["question", "context for later"]
        assert [m.role for m in rig.session.messages] == ["user", "custom", "assistant"]


async def test_pending_count_and_display_text_update_before_message_start(tmp_path: Path) -> None:
    gate = Gate()
    seen: list[tuple[str, int, list[str]]] = []

    async with open_session(tmp_path, [gate_call(), handler], tools=[gate.tool]) as rig:

        def watch(event: Any) -> None:
            if event.type == "message_start" and isinstance(event.message, UserMessage):
                text = last_user_text(LlmContext(messages=[event.message]))
                seen.append((text, rig.session.pending_message_count, rig.session.steering_messages))

        rig.session.subscribe(watch)

        async def queue() -> None:
            await rig.session.steer("steer 1")
            assert rig.session.pending_message_count == 1
            assert rig.session.steering_messages == ["steer 1"]

        await run_with_gate(rig, gate, "start", queue)
        assert seen == [("start", 0, []), ("steer 1", 0, [])]
        updates = [(e.steering, e.follow_up) for e in rig.events if isinstance(e, QueueUpdateEvent)]
        assert updates == [(["steer 1"], []), ([], [])]


async def test_clear_queue_returns_and_empties_both_queues(tmp_path: Path) -> None:
    gate = Gate()
    async with open_session(
        tmp_path, [gate_call(), faux_assistant_message("done")], tools=[gate.tool]
    ) as rig:
        cleared: list[Any] = []

        async def queue() -> None:
            await rig.session.steer("s")
            await rig.session.follow_up("f")
            cleared.append(rig.session.clear_queue())
            assert rig.session.pending_message_count == 0
            assert not rig.session.agent.has_queued_messages()

        await run_with_gate(rig, gate, "start", queue)
        assert cleared == [(["s"], ["f"])]
        assert rig.faux.call_count == 2
        assert rig.assistant_texts() == ["", "done"]


class Stats:
    def __init__(self) -> None:
        self.ran_while_streaming: list[bool] = []

    @hookimpl
    def pi_register_commands(self, register: Any) -> None:
        async def stats(args: str, ctx: CommandContext) -> None:
            self.ran_while_streaming.append(not ctx.is_idle())

        register(Command("stats", "Stats", stats))


async def test_plugin_command_runs_immediately_while_streaming(tmp_path: Path) -> None:
    gate = Gate()
    stats = Stats()
    async with open_session(
        tmp_path, [gate_call(), faux_assistant_message("done")], tools=[gate.tool], plugins=[stats]
    ) as rig:

        async def queue() -> None:
            await rig.session.prompt("/stats", streaming_behavior="steer")
            assert stats.ran_while_streaming == [True]
            assert rig.session.pending_message_count == 0

        await run_with_gate(rig, gate, "start", queue)
        assert rig.faux.call_count == 2


async def test_queueing_a_plugin_command_raises_pis_error(tmp_path: Path) -> None:
    async with open_session(tmp_path, [], plugins=[Stats()]) as rig:
        for queue in (rig.session.steer, rig.session.follow_up):
            with pytest.raises(SessionError) as raised:
                await queue("/stats now")
            assert str(raised.value) == (
                'Extension command "/stats" cannot be queued. Use prompt() or execute the command '
                "when not streaming."
            )
        assert rig.session.pending_message_count == 0


class FollowUpOnAgentEnd:
    """Queues one follow-up from ``pi_agent_end``, the way pi's agent_end handlers do."""

    def __init__(self, custom: bool) -> None:
        self.custom = custom
        self.sent = False

    @hookimpl
    def pi_agent_end(self, ctx: Any) -> None:
        if self.sent:
            return
        self.sent = True
        if self.custom:
            note = CustomMessage(custom_type="note", content="follow-up from agent_end", display=True)
            ctx.send_message(note, deliver_as="followUp")
        else:
            ctx.send_user_message("follow-up from agent_end", deliver_as="followUp")


@pytest.mark.parametrize("custom", [False, True], ids=["user", "custom"])
async def test_follow_up_queued_in_agent_end_joins_the_same_prompt(tmp_path: Path, custom: bool) -> None:
    plugin = FollowUpOnAgentEnd(custom)
    async with open_session(tmp_path, [faux_assistant_message("first"), handler], plugins=[plugin]) as rig:
        await rig.session.prompt("start")
        # Regression: the context queued it in a background task, so prompt() returned after
        # the first reply and print mode could exit before the follow-up ran. pi queues at once.
        assert rig.assistant_texts() == ["first", "handled follow-up from agent_end"]
        assert rig.types("agent_start", "agent_end") == ["agent_start", "agent_end"] * 2


async def test_steer_expands_templates(tmp_path: Path) -> None:
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "fix.md").write_text("Fix $1 now.\n")
    gate = Gate()
    async with open_session(
        tmp_path,
        [gate_call(), handler],
        tools=[gate.tool, ECHO],
        options={"prompt_templates": [str(prompts)]},
    ) as rig:

        async def queue() -> None:
            await rig.session.steer("/fix tests")
            # Without frontmatter pi keeps the file's body untrimmed, trailing newline included.
            assert rig.session.steering_messages == ["Fix tests now.\n"]

        await run_with_gate(rig, gate, "start", queue)
        assert rig.assistant_texts() == ["", "handled Fix tests now.\n"]


async def test_next_turn_message_sent_from_pi_input_goes_with_that_prompt(tmp_path: Path) -> None:
    class Annotate:
        @hookimpl
        def pi_input(self, text: str, ctx: Any) -> None:
            note = CustomMessage(custom_type="note", content=f"context for {text}", display=False)
            ctx.send_message(note, deliver_as="nextTurn")

    async with open_session(tmp_path, [handler, handler], plugins=[Annotate()]) as rig:
        await rig.session.prompt("one")
        # Regression: the context queued it from a background task, so it could miss the
        # prompt being prepared; pi pushes it at once.
        assert user_texts(rig.faux.requests[0].context) == ["one", "context for one"]
        await rig.session.prompt("two")
        assert user_texts(rig.faux.requests[1].context)[-2:] == ["two", "context for two"]
