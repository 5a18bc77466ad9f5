"""pi_host.testing: isolated hosts, the scripted model, the hook recorder, outcomes, the CLI runner."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest

from pi_host import Command, TextContent, hookimpl
from pi_host.hookspecs import InputHandled, InputTransform, ToolCallBlock, ToolCallRewrite, ToolResultPatch
from pi_host.testing import (
    CliRunner,
    HookRecorder,
    HostFactory,
    HostSetupError,
    Request,
    ScriptedProvider,
    build_host,
    error,
    reply,
    script_json,
    tool_call,
)

pytest_plugins = ["pi_host.testing", "pytester"]


class Policy:
    """Blocks writes, uppercases input, hides custom notes: one plugin touching several hooks."""

    @hookimpl
    def pi_tool_call(self, tool_name: str, input: dict[str, Any]) -> ToolCallBlock | None:
        if tool_name == "write":
            return ToolCallBlock(reason="read-only here")
        return None

    @hookimpl
    def pi_input(self, text: str) -> InputTransform | InputHandled | None:
        if text == "ping":
            return InputHandled()
        return InputTransform(text=text.upper())


# -- isolation -------------------------------------------------------------------------------


def test_only_the_chosen_plugins_load(make_host: HostFactory) -> None:
    bare = make_host()
    assert bare.tools == {}
    names = {info.name for info in bare.plugin_manager.list_plugins() if info.status == "enabled"}
    assert "bash" not in names and "tools_fs" not in names
    with_fs = make_host(load=["tools_fs"])
    assert sorted(with_fs.tools) == ["edit", "find", "grep", "ls", "read", "write"]


def test_environment_and_directories_are_isolated(
    make_host: HostFactory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PI_HOST_PLUGINS", "")
    monkeypatch.setenv("PI_HOST_TRACE_HOOKS", "1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret")
    host = make_host(
        load=["tools_fs"], settings={"defaultThinkingLevel": "low"}, files={"src/a.py": "x = 1\n"}
    )
    assert "PI_HOST_PLUGINS" not in os.environ and "PI_HOST_TRACE_HOOKS" not in os.environ
    assert "ANTHROPIC_API_KEY" not in os.environ
    assert os.environ["HOME"].startswith(str(tmp_path))
    assert os.environ["PI_HOST_DIR"] == str(host.agent_dir)
    assert Path.cwd() == host.cwd and (host.cwd / "src/a.py").read_text() == "x = 1\n"
    assert (host.agent_dir / "settings.json").exists()
    assert "read" in host.tools  # the allow-list of the test wins over PI_HOST_PLUGINS=""


def test_a_misspelt_hook_fails_the_host(tmp_path: Path) -> None:
    class Typo:
        @hookimpl
        def pi_tool_cal(self, tool_name: str) -> None:
            return None

    with pytest.raises(
        HostSetupError, match='unknown hook "pi_tool_cal" \\(did you mean "pi_tool_call"\\?\\)'
    ):
        build_host([Typo()], cwd=tmp_path / "p", agent_dir=tmp_path / "a")


def test_a_missing_installed_plugin_fails_the_host(tmp_path: Path) -> None:
    with pytest.raises(HostSetupError, match="no_such_plugin not installed"):
        build_host([], cwd=tmp_path / "p", agent_dir=tmp_path / "a", load=["no_such_plugin"])


def test_the_fixture_turns_setup_errors_into_test_failures(pytester: pytest.Pytester) -> None:
    pytester.makeconftest('pytest_plugins = ["pi_host.testing"]')
    pytester.makepyfile(
        """
        from pi_host import hookimpl

        class Typo:
            @hookimpl
            def pi_turn_ends(self):
                pass

        def test_it(make_host):
            make_host(Typo())
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == 1, f"{result.stdout.str()}\n{result.stderr.str()}"
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(['*unknown hook "pi_turn_ends" (did you mean "pi_turn_end"?)*'])


# -- the scripted model ----------------------------------------------------------------------


async def test_step_vocabulary(make_host: HostFactory) -> None:
    host = make_host(
        load=["tools_fs"],
        files={"a.txt": "alpha\n"},
        replies=[
            [tool_call("read", path="a.txt"), tool_call("ls")],
            reply("All read.", thinking="Two results.", usage={"input": 7, "output": 3, "totalTokens": 10}),
        ],
    )
    outcome = await host.run("look")
    outcome.assert_ok().assert_text("All read.")
    assert [call.name for call in outcome.tool_calls] == ["read", "ls"]
    assert "alpha" in outcome.result_text(outcome.tool_calls[0].id)
    last = outcome.last_assistant
    assert last is not None and last.usage.total_tokens == 10
    assert [block.type for block in last.content] == ["thinking", "text"]
    host.provider.assert_used_up()


async def test_json_script_dicts_and_errors(make_host: HostFactory) -> None:
    host = make_host(replies=[{"text": "from a dict"}, error("overloaded")])
    assert (await host.run("one")).text == "from a dict"
    failed = await host.run("two")
    assert failed.stop_reason == "error" and failed.error_message == "overloaded"
    with pytest.raises(AssertionError, match="overloaded"):
        failed.assert_ok()


async def test_exhausted_script_answers_with_an_error(make_host: HostFactory) -> None:
    outcome = await make_host().run("hello")
    assert outcome.stop_reason == "error"
    assert "No more faux responses queued" in (outcome.error_message or "")


async def test_requests_are_recorded_and_respond_computes_replies(make_host: HostFactory) -> None:
    async def respond(request: Request) -> str:
        await anyio.lowlevel.checkpoint()
        return f"echo {request.last_user_text} after {len(request.messages)} message(s)"

    host = make_host(
        Policy(), replies=[lambda request: f"first saw {request.last_user_text}"], respond=respond
    )
    first = await host.run("hello")
    second = await host.run("again")
    assert first.text == "first saw HELLO"
    assert second.text == "echo AGAIN after 3 message(s)"
    requests = host.provider.requests
    assert [r.index for r in requests] == [0, 1]
    assert requests[1].user_texts == ["HELLO", "AGAIN"]
    assert requests[0].system_prompt  # the default system prompt was sent


async def test_tool_names_sent_follow_the_active_tools(make_host: HostFactory) -> None:
    host = make_host(load=["tools_fs"], tools=["read", "ls"], replies=["ok"])
    await host.run("hi")
    assert host.provider.last_request.tool_names == ["read", "ls"]


async def test_delays_let_a_test_abort_mid_stream(make_host: HostFactory) -> None:
    host = make_host(replies=[reply("a long answer " * 20, delay=0.02)])
    session = await host.session()
    streaming = anyio.Event()

    def watch(event: Any) -> None:
        if getattr(event, "type", None) == "message_update":
            streaming.set()

    session.subscribe(watch)
    async with anyio.create_task_group() as tg:
        tg.start_soon(host.run, "talk")
        with anyio.fail_after(10):
            await streaming.wait()
        await session.abort()
    assert session.messages[-1].stop_reason == "aborted"  # type: ignore[union-attr]


# -- the recorder and the outcome --------------------------------------------------------------


class Audit:
    """Records and rewrites, sync and async, and fails in one hook."""

    @hookimpl
    async def pi_tool_call(self, tool_name: str, input: dict[str, Any]) -> ToolCallRewrite | None:
        if tool_name == "ls":
            return ToolCallRewrite(input={"path": "."})
        return None

    @hookimpl
    def pi_tool_result(self, tool_name: str, content: list[Any]) -> ToolResultPatch | None:
        return ToolResultPatch(content=[TextContent(text=f"[{tool_name}] patched")])

    @hookimpl
    def pi_turn_end(self, turn_index: int) -> None:
        raise RuntimeError(f"audit broke on turn {turn_index}")


async def test_recorder_sees_order_arguments_results_and_failures(make_host: HostFactory) -> None:
    host = make_host(
        Audit(),
        Policy(),
        load=["tools_fs"],
        replies=[[tool_call("ls", path="nowhere"), tool_call("write", path="x", content="y")], "done"],
    )
    outcome = await host.run("go")
    recorder: HookRecorder = host.recorder

    recorder.assert_order("pi_input", "pi_tool_call", "pi_tool_result", "pi_turn_end")
    calls = recorder.assert_called("pi_tool_call", times=2)
    assert calls[0].tool_name == "ls" and calls[0].input["path"] == "nowhere"
    assert isinstance(calls[0].result, ToolCallRewrite)
    assert isinstance(calls[0].impl("Audit").result, ToolCallRewrite)
    # Registered last, Policy is called first (pluggy's LIFO), so it sees the model's arguments.
    assert [impl.plugin for impl in calls[0].impls] == ["Policy", "Audit"]
    assert calls[0].impl("Policy").args == {"tool_name": "ls", "input": calls[0].input}
    assert [impl.plugin for impl in recorder.impl_calls(plugin="Audit", hook="pi_tool_*")] == ["Audit"] * 2
    assert recorder.getcall("pi_tool_result").result.content[0].text == "[ls] patched"

    raised = recorder.raised()
    assert len(raised) == 2 and all(isinstance(impl.error, RuntimeError) for impl in raised)
    assert [error.hook for error in recorder.errors] == ["pi_turn_end", "pi_turn_end"]
    with pytest.raises(AssertionError, match="audit broke on turn 0"):
        recorder.assert_no_errors()

    block = outcome.assert_blocked("write", reason="read-only", plugin="Policy")
    assert block.input["content"] == "y"
    outcome.assert_error(hook="pi_turn_end", message="RuntimeError: audit broke on turn 1")
    outcome.assert_tool_called("ls", path="nowhere")
    outcome.assert_events("agent_start", "tool_execution_end", "extension_error", "agent_end")
    outcome.assert_hooks("pi_input", "pi_tool_call", "pi_tool_call", "pi_turn_end")
    assert outcome.requests == 2


async def test_recorder_queries_and_missing_calls(make_host: HostFactory) -> None:
    host = make_host(Policy(), replies=["ok"])
    await host.run("hi")
    recorder = host.recorder
    assert recorder.names() == ["pi_input"]
    call = recorder.getcall("pi_input")
    assert call.text == "hi" and call.finished and isinstance(call.result, InputTransform)
    with pytest.raises(AttributeError, match="has no argument 'nope'"):
        _ = call.nope
    with pytest.raises(AssertionError, match="pi_tool_call was never dispatched"):
        recorder.assert_called("pi_tool_call")
    with pytest.raises(AssertionError, match="pi_agent_end was not dispatched"):
        recorder.assert_order("pi_input", "pi_agent_end")
    recorder.clear()
    assert len(recorder) == 0


async def test_handled_input_and_commands_do_not_reach_the_model(make_host: HostFactory) -> None:
    async def hello(args: str, ctx: Any) -> None:
        ctx.ui.notify(f"hello {args}", "info")

    class Commands:
        @hookimpl
        def pi_register_commands(self, register: Any) -> None:
            register(Command(name="hello", description="Say hello", handler=hello))

    host = make_host(Policy(), Commands())
    handled = await host.run("ping")
    command = await host.run("/hello world")
    assert handled.messages == [] and command.messages == []
    assert host.provider.requests == []
    assert host.ui.messages == ["hello world"]


async def test_failing_tool_call_policy_blocks_and_names_the_plugin(make_host: HostFactory) -> None:
    class Broken:
        @hookimpl
        def pi_tool_call(self) -> None:
            raise ValueError("policy crashed")

    host = make_host(Broken(), load=["tools_fs"], replies=[tool_call("ls"), "after"])
    outcome = await host.run("list")
    block = outcome.assert_blocked("ls", plugin="Broken")
    assert "policy crashed" in block.reason
    assert outcome.text == "after"


async def test_session_start_and_shutdown_reach_plugins(make_host: HostFactory) -> None:
    seen: list[str] = []

    class Lifecycle:
        @hookimpl
        def pi_session_start(self, reason: str) -> None:
            seen.append(f"start:{reason}")

        @hookimpl
        def pi_session_shutdown(self, reason: str) -> None:
            seen.append(f"shutdown:{reason}")

    host = make_host(Lifecycle(), replies=["hi"])
    await host.run("x")
    await host.close()
    assert seen == ["start:startup", "shutdown:quit"]


def test_a_provider_of_your_own_is_used(make_host: HostFactory) -> None:
    provider = ScriptedProvider(models=[{"id": "big", "reasoning": True}])
    host = make_host(provider=provider, replies=["queued"])
    assert host.provider is provider and provider.pending == 1
    assert host.options.model == "big"


def test_unknown_steps_are_rejected_with_a_hint() -> None:
    with pytest.raises(TypeError, match="is not a reply"):
        ScriptedProvider([42])  # type: ignore[list-item]


# -- the command line ----------------------------------------------------------------------


def test_cli_runner_runs_the_command_isolated(run_cli: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_HOST_PLUGINS", "")  # must not leak into the child
    (run_cli.cwd / "notes.txt").write_text("alpha\n")
    result = run_cli(
        "--provider",
        "faux",
        "--mode",
        "json",
        "-p",
        "read it",
        replies=[tool_call("read", path="notes.txt"), reply("done", thinking="ok")],
    )
    result.assert_success()
    assert result.event_types[0] == "session" and result.event_types[-1] == "agent_end"
    end = next(event for event in result.events if event["type"] == "tool_execution_end")
    assert end["isError"] is False and "alpha" in end["result"]["content"][0]["text"]
    sessions = list((run_cli.agent_dir / "sessions").rglob("*.jsonl"))
    assert len(sessions) == 1


def test_cli_runner_text_assertions(run_cli: CliRunner) -> None:
    run_cli("--provider", "faux", "-p", "hi", replies=["Hello offline"]).assert_success().fnmatch_lines(
        ["Hello*"]
    )
    failed = run_cli("--provider", "faux", "-p", "hi", replies=[error("upstream exploded")])
    failed.assert_failure(1).fnmatch_lines(["*upstream exploded*"], stream="stderr")
    with pytest.raises(AssertionError, match="no stdout line matches"):
        failed.fnmatch_lines(["never"])


def test_script_json_matches_the_faux_script_format() -> None:
    entries = script_json(
        ["plain", reply("t", thinking="th", tool_calls=[tool_call("ls", id="c1")], delay=0.5), error("boom")]
    )
    assert entries[0] == {"text": "plain", "stopReason": "stop"}
    assert entries[1] == {
        "thinking": "th",
        "text": "t",
        "toolCalls": [{"name": "ls", "arguments": {}, "id": "c1"}],
        "stopReason": "toolUse",
        "delayMs": 500.0,
    }
    assert entries[2] == {"error": "boom", "stopReason": "error"}
    with pytest.raises(TypeError, match="cannot drive a subprocess"):
        script_json([lambda request: "x"])


def test_kit_is_opt_in() -> None:
    """Installing pi-host must not add fixtures to unrelated suites (no pytest11 entry point)."""
    from importlib.metadata import distribution

    entry_points = distribution("pi-host").entry_points
    assert not [ep for ep in entry_points if ep.group == "pytest11"]
    assert "PYTEST_DONT_REWRITE" in (textwrap.dedent(__import__("pi_host.testing").testing.__doc__ or ""))


async def test_background_work_of_plugins_finishes_within_run(make_host: HostFactory) -> None:
    async def ask(args: str, ctx: Any) -> None:
        ctx.send_user_message(f"please {args}")

    class Asker:
        @hookimpl
        def pi_register_commands(self, register: Any) -> None:
            register(Command(name="ask", description="Ask the model", handler=ask))

    host = make_host(Asker(), replies=["sure"])
    outcome = await host.run("/ask help")
    assert outcome.text == "sure"
    assert host.provider.last_request.last_user_text == "please help"


async def test_a_wrong_return_value_blocks_and_names_the_plugin(make_host: HostFactory) -> None:
    class Sloppy:
        @hookimpl
        def pi_tool_call(self) -> str:
            return "no"

    host = make_host(Sloppy(), load=["tools_fs"], replies=[tool_call("ls"), "after"])
    outcome = await host.run("list")
    assert outcome.assert_blocked("ls", plugin="Sloppy")
    assert host.recorder.errors and host.recorder.errors[0].plugin == "Sloppy"
