"""Every hook the runtime fires: once, at the documented moment, with the documented payload,
and with the documented effect of its return value (notes §3.5, the hookspecs' docstrings).

Session-lifecycle and model hooks (``pi_session_start|shutdown|before_switch|before_fork|
before_tree|tree``, ``pi_model_select``, ``pi_thinking_level_select``) are covered with their
flows in ``test_runtime_session.py``; this file covers the rest and the order of them all
inside one prompt.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pi_compaction
import pi_compaction.hookspecs
import pytest
from pydantic import BaseModel

from pi_host import (
    BeforeAgentStartResult,
    Cancel,
    Command,
    CompactionResult,
    ContinueRun,
    CustomMessage,
    Flag,
    HookError,
    ImageContent,
    InputHandled,
    InputTransform,
    NextTurnUpdate,
    ResourcePaths,
    TextContent,
    Tool,
    ToolCallBlock,
    ToolCallContext,
    ToolCallRewrite,
    ToolResult,
    ToolResultPatch,
    UserBashResult,
    hookimpl,
)
from pi_host.hookspecs import BranchSummary, CompactionPreparation
from pi_host.messages import AssistantMessage, BashExecutionMessage, ToolResultMessage, UserMessage
from pi_host.providers import faux_assistant_message, faux_tool_call
from pi_host.runtime import ExtensionErrorEvent, SessionAgentEndEvent
from pi_host.session import CustomMessageEntry
from tests.fakeservers import AnthropicServer, anthropic_reply
from tests.test_runtime_prompt import PNG, Rig, open_session, read_session_file

RUN_HOOKS = [
    "input",
    "before_prompt",
    "before_agent_start",
    "agent_start",
    "turn_start",
    "turn_end",
    "prepare_next_turn",
    "agent_end",
    "will_continue_run",
    "after_agent_run",
    "context",
    "before_provider_request",
    "after_provider_response",
    "message_start",
    "message_update",
    "message_end",
    "tool_execution_start",
    "tool_call",
    "tool_execution_update",
    "tool_result",
    "tool_execution_end",
]


def tool_turn(*calls: tuple[str, dict[str, Any]]) -> AssistantMessage:
    blocks = [faux_tool_call(name, args, id=f"call{n}") for n, (name, args) in enumerate(calls)]
    return faux_assistant_message(blocks, stop_reason="toolUse")


def _text(message: ToolResultMessage) -> str:
    return "".join(block.text for block in message.content if isinstance(block, TextContent))


def errors(rig: Rig) -> list[ExtensionErrorEvent]:
    return [e for e in rig.events if isinstance(e, ExtensionErrorEvent)]


# -- the order of everything inside one prompt ----------------------------------------------------


class Timeline:
    """Implements every run hook as a no-op that records its name."""

    def __init__(self) -> None:
        self.log: list[str] = []


def _recorder(name: str) -> Any:
    def impl(self: Timeline, ctx: Any) -> None:
        self.log.append(name)

    impl.__name__ = f"pi_{name}"
    return hookimpl(impl)


for _name in RUN_HOOKS:
    setattr(Timeline, f"pi_{_name}", _recorder(_name))


def squeeze(log: list[str]) -> list[str]:
    """Runs of the same hook collapsed to one (``message_update`` fires per delta)."""
    return [name for i, name in enumerate(log) if i == 0 or log[i - 1] != name]


async def test_documented_order_inside_a_prompt(tmp_path: Path) -> None:
    timeline = Timeline()
    steps = [tool_turn(("echo", {"text": "a"})), faux_assistant_message("done")]
    async with open_session(tmp_path, steps, plugins=[timeline]) as rig:
        await rig.session.prompt("go")
    turn_tail = ["message_start", "message_update", "message_end"]
    assert squeeze(timeline.log) == [
        "input",
        "before_prompt",
        "before_agent_start",
        "agent_start",
        "turn_start",
        "message_start",  # the prompt
        "message_end",
        "context",
        "after_provider_response",  # the faux provider builds no payload: no before_provider_request
        *turn_tail,
        "tool_execution_start",
        "tool_call",
        "tool_result",
        "tool_execution_end",
        "message_start",  # the tool result
        "message_end",
        "turn_end",
        "prepare_next_turn",
        "turn_start",
        "context",
        "after_provider_response",
        *turn_tail,
        "turn_end",
        "prepare_next_turn",
        "agent_end",
        "after_agent_run",
    ]
    # Plugins see each agent event before session subscribers (pi's order).
    assert rig.types("agent_start", "agent_end") == ["agent_start", "agent_end"]


async def test_plugins_see_events_before_subscribers(tmp_path: Path) -> None:
    order: list[str] = []

    class Watch:
        @hookimpl
        def pi_message_start(self, message: Any) -> None:
            order.append(f"plugin:{message.role}")

    async with open_session(tmp_path, [faux_assistant_message("x")], plugins=[Watch()]) as rig:
        rig.session.subscribe(
            lambda e: order.append(f"subscriber:{e.message.role}") if e.type == "message_start" else None
        )
        await rig.session.prompt("hi")
    assert order == ["plugin:user", "subscriber:user", "plugin:assistant", "subscriber:assistant"]


# -- prompt pipeline hooks ------------------------------------------------------------------------


async def test_pi_input_chains_transforms_and_handled_stops(tmp_path: Path) -> None:
    seen: list[tuple[str, str, int, str, str | None]] = []
    new_image = ImageContent(data=PNG, mime_type="image/png")

    class First:
        @hookimpl(tryfirst=True)
        def pi_input(self, text: str, images: Any, source: str, streaming_behavior: Any) -> Any:
            seen.append(("first", text, len(images), source, streaming_behavior))
            if text == "stop":
                return InputHandled()
            return InputTransform(text=f"[{text}]", images=(new_image,))

    class Second:
        @hookimpl
        def pi_input(self, text: str, images: Any, source: str, streaming_behavior: Any) -> Any:
            seen.append(("second", text, len(images), source, streaming_behavior))
            return InputTransform(text=text + "!")

    async with open_session(tmp_path, [faux_assistant_message("ok")], plugins=[First(), Second()]) as rig:
        await rig.session.prompt("stop")
        assert seen == [("first", "stop", 0, "interactive", None)]
        assert rig.faux.call_count == 0
        seen.clear()
        await rig.session.prompt("hello", source="rpc")
        assert seen == [("first", "hello", 0, "rpc", None), ("second", "[hello]", 1, "rpc", None)]
        (sent,) = rig.faux.requests[0].context.messages
        assert sent.content == [TextContent(text="[hello]!"), new_image]


async def test_pi_before_prompt_sees_the_last_reply_and_can_continue_first(tmp_path: Path) -> None:
    seen: list[Any] = []

    class Resume:
        @hookimpl
        def pi_before_prompt(self, message: Any, ctx: Any) -> Any:
            seen.append(None if message is None else message.content[0].text)
            if len(seen) == 2:
                # Drop the last reply and ask again before the new prompt goes out.
                return ContinueRun(messages=tuple(ctx.messages[:-1]))
            return None

    steps = [
        faux_assistant_message("one"),
        faux_assistant_message("one again"),
        faux_assistant_message("two"),
    ]
    async with open_session(tmp_path, steps, plugins=[Resume()]) as rig:
        await rig.session.prompt("first")
        await rig.session.prompt("second")
        assert seen == [None, "one"]
        assert rig.faux.call_count == 3
        assert rig.request_texts(1) == ["user:first"]
        assert rig.assistant_texts() == ["one again", "two"]


async def test_pi_before_agent_start_injects_and_chains_the_system_prompt(tmp_path: Path) -> None:
    seen: list[tuple[str, str, str, Any]] = []

    class A:
        @hookimpl(tryfirst=True)
        def pi_before_agent_start(
            self, prompt: str, images: Any, system_prompt: str, system_prompt_options: Any, ctx: Any
        ) -> Any:
            seen.append(("A", prompt, system_prompt, system_prompt_options))
            return BeforeAgentStartResult(
                system_prompt=system_prompt + "\nA rules.",
                message=CustomMessage(
                    custom_type="a", content="note from A", display=False, details={"x": 1}
                ),
            )

    class B:
        @hookimpl
        def pi_before_agent_start(self, prompt: str, system_prompt: str, ctx: Any) -> Any:
            seen.append(("B", prompt, system_prompt, ctx.system_prompt))
            return BeforeAgentStartResult(system_prompt=system_prompt + "\nB rules.")

    steps = [faux_assistant_message("ok"), faux_assistant_message("ok")]
    async with open_session(tmp_path, steps, plugins=[A(), B()], persist=True) as rig:
        base = rig.session.base_system_prompt
        await rig.session.prompt("hello")
        assert [s[:3] for s in seen] == [("A", "hello", base), ("B", "hello", base + "\nA rules.")]
        assert seen[0][3] == {"cwd": rig.session.cwd, "tools": ["echo"]}
        request = rig.faux.requests[0]
        assert request.context.system_prompt == base + "\nA rules.\nB rules."
        assert rig.request_texts(0) == ["user:hello", "user:note from A"]
        assert [m.role for m in rig.session.messages] == ["user", "custom", "assistant"]
        entries = read_session_file(rig.session.session_manager).get_entries()
        (custom,) = [e for e in entries if isinstance(e, CustomMessageEntry)]
        assert (custom.custom_type, custom.display, custom.details) == ("a", False, {"x": 1})


async def test_pi_before_agent_start_system_prompt_applies_to_one_run_only(tmp_path: Path) -> None:
    class Once:
        def __init__(self) -> None:
            self.calls = 0

        @hookimpl
        def pi_before_agent_start(self, system_prompt: str) -> Any:
            self.calls += 1
            return BeforeAgentStartResult(system_prompt="special") if self.calls == 1 else None

    steps = [faux_assistant_message("ok"), faux_assistant_message("ok")]
    async with open_session(tmp_path, steps, plugins=[Once()]) as rig:
        await rig.session.prompt("one")
        await rig.session.prompt("two")
        assert rig.faux.requests[0].context.system_prompt == "special"
        assert rig.faux.requests[1].context.system_prompt == rig.session.base_system_prompt


async def test_pi_user_bash_result_becomes_a_bash_execution_message(tmp_path: Path) -> None:
    calls: list[tuple[str, bool, str]] = []

    class Shell:
        @hookimpl
        def pi_user_bash(self, command: str, exclude_from_context: bool, cwd: str) -> Any:
            calls.append((command, exclude_from_context, cwd))
            return UserBashResult(output="pi-host\n", exit_code=0)

    async with open_session(tmp_path, [faux_assistant_message("ok")], plugins=[Shell()], persist=True) as rig:
        message = await rig.session.run_user_bash("whoami")
        assert calls == [("whoami", False, rig.session.cwd)]
        assert isinstance(message, BashExecutionMessage)
        assert (message.output, message.exit_code, message.cancelled) == ("pi-host\n", 0, False)
        assert rig.session.messages == [message]
        await rig.session.prompt("and?")
        # pi's text keeps the output as it is, trailing newline included, then closes the fence.
        assert rig.request_texts(0)[0] == "user:Ran `whoami`\n```\npi-host\n\n```"
        stored = read_session_file(rig.session.session_manager).build_session_context().messages
        assert [m.role for m in stored] == ["bashExecution", "user", "assistant"]


# -- run hooks ------------------------------------------------------------------------------------


async def test_agent_and_turn_hooks_payloads(tmp_path: Path) -> None:
    log: list[tuple[Any, ...]] = []

    class Runs:
        @hookimpl
        def pi_agent_start(self, ctx: Any) -> None:
            log.append(("agent_start", ctx.signal is not None, ctx.is_idle()))

        @hookimpl
        def pi_turn_start(self, turn_index: int, timestamp: int) -> None:
            log.append(("turn_start", turn_index, timestamp > 0))

        @hookimpl
        def pi_turn_end(self, turn_index: int, message: Any, tool_results: Any) -> None:
            log.append(("turn_end", turn_index, message.stop_reason, [r.tool_call_id for r in tool_results]))

        @hookimpl
        def pi_agent_end(self, messages: Any) -> None:
            log.append(("agent_end", [m.role for m in messages]))

    steps = [
        tool_turn(("echo", {"text": "a"})),
        faux_assistant_message("done"),
        faux_assistant_message("again"),
    ]
    async with open_session(tmp_path, steps, plugins=[Runs()]) as rig:
        await rig.session.prompt("go")
        await rig.session.prompt("more")
    assert log == [
        ("agent_start", True, False),
        ("turn_start", 0, True),
        ("turn_end", 0, "toolUse", ["call0"]),
        ("turn_start", 1, True),
        ("turn_end", 1, "stop", []),
        ("agent_end", ["user", "assistant", "toolResult", "assistant"]),
        # turnIndex restarts with each run.
        ("agent_start", True, False),
        ("turn_start", 0, True),
        ("turn_end", 0, "stop", []),
        ("agent_end", ["user", "assistant"]),
    ]


async def test_pi_prepare_next_turn_switches_the_model_for_the_next_turn(tmp_path: Path) -> None:
    seen: list[tuple[str, int, int]] = []

    class Switch:
        @hookimpl
        def pi_prepare_next_turn(self, message: Any, tool_results: Any, messages: Any, ctx: Any) -> Any:
            seen.append((message.stop_reason, len(tool_results), len(messages)))
            if message.stop_reason == "toolUse":
                return NextTurnUpdate(model=rig.model("faux-2"), thinking_level="low")
            return None

    steps = [tool_turn(("echo", {"text": "a"})), faux_assistant_message("done")]
    async with open_session(tmp_path, steps, plugins=[Switch()]) as rig:
        await rig.session.prompt("go")
        assert seen == [("toolUse", 1, 3), ("stop", 0, 4)]
        assert [r.model.id for r in rig.faux.requests] == ["faux-1", "faux-2"]
        assert rig.faux.requests[1].options.reasoning == "low"


async def test_pi_will_continue_run_sets_will_retry_on_agent_end(tmp_path: Path) -> None:
    seen: list[str | None] = []

    class Retry:
        @hookimpl
        def pi_will_continue_run(self, message: Any) -> bool:
            seen.append(message.error_message)
            return True

    failure = faux_assistant_message("", stop_reason="error", error_message="overloaded")
    async with open_session(tmp_path, [failure, faux_assistant_message("fine")], plugins=[Retry()]) as rig:
        await rig.session.prompt("go")
        await rig.session.prompt("again")  # a successful reply: not asked
    assert seen == ["overloaded"]
    ends = [e for e in rig.events if isinstance(e, SessionAgentEndEvent)]
    assert [e.will_retry for e in ends] == [True, False]


async def test_pi_after_agent_run_continues_the_run(tmp_path: Path) -> None:
    seen: list[str] = []

    class RetryOnce:
        @hookimpl
        def pi_after_agent_run(self, message: Any, ctx: Any) -> Any:
            seen.append(message.stop_reason)
            if message.stop_reason == "error":
                return ContinueRun(messages=tuple(ctx.messages[:-1]))
            return None

    failure = faux_assistant_message("", stop_reason="error", error_message="overloaded")
    async with open_session(
        tmp_path, [failure, faux_assistant_message("recovered")], plugins=[RetryOnce()]
    ) as rig:
        await rig.session.prompt("go")
        assert seen == ["error", "stop"]
        assert rig.faux.call_count == 2
        assert [m.role for m in rig.session.messages] == ["user", "assistant"]
        assert rig.assistant_texts() == ["recovered"]


# -- provider hooks -------------------------------------------------------------------------------


async def test_pi_context_changes_the_request_not_the_transcript(tmp_path: Path) -> None:
    seen: list[list[str]] = []

    class Trim:
        @hookimpl
        def pi_context(self, messages: Any) -> Any:
            seen.append([m.role for m in messages])
            return [UserMessage(content="only this")]

    steps = [faux_assistant_message("one"), faux_assistant_message("two")]
    async with open_session(tmp_path, steps, plugins=[Trim()]) as rig:
        await rig.session.prompt("first")
        await rig.session.prompt("second")
        assert seen == [["user"], ["user", "assistant", "user"]]
        assert rig.request_texts(1) == ["user:only this"]
        assert [m.role for m in rig.session.messages] == ["user", "assistant", "user", "assistant"]


def fake_anthropic_models(agent_dir: Path, base_url: str) -> None:
    agent_dir.mkdir(parents=True, exist_ok=True)
    models = {
        "providers": {
            "fake": {
                "baseUrl": base_url,
                "api": "anthropic-messages",
                "apiKey": "test-key",
                "models": [{"id": "fake-1", "reasoning": False}],
            }
        }
    }
    (agent_dir / "models.json").write_text(json.dumps(models))


async def test_provider_request_and_response_hooks_on_a_real_http_provider(tmp_path: Path) -> None:
    seen: list[tuple[Any, ...]] = []

    class Payload:
        @hookimpl
        def pi_before_provider_request(self, payload: Any, model: Any) -> Any:
            seen.append(("request", model.id, payload["messages"][-1]["content"]))
            return {**payload, "metadata": {"user_id": "from-plugin"}}

        @hookimpl
        def pi_after_provider_response(self, status: int, headers: Any) -> None:
            seen.append(("response", status, headers.get("content-type")))

    server = AnthropicServer([anthropic_reply("Hello over HTTP")])
    with server:
        fake_anthropic_models(tmp_path / "agent", server.base_url)
        options = {"provider": "fake", "model": "fake-1"}
        async with open_session(tmp_path, plugins=[Payload()], options=options) as rig:
            await rig.session.prompt("hi")
            assert rig.assistant_texts() == ["Hello over HTTP"]
        body = server.requests[0].json()
    assert body["metadata"] == {"user_id": "from-plugin"}
    assert seen[0][:2] == ("request", "fake-1")
    assert json.dumps(seen[0][2]).count("hi") == 1
    assert seen[1] == ("response", 200, "text/event-stream")


async def test_a_plugin_editing_the_request_in_place_changes_only_that_request(tmp_path: Path) -> None:
    """The Anthropic provider reuses each message's wire form in the next request: a plugin that
    edits the body in place (the hookspec says not to) must not leak into later requests."""

    class EditsInPlace:
        calls = 0

        @hookimpl
        def pi_before_provider_request(self, payload: Any) -> None:
            EditsInPlace.calls += 1
            if EditsInPlace.calls == 2:  # the first prompt is history now, no longer the last turn
                payload["messages"][0]["content"][0]["text"] += " [edited]"

    server = AnthropicServer([anthropic_reply("one"), anthropic_reply("two"), anthropic_reply("three")])
    with server:
        fake_anthropic_models(tmp_path / "agent", server.base_url)
        options = {"provider": "fake", "model": "fake-1"}
        async with open_session(tmp_path, plugins=[EditsInPlace()], options=options) as rig:
            for text in ("first", "second", "third"):
                await rig.session.prompt(text)
        _, edited, later = (request.json()["messages"] for request in server.requests)
    assert json.dumps(edited[0]).count("first [edited]") == 1  # in place, as before: sent
    assert "edited" not in json.dumps(later)


# -- message hooks --------------------------------------------------------------------------------


async def test_message_hooks_fire_per_message_and_update_per_delta(tmp_path: Path) -> None:
    log: list[tuple[str, str]] = []

    class Messages:
        @hookimpl
        def pi_message_start(self, message: Any) -> None:
            log.append(("start", message.role))

        @hookimpl
        def pi_message_update(self, message: Any, assistant_message_event: Any) -> None:
            log.append(("update", assistant_message_event.type))

        @hookimpl
        def pi_message_end(self, message: Any) -> None:
            log.append(("end", message.role))

    async with open_session(tmp_path, [faux_assistant_message("hello")], plugins=[Messages()]) as rig:
        await rig.session.prompt("hi")
    updates = [kind for what, kind in log if what == "update"]
    assert [entry for entry in log if entry[0] != "update"] == [
        ("start", "user"),
        ("end", "user"),
        ("start", "assistant"),
        ("end", "assistant"),
    ]
    assert updates[0] == "text_start" and updates[-1] == "text_end"
    assert set(updates[1:-1]) == {"text_delta"}


async def test_message_end_replacement_with_another_role_is_reported_and_ignored(tmp_path: Path) -> None:
    class Wrong:
        @hookimpl
        def pi_message_end(self, message: Any) -> Any:
            if isinstance(message, AssistantMessage):
                return UserMessage(content="not an assistant")
            return None

    async with open_session(tmp_path, [faux_assistant_message("kept")], plugins=[Wrong()]) as rig:
        await rig.session.prompt("hi")
        assert rig.assistant_texts() == ["kept"]
        assert [e.event for e in errors(rig)] == ["pi_message_end"]


# -- tool hooks -----------------------------------------------------------------------------------


class CountParams(BaseModel):
    n: int


async def _count(params: CountParams, ctx: ToolCallContext) -> ToolResult:
    for i in range(params.n):
        await ctx.update(ToolResult(content=[TextContent(text=f"{i + 1}/{params.n}")]))
    return ToolResult(content=[TextContent(text=f"counted {params.n}")], details={"n": params.n})


COUNT = Tool(name="count", description="Count with progress.", parameters=CountParams, execute=_count)


async def test_tool_hooks_payloads_in_order(tmp_path: Path) -> None:
    log: list[tuple[Any, ...]] = []

    class Tools:
        @hookimpl
        def pi_tool_execution_start(self, tool_call_id: str, tool_name: str, args: Any) -> None:
            log.append(("start", tool_call_id, tool_name, dict(args)))

        @hookimpl
        def pi_tool_call(self, tool_call_id: str, tool_name: str, input: Any) -> None:
            log.append(("call", tool_call_id, tool_name, dict(input)))

        @hookimpl
        def pi_tool_execution_update(self, tool_call_id: str, partial_result: Any) -> None:
            log.append(("update", tool_call_id, partial_result.content[0].text))

        @hookimpl
        def pi_tool_result(
            self, tool_call_id: str, input: Any, content: Any, details: Any, is_error: bool
        ) -> None:
            log.append(("result", tool_call_id, dict(input), content[0].text, details, is_error))

        @hookimpl
        def pi_tool_execution_end(self, tool_call_id: str, result: Any, is_error: bool) -> None:
            log.append(("end", tool_call_id, result.content[0].text, is_error))

    steps = [tool_turn(("count", {"n": 2})), faux_assistant_message("done")]
    async with open_session(tmp_path, steps, plugins=[Tools()], tools=[COUNT]) as rig:
        await rig.session.prompt("count")
    assert log == [
        ("start", "call0", "count", {"n": 2}),
        ("call", "call0", "count", {"n": 2}),
        ("update", "call0", "1/2"),
        ("update", "call0", "2/2"),
        ("result", "call0", {"n": 2}, "counted 2", {"n": 2}, False),
        ("end", "call0", "counted 2", False),
    ]


async def test_pi_tool_call_block_rewrite_and_failure(tmp_path: Path) -> None:
    class Guard:
        @hookimpl
        def pi_tool_call(self, tool_name: str, input: Any) -> Any:
            if input["text"] == "secret":
                return ToolCallBlock(reason="no secrets")
            if input["text"] == "boom":
                raise RuntimeError("guard crashed")
            if input["text"] == "rewrite":
                return ToolCallRewrite(input={"text": "rewritten"})
            return None

    class Later:
        def __init__(self) -> None:
            self.seen: list[str] = []

        @hookimpl(trylast=True)
        def pi_tool_call(self, input: Any) -> None:
            self.seen.append(input["text"])

    later = Later()
    calls = [("echo", {"text": t}) for t in ("secret", "boom", "rewrite", "plain")]
    steps = [tool_turn(*calls), faux_assistant_message("done")]
    async with open_session(tmp_path, steps, plugins=[Guard(), later]) as rig:
        await rig.session.prompt("go")
        results = [m for m in rig.session.messages if isinstance(m, ToolResultMessage)]
        texts = [(_text(r), r.is_error) for r in results]
    assert texts[0] == ("no secrets", True)
    # A guard that raises fails closed: the call is blocked and the error reported.
    assert texts[1][1] is True and "guard crashed" in texts[1][0]
    assert texts[2:] == [("echo: rewritten", False), ("echo: plain", False)]
    # The later guard sees the rewritten input; blocked calls never reach it.
    assert later.seen == ["rewritten", "plain"]
    assert [e.event for e in errors(rig)] == ["pi_tool_call"]


async def test_pi_tool_result_patches_chain(tmp_path: Path) -> None:
    class Upper:
        @hookimpl(tryfirst=True)
        def pi_tool_result(self, content: Any) -> Any:
            return ToolResultPatch(content=(TextContent(text=content[0].text.upper()),))

    class Flag_:
        @hookimpl
        def pi_tool_result(self, content: Any, details: Any, is_error: bool) -> Any:
            assert content[0].text == "ECHO: A"
            return ToolResultPatch(is_error=True, details={"seen": details})

    steps = [tool_turn(("echo", {"text": "a"})), faux_assistant_message("done")]
    async with open_session(tmp_path, steps, plugins=[Upper(), Flag_()]) as rig:
        await rig.session.prompt("go")
        (result,) = [m for m in rig.session.messages if isinstance(m, ToolResultMessage)]
    assert result.content == [TextContent(text="ECHO: A")]
    assert result.is_error is True
    assert result.details == {"seen": {"echoed": "a"}}
    assert rig.request_texts(1)[-1] == "toolResult:ECHO: A"


# -- compaction hooks -----------------------------------------------------------------------------


class Compactor:
    """A whole compaction done by hooks: the cut, then the summary."""

    @hookimpl
    def pi_addhooks(self, pluginmanager: Any) -> None:
        # pi-compaction's sequence without pi-compaction registered: its hook comes along.
        pluginmanager.add_hookspecs(pi_compaction.hookspecs)

    @hookimpl
    def pi_register_commands(self, register: Any) -> None:
        register(pi_compaction.compact_command())  # pi's compaction sequence, this class's cut

    def __init__(self, cancel: bool = False, details: Any = None, from_hook: bool = True) -> None:
        self.cancel = cancel
        self.details = details
        self.from_hook = from_hook
        self.log: list[tuple[Any, ...]] = []

    @hookimpl
    def pi_compaction_prepare(self, branch_entries: Any, custom_instructions: Any, reason: str) -> Any:
        self.log.append(("prepare", len(branch_entries), custom_instructions, reason))
        kept = [e for e in branch_entries if e.type == "message"][-2]
        return CompactionPreparation(first_kept_entry_id=kept.id, tokens_before=1234)

    @hookimpl
    def pi_session_before_compact(self, preparation: Any, reason: str, will_retry: bool, signal: Any) -> Any:
        self.log.append(("before_compact", preparation.tokens_before, reason, will_retry, signal.aborted))
        if self.cancel:
            return Cancel()
        return CompactionResult(
            summary="they said hi twice",
            first_kept_entry_id=preparation.first_kept_entry_id,
            tokens_before=preparation.tokens_before,
            details=self.details,
            from_hook=self.from_hook,
        )

    @hookimpl
    def pi_session_compact(
        self, compaction_entry: Any, from_extension: bool, reason: str, will_retry: bool
    ) -> None:
        self.log.append(("compact", compaction_entry.summary, from_extension, reason, will_retry))


async def test_compaction_hooks_write_the_entry(tmp_path: Path) -> None:
    compactor = Compactor()
    steps = [faux_assistant_message("one"), faux_assistant_message("two"), faux_assistant_message("three")]
    async with open_session(tmp_path, steps, plugins=[compactor], persist=True) as rig:
        await rig.session.prompt("first")
        await rig.session.prompt("second")
        result = await rig.session.compact("keep names")
        assert result is not None and result.summary == "they said hi twice"
        branch_size = len(rig.session.session_manager.get_branch()) - 1  # before the compaction entry
        assert compactor.log == [
            ("prepare", branch_size, "keep names", "manual"),
            ("before_compact", 1234, "manual", False, False),
            ("compact", "they said hi twice", True, "manual", False),
        ]
        assert rig.types("compaction_start", "compaction_end") == ["compaction_start", "compaction_end"]
        assert [m.role for m in rig.session.messages] == ["compactionSummary", "user", "assistant"]
        await rig.session.prompt("third")
        assert rig.request_texts(2)[0].startswith(
            "user:The conversation history before this point was compacted into the following summary:"
        )
        (entry,) = [
            e for e in read_session_file(rig.session.session_manager).get_entries() if e.type == "compaction"
        ]
        assert entry.to_json_dict()["fromHook"] is True


@pytest.mark.parametrize("from_hook", [True, False])
async def test_the_summariser_states_from_hook_whatever_its_details_look_like(
    tmp_path: Path, from_hook: bool
) -> None:
    """Regression (#14): the host recorded ``fromHook: false`` for any ``details`` shaped like
    pi's file lists, so a plugin's summary with such details passed for pi's own."""
    import pi_host

    assert pi_host.CompactionPreparation is CompactionPreparation  # a top-level name now
    pi_shaped = {"readFiles": ["a.py"], "modifiedFiles": []}
    compactor = Compactor(details=pi_shaped, from_hook=from_hook)
    steps = [faux_assistant_message("one"), faux_assistant_message("two")]
    async with open_session(tmp_path, steps, plugins=[compactor], persist=True) as rig:
        await rig.session.prompt("first")
        await rig.session.prompt("second")
        result = await rig.session.compact()
        assert result is not None and result.from_hook is from_hook
        assert compactor.log[-1][2] is from_hook  # pi_session_compact's from_extension
        (entry,) = [
            e for e in read_session_file(rig.session.session_manager).get_entries() if e.type == "compaction"
        ]
        assert entry.to_json_dict().get("fromHook", False) is from_hook
        assert entry.details == pi_shaped


async def test_compaction_cancelled_by_a_hook(tmp_path: Path) -> None:
    compactor = Compactor(cancel=True)
    steps = [faux_assistant_message("one"), faux_assistant_message("two")]
    async with open_session(tmp_path, steps, plugins=[compactor]) as rig:
        await rig.session.prompt("first")
        await rig.session.prompt("second")
        assert await rig.session.compact() is None
        assert [name for name, *_ in compactor.log] == ["prepare", "before_compact"]
        end = [e for e in rig.events if e.type == "compaction_end"][-1]
        assert (end.reason, end.aborted) == ("manual", True)
        assert len(rig.session.messages) == 4


async def test_pi_summarize_branch_writes_the_branch_summary(tmp_path: Path) -> None:
    seen: list[tuple[Any, ...]] = []

    class Summarizer:
        @hookimpl
        def pi_summarize_branch(
            self, entries: Any, custom_instructions: Any, replace_instructions: bool, signal: Any
        ) -> Any:
            seen.append(
                ([e.type for e in entries], custom_instructions, replace_instructions, signal.aborted)
            )
            return BranchSummary(summary="they talked", details={"by": "test"})

    steps = [faux_assistant_message("one"), faux_assistant_message("two")]
    async with open_session(tmp_path, steps, plugins=[Summarizer()], persist=True) as rig:
        await rig.session.prompt("first")
        await rig.session.prompt("second")
        manager = rig.session.session_manager
        second_user = [e.id for e in manager.get_branch() if e.type == "message"][2]
        outcome = await rig.session.navigate_tree(second_user, summarize=True, custom_instructions="short")
        assert outcome.cancelled is False
        # Going back to the second prompt leaves only its reply behind: the prompt itself is
        # the common ancestor (it goes back to the editor), as pi's collectEntriesForBranchSummary.
        assert seen == [(["message"], "short", False, False)]
        leaf = manager.get_leaf_entry()
        assert leaf is not None and leaf.type == "branch_summary"
        assert leaf.to_json_dict()["summary"] == "they talked"
        assert leaf.to_json_dict().get("fromHook") is None  # generated, not supplied by before_tree


# -- registration hooks ---------------------------------------------------------------------------


async def test_registration_hooks_and_runtime_registration(tmp_path: Path) -> None:
    ran: list[str] = []

    class Registers:
        @hookimpl
        def pi_register_commands(self, register: Any) -> None:
            async def hello(args: str, ctx: Any) -> None:
                ran.append(f"hello {args}")
                ctx.register_tool(COUNT)  # a tool registered at runtime is active at once

            register(Command("hello", "Say hello", hello))

        @hookimpl
        def pi_register_flags(self, register: Any) -> None:
            register(Flag("loud", "boolean", default=False, description="Be loud"))

    class Duplicate:
        @hookimpl
        def pi_register_commands(self, register: Any) -> None:
            async def other(args: str, ctx: Any) -> None:
                ran.append("duplicate")

            register(Command("hello", "Another hello", other))

    options = {"flags": {"loud": True}}
    async with open_session(tmp_path, [], plugins=[Registers(), Duplicate()], options=options) as rig:
        session = rig.session
        # pi suffixes duplicate command names so both stay reachable. The plugin pluggy calls
        # first (the one registered last) keeps the plain name.
        assert sorted(name for name in session.host.commands if name.startswith("hello")) == [
            "hello",
            "hello:1",
        ]
        assert session.get_flag("loud") is True
        await session.prompt("/hello")
        await session.prompt("/hello:1 world")
        assert ran == ["duplicate", "hello world"]
        assert session.active_tool_names == ["echo", "count"]
        assert "count" in [tool.name for tool in session.agent.state.tools]


async def test_pi_configure_fires_once_before_tools_are_collected(tmp_path: Path) -> None:
    class Configured:
        def __init__(self) -> None:
            self.configs: list[tuple[Any, ...]] = []
            self.greeting = "unconfigured"

        @hookimpl
        def pi_configure(self, config: Any) -> None:
            section = config.settings.get("myPlugin", {})
            self.configs.append((config.cwd, config.mode, section, config.get_flag("loud")))
            self.greeting = section.get("greeting", "none")

        @hookimpl
        def pi_register_tools(self, register: Any) -> None:
            register(
                Tool(
                    name="greet", description=f"Say {self.greeting}.", parameters=CountParams, execute=_count
                )
            )

    plugin = Configured()
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "settings.json").write_text(json.dumps({"myPlugin": {"greeting": "hej"}}))
    options = {"flags": {"loud": True}, "tools": ["greet"], "mode": "json"}
    async with open_session(tmp_path, plugins=[plugin], tools=[], options=options) as rig:
        assert plugin.configs == [(rig.session.cwd, "json", {"greeting": "hej"}, True)]
        assert rig.session.host.tools["greet"].description == "Say hej."
        assert [tool.description for tool in rig.session.agent.state.tools] == ["Say hej."]


async def test_pi_resources_discover_adds_skills_and_templates_after_session_start(tmp_path: Path) -> None:
    skill_dir = tmp_path / "plugin-skills" / "lint"
    skill_dir.mkdir(parents=True)
    (skill_dir / "SKILL.md").write_text("---\nname: lint\ndescription: Lint the code.\n---\nRun ruff.\n")
    prompts = tmp_path / "plugin-prompts"
    prompts.mkdir()
    (prompts / "plan.md").write_text("---\ndescription: Plan\n---\nPlan $1 first.\n")
    log: list[tuple[str, ...]] = []

    class Resources:
        @hookimpl
        def pi_session_start(self, reason: str) -> None:
            log.append(("session_start", reason))

        @hookimpl
        def pi_resources_discover(self, cwd: str, reason: str) -> Any:
            log.append(("resources_discover", reason, cwd))
            return ResourcePaths(
                skill_paths=(str(skill_dir), str(tmp_path / "missing")), prompt_paths=(str(prompts),)
            )

    read = Tool(name="read", description="Read a file.", parameters=CountParams, execute=_count)
    steps = [faux_assistant_message("ok"), faux_assistant_message("ok")]
    async with open_session(tmp_path, steps, plugins=[Resources()], tools=[read], start=False) as rig:
        session = rig.session
        assert "lint" not in session.system_prompt
        await session.start()
        cwd = session.cwd
        assert log == [("session_start", "startup"), ("resources_discover", "startup", cwd)]
        # The skill is listed for the model (the read tool is active) and expands.
        assert "<name>lint</name>" in session.system_prompt
        await session.prompt("/skill:lint")
        assert rig.request_texts(0)[0].startswith('user:<skill name="lint"')
        await session.prompt("/plan release")
        assert rig.request_texts(1)[-1] == "user:Plan release first."
        # A path that does not exist is reported, not fatal.
        assert [e.event for e in errors(rig)] == ["resources_discover"]
        log.clear()
        await session.reload()
        await session.new_session()
        assert [entry[:2] for entry in log] == [
            ("session_start", "reload"),
            ("resources_discover", "reload"),
            ("session_start", "new"),
            ("resources_discover", "startup"),
        ]
        assert [skill.name for skill in session.skills] == ["lint"]


async def test_ctx_system_prompt_follows_the_before_agent_start_chain(tmp_path: Path) -> None:
    seen: list[bool] = []

    class A:
        @hookimpl(tryfirst=True)
        def pi_before_agent_start(self, system_prompt: str) -> Any:
            return BeforeAgentStartResult(system_prompt=system_prompt + "\nA")

    class B:
        @hookimpl
        def pi_before_agent_start(self, system_prompt: str, ctx: Any) -> None:
            seen.append(ctx.system_prompt == system_prompt)

    async with open_session(tmp_path, [faux_assistant_message("x")], plugins=[A(), B()]) as rig:
        await rig.session.prompt("hi")
    assert seen == [True]


class _OrderProbe:
    """Reads the session's own ``pi_tool_call`` order at session start."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    @hookimpl(tryfirst=True)
    def pi_tool_call(self, tool_name: str) -> None:
        return None

    @hookimpl
    def pi_session_start(self, ctx: Any) -> None:
        self.seen = ctx.hook_implementations("pi_tool_call")


class _LastCheck:
    @hookimpl(trylast=True)
    def pi_tool_call(self, tool_name: str) -> None:
        return None


async def test_hook_implementations_lists_the_sessions_own_plugins_in_call_order(make_host: Any) -> None:
    with_last, alone = _OrderProbe(), _OrderProbe()
    first = make_host(with_last, _LastCheck())
    second = make_host(alone)
    await first.session()
    await second.session()
    assert [(impl.plugin, impl.tryfirst, impl.trylast) for impl in with_last.seen] == [
        ("_OrderProbe", True, False),
        ("_LastCheck", False, True),
    ]
    assert with_last.seen[0].function.endswith("_OrderProbe.pi_tool_call")
    assert [impl.plugin for impl in alone.seen] == ["_OrderProbe"]
    session = await first.session()
    with pytest.raises(HookError, match="unknown hook 'pi_no_such_hook'"):
        session.ctx.hook_implementations("pi_no_such_hook")
