"""AgentSession.prompt on the faux provider: pi's ``agent-session-prompt`` scenarios (notes §3.17).

The rig (:func:`open_session`) is shared by the other ``test_runtime_*`` files: a real
:class:`AgentSession` from :func:`create_session` in plugin safe mode (the essentials plus the
test's own plugins), a scripted :class:`FauxProvider` registered as api ``faux`` by an extra
plugin (extra plugins are called first, so it wins over the built-in one), an ``echo`` tool,
and every session event recorded.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from pi_host import (
    Command,
    CommandContext,
    CustomMessage,
    ImageContent,
    Provider,
    TextContent,
    Tool,
    ToolCallContext,
    ToolResult,
    hookimpl,
)
from pi_host.hookspecs import InputHandled, InputTransform
from pi_host.messages import AssistantMessage, ToolResultMessage, UserMessage
from pi_host.plugin import PluginControls
from pi_host.providers import (
    FauxProvider,
    FauxState,
    LlmContext,
    Model,
    StreamOptions,
    faux_assistant_message,
    faux_tool_call,
)
from pi_host.runtime import AgentSession, Host, SessionError, SessionOptions, create_session
from pi_host.session import CustomMessageEntry, SessionManager, SessionMessageEntry

# -- the rig shared by the runtime tests -----------------------------------------------------


class EchoParams(BaseModel):
    text: str


async def _echo(params: EchoParams, ctx: ToolCallContext) -> ToolResult:
    return ToolResult(content=[TextContent(text=f"echo: {params.text}")], details={"echoed": params.text})


ECHO = Tool(name="echo", description="Echo the text back.", parameters=EchoParams, execute=_echo)


class ScriptedProvider:
    """Registers ``faux`` (and its tools) for one test."""

    def __init__(self, faux: FauxProvider, tools: Sequence[Tool[Any]]) -> None:
        self.faux = faux
        self.tools = tools

    @hookimpl
    def pi_register_providers(self, register: Any) -> None:
        faux = self.faux
        register(Provider(api="faux", stream=faux.stream, models=faux.models, requires_auth=False))

    @hookimpl
    def pi_register_tools(self, register: Any) -> None:
        for tool in self.tools:
            register(tool)


@dataclass
class Rig:
    """An open session and what a test inspects."""

    session: AgentSession
    faux: FauxProvider
    tmp: Path
    events: list[Any] = field(default_factory=list)

    def model(self, model_id: str) -> Model:
        """One of the faux provider's models (they all exist: see :func:`faux_models`)."""
        model = self.faux.get_model(model_id)
        assert model is not None, model_id
        return model

    def types(self, *wanted: str) -> list[str]:
        return [e.type for e in self.events if not wanted or e.type in wanted]

    def assistant_texts(self) -> list[str]:
        return [
            "".join(b.text for b in m.content if isinstance(b, TextContent))
            for m in self.session.messages
            if isinstance(m, AssistantMessage)
        ]

    def request_texts(self, index: int = -1) -> list[str]:
        """The text of every message of one recorded provider request (role: text)."""
        return [_text_of(m) for m in self.faux.requests[index].context.messages]


def _text_of(message: Any) -> str:
    content = message.content
    if isinstance(content, str):
        return f"{message.role}:{content}"
    parts = [getattr(b, "text", None) or f"<{b.type}>" for b in content]
    return f"{message.role}:{''.join(parts)}"


def faux_models(reasoning: bool = False) -> list[dict[str, Any]]:
    return [
        {"id": "faux-1", "reasoning": reasoning},
        {"id": "faux-2", "reasoning": True, "thinkingLevelMap": {"xhigh": "max"}},
        {"id": "faux-plain", "reasoning": False},
    ]


@asynccontextmanager
async def open_session(
    tmp_path: Path,
    steps: Sequence[Any] = (),
    *,
    plugins: Sequence[object] = (),
    tools: Sequence[Tool[Any]] = (ECHO,),
    persist: bool = False,
    options: dict[str, Any] | None = None,
    models: list[dict[str, Any]] | None = None,
    start: bool = True,
) -> AsyncIterator[Rig]:
    """A session bound to a task group (as modes run it); the faux provider is api ``faux``."""
    faux = FauxProvider(list(steps), models=models or faux_models())
    agent_home = tmp_path / "agent"
    agent_home.mkdir(exist_ok=True)
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    host = Host.load(
        controls=PluginControls(allow=frozenset()),
        extra_plugins=[ScriptedProvider(faux, tools), *plugins],
    )
    settings: dict[str, Any] = {
        "provider": "faux",
        "model": "faux-1",
        "agent_dir": str(agent_home),
        "cwd": str(project),
        "no_session": not persist,
        "session_dir": str(tmp_path / "sessions"),
        "no_context_files": True,
        "tools": [tool.name for tool in tools],
    }
    settings.update(options or {})
    session = await create_session(SessionOptions(**settings), host=host)
    rig = Rig(session, faux, tmp_path)
    session.subscribe(rig.events.append)
    async with anyio.create_task_group() as tg:
        session.bind_task_group(tg)
        if start:
            await session.start()
        yield rig
        tg.cancel_scope.cancel()


async def wait_until(condition: Any, what: str = "condition") -> None:
    """Yield to the event loop until ``condition()`` holds (state-based, not timed)."""
    with anyio.fail_after(5):
        while not condition():
            await anyio.sleep(0.001)


def read_session_file(manager: SessionManager) -> SessionManager:
    assert manager.session_file is not None
    reopened = SessionManager.open(manager.session_file)
    assert reopened.warnings == []
    return reopened


# -- agent-session-prompt ----------------------------------------------------------------------


async def test_idle_prompt_gets_one_text_response(tmp_path: Path) -> None:
    async with open_session(tmp_path, [faux_assistant_message("Hello there")]) as rig:
        await rig.session.prompt("hi")
        assert rig.faux.call_count == 1
        assert [m.role for m in rig.session.messages] == ["user", "assistant"]
        assert rig.assistant_texts() == ["Hello there"]
        assert rig.types("agent_start", "agent_end") == ["agent_start", "agent_end"]
        assert rig.session.is_streaming is False


async def test_tool_turn_waits_for_the_follow_up_response(tmp_path: Path) -> None:
    steps = [
        faux_assistant_message([faux_tool_call("echo", {"text": "ping"}, id="c1")], stop_reason="toolUse"),
        faux_assistant_message("Echo said ping."),
    ]
    async with open_session(tmp_path, steps) as rig:
        await rig.session.prompt("echo ping")
        assert rig.faux.call_count == 2
        assert [m.role for m in rig.session.messages] == ["user", "assistant", "toolResult", "assistant"]
        tool_result = rig.session.messages[2]
        assert isinstance(tool_result, ToolResultMessage)
        assert tool_result.content == [TextContent(text="echo: ping")]
        assert rig.request_texts(1)[-1] == "toolResult:echo: ping"
        assert rig.assistant_texts()[-1] == "Echo said ping."


async def test_several_tool_calls_then_one_follow_up_response(tmp_path: Path) -> None:
    calls = [faux_tool_call("echo", {"text": str(n)}, id=f"c{n}") for n in range(3)]
    steps = [faux_assistant_message(calls, stop_reason="toolUse"), faux_assistant_message("All three.")]
    async with open_session(tmp_path, steps) as rig:
        await rig.session.prompt("echo thrice")
        assert rig.faux.call_count == 2
        results = [m for m in rig.session.messages if m.role == "toolResult"]
        assert [r.tool_call_id for r in results] == ["c0", "c1", "c2"]
        assert rig.request_texts(1)[-3:] == ["toolResult:echo: 0", "toolResult:echo: 1", "toolResult:echo: 2"]


PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 16).decode()


async def test_images_reach_the_provider_context(tmp_path: Path) -> None:
    image = ImageContent(data=PNG, mime_type="image/png")
    async with open_session(tmp_path, [faux_assistant_message("A picture.")]) as rig:
        await rig.session.prompt("what is this?", images=[image])
        (sent,) = rig.faux.requests[0].context.messages
        assert isinstance(sent, UserMessage)
        assert sent.content == [TextContent(text="what is this?"), image]


async def test_skill_and_template_expansion(tmp_path: Path) -> None:
    skill_dir = tmp_path / "skills" / "deploy"
    skill_dir.mkdir(parents=True)
    (skill_dir / "SKILL.md").write_text("---\nname: deploy\ndescription: Deploy it.\n---\nRun make deploy.\n")
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "review.md").write_text("---\ndescription: Review\n---\nReview $1 carefully.\n")
    steps = [faux_assistant_message("ok"), faux_assistant_message("ok")]
    options = {"skills": [str(skill_dir)], "prompt_templates": [str(prompts)]}
    async with open_session(tmp_path, steps, options=options) as rig:
        await rig.session.prompt("/skill:deploy now please")
        assert rig.request_texts(0) == [
            f'user:<skill name="deploy" location="{skill_dir / "SKILL.md"}">\n'
            f"References are relative to {skill_dir}.\n\nRun make deploy.\n</skill>\n\nnow please"
        ]
        await rig.session.prompt("/review main.py")
        assert rig.request_texts(1)[-1] == "user:Review main.py carefully."


class CommandPlugin:
    def __init__(self) -> None:
        self.calls: list[tuple[str, bool]] = []

    @hookimpl
    def pi_register_commands(self, register: Any) -> None:
        async def handler(args: str, ctx: CommandContext) -> None:
            self.calls.append((args, ctx.is_idle()))

        register(Command("stats", "Show stats", handler))


async def test_plugin_command_consumes_no_model_response(tmp_path: Path) -> None:
    plugin = CommandPlugin()
    async with open_session(tmp_path, [], plugins=[plugin]) as rig:
        await rig.session.prompt("/stats  all of them ")
        assert plugin.calls == [("all of them", True)]
        assert rig.faux.call_count == 0
        assert rig.session.messages == []
        assert rig.events == []


class InputRecorder:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str | None]] = []

    @hookimpl
    def pi_input(self, text: str, source: str, streaming_behavior: str | None) -> None:
        self.seen.append((text, source, streaming_behavior))


async def test_send_user_message_when_idle_runs_a_turn_without_expansion(tmp_path: Path) -> None:
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "review.md").write_text("Review $1.\n")
    recorder = InputRecorder()
    async with open_session(
        tmp_path,
        [faux_assistant_message("Done.")],
        plugins=[recorder],
        options={"prompt_templates": [str(prompts)]},
    ) as rig:
        await rig.session.send_user_message("/review x")
        assert rig.faux.call_count == 1
        # sendUserMessage never expands templates; pi_input still sees it, as source extension.
        assert rig.request_texts(0) == ["user:/review x"]
        assert recorder.seen == [("/review x", "extension", None)]


async def test_input_streaming_behavior_is_none_when_idle_and_set_when_streaming(tmp_path: Path) -> None:
    recorder = InputRecorder()
    gate = anyio.Event()

    async def slow(context: LlmContext, options: StreamOptions, state: FauxState, model: Model) -> Any:
        await gate.wait()
        return faux_assistant_message("first")

    steps = [slow, faux_assistant_message("second")]
    async with open_session(tmp_path, steps, plugins=[recorder]) as rig:
        async with anyio.create_task_group() as tg:
            tg.start_soon(rig.session.prompt, "start")
            await wait_until(lambda: rig.faux.call_count == 1)
            await rig.session.prompt("later", streaming_behavior="followUp")
            gate.set()
        assert recorder.seen == [("start", "interactive", None), ("later", "interactive", "followUp")]
        assert rig.assistant_texts() == ["first", "second"]


async def test_prompt_while_streaming_without_behavior_raises_pi_error(tmp_path: Path) -> None:
    gate = anyio.Event()

    async def slow(context: LlmContext, options: StreamOptions, state: FauxState, model: Model) -> Any:
        await gate.wait()
        return faux_assistant_message("first")

    async with open_session(tmp_path, [slow]) as rig:
        async with anyio.create_task_group() as tg:
            tg.start_soon(rig.session.prompt, "start")
            await wait_until(lambda: rig.faux.call_count == 1)
            with pytest.raises(SessionError) as raised:
                await rig.session.prompt("again")
            gate.set()
        assert str(raised.value) == (
            "Agent is already processing. "
            "Specify streamingBehavior ('steer' or 'followUp') to queue the message."
        )
        assert rig.faux.call_count == 1


async def test_no_model_raises_guidance(tmp_path: Path) -> None:
    async with open_session(tmp_path, []) as rig:
        rig.session.agent.state.model = Model(id="none", name="none", api="unknown", provider="unknown")
        assert rig.session.model is None
        with pytest.raises(SessionError, match=r"^No model selected\."):
            await rig.session.prompt("hi")
        assert rig.session.messages == []


async def test_model_without_credentials_raises_pi_guidance(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    async with open_session(tmp_path, []) as rig:
        resolver = rig.session.model_resolver
        keyed = resolver.find("anthropic", "claude-sonnet-4-5") or next(
            m for m in resolver.all_models() if m.provider == "anthropic"
        )
        rig.session.agent.state.model = keyed
        with pytest.raises(SessionError, match=r'^No API key found for "anthropic"\.'):
            await rig.session.prompt("hi")
        assert rig.faux.call_count == 0


async def test_preflight_reports_accept_and_reject(tmp_path: Path) -> None:
    outcomes: list[bool] = []
    async with open_session(tmp_path, [faux_assistant_message("ok")]) as rig:
        await rig.session.prompt("hi", preflight=outcomes.append)
        rig.session.agent.state.model = Model(id="none", name="none", api="unknown", provider="unknown")
        with pytest.raises(SessionError):
            await rig.session.prompt("hi", preflight=outcomes.append)
    assert outcomes == [True, False]


async def test_input_transform_and_handled(tmp_path: Path) -> None:
    class Rewriter:
        @hookimpl
        def pi_input(self, text: str) -> Any:
            if text == "ping":
                return InputHandled()
            return InputTransform(text=text.upper())

    async with open_session(tmp_path, [faux_assistant_message("ok")], plugins=[Rewriter()]) as rig:
        await rig.session.prompt("ping")
        assert rig.faux.call_count == 0
        await rig.session.prompt("shout")
        assert rig.request_texts(0) == ["user:SHOUT"]


async def test_custom_message_with_trigger_turn_runs_it_as_the_prompt(tmp_path: Path) -> None:
    async with open_session(tmp_path, [faux_assistant_message("seen")]) as rig:
        message = CustomMessage(custom_type="note", content="look at this", display=True)
        await rig.session.send_custom_message(message, trigger_turn=True)
        assert rig.request_texts(0) == ["user:look at this"]
        assert [m.role for m in rig.session.messages] == ["custom", "assistant"]


async def test_idle_custom_message_without_trigger_is_recorded_only(tmp_path: Path) -> None:
    async with open_session(tmp_path, [], persist=True) as rig:
        message = CustomMessage(custom_type="note", content="fyi", display=False, details={"k": 1})
        await rig.session.send_custom_message(message)
        assert rig.faux.call_count == 0
        assert rig.types() == ["message_start", "message_end"]
        entries = rig.session.session_manager.get_entries()
        (entry,) = [e for e in entries if isinstance(e, CustomMessageEntry)]
        assert (entry.custom_type, entry.content, entry.display, entry.details) == (
            "note",
            "fyi",
            False,
            {"k": 1},
        )


# -- abort and user bash ---------------------------------------------------------------------------


async def test_abort_while_streaming_records_the_aborted_reply(tmp_path: Path) -> None:
    from pi_host.providers import FauxReply

    slow = FauxReply(faux_assistant_message("word " * 400), chunk_delay=0.01)
    async with open_session(tmp_path, [slow, faux_assistant_message("next")], persist=True) as rig:
        async with anyio.create_task_group() as tg:
            tg.start_soon(rig.session.prompt, "talk")
            await wait_until(lambda: "message_update" in rig.types())
            await rig.session.abort()
            assert rig.session.is_streaming is False
        (reply,) = [m for m in rig.session.messages if isinstance(m, AssistantMessage)]
        assert reply.stop_reason == "aborted"
        assert rig.types("agent_end") == ["agent_end"]
        stored = read_session_file(rig.session.session_manager).build_session_context().messages
        assert [getattr(m, "stop_reason", None) for m in stored] == [None, "aborted"]
        # The session goes on normally after an abort.
        await rig.session.prompt("again")
        assert rig.assistant_texts()[-1] == "next"


async def test_user_bash_while_streaming_is_deferred_until_the_run_ends(tmp_path: Path) -> None:
    from pi_host import UserBashResult

    class Shell:
        @hookimpl
        def pi_user_bash(self, command: str) -> Any:
            return UserBashResult(output=f"ran {command}", exit_code=0)

    gate = anyio.Event()

    async def slow(context: LlmContext, options: StreamOptions, state: FauxState, model: Model) -> Any:
        await gate.wait()
        return faux_assistant_message("answer")

    async with open_session(tmp_path, [slow], plugins=[Shell()], persist=True) as rig:
        async with anyio.create_task_group() as tg:
            tg.start_soon(rig.session.prompt, "question")
            await wait_until(lambda: rig.faux.call_count == 1)
            bash = await rig.session.run_user_bash("ls")
            assert bash not in rig.session.messages  # deferred: the run owns the transcript now
            gate.set()
        assert [m.role for m in rig.session.messages] == ["user", "assistant", "bashExecution"]
        entries = read_session_file(rig.session.session_manager).get_entries()
        roles = [e.message.role for e in entries if isinstance(e, SessionMessageEntry)]
        assert roles == ["user", "assistant", "bashExecution"]
        # No message events for bash output (pi persists it directly).
        assert [e.message.role for e in rig.events if e.type == "message_end"] == ["user", "assistant"]
