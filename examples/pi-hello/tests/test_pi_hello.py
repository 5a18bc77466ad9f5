"""pi-hello's tests: unit tests of the hooks, and integration tests through pi-host's testing kit."""

from __future__ import annotations

import json
from importlib.metadata import entry_points

import pi_hello
import pytest

from pi_host import CustomMessage, ToolCallBlock, UserMessage
from pi_host.testing import CliRunner, HostFactory, reply, tool_call

# -- is it installed? ---------------------------------------------------------------------------


def test_the_entry_point_resolves_to_the_package() -> None:
    (entry_point,) = [ep for ep in entry_points(group="pi_host.plugins") if ep.name == "hello"]
    assert entry_point.load() is pi_hello


def test_pi_host_lists_the_plugin(run_cli: CliRunner) -> None:
    result = run_cli("plugins", "list", "--json").assert_success()
    (info,) = [info for info in json.loads(result.stdout) if info["name"] == "hello"]
    assert info["distribution"] == "pi-hello" and info["status"] == "enabled"
    assert set(info["hooks"]) == {
        "pi_context",
        "pi_input",
        "pi_register_commands",
        "pi_register_tools",
        "pi_tool_call",
    }


# -- hooks are plain functions: unit tests -------------------------------------------------------


def test_policy_blocks_only_blocklisted_names(monkeypatch: pytest.MonkeyPatch) -> None:
    assert pi_hello.pi_tool_call("greet", {"name": "Ada"}) is None
    assert pi_hello.pi_tool_call("read", {"name": "Voldemort"}) is None
    blocked = pi_hello.pi_tool_call("greet", {"name": "voldemort"})
    assert isinstance(blocked, ToolCallBlock) and "will not greet" in blocked.reason
    monkeypatch.setenv(pi_hello.BLOCKLIST_ENV, "Bob, Eve")
    assert pi_hello.pi_tool_call("greet", {"name": "Voldemort"}) is None
    assert pi_hello.pi_tool_call("greet", {"name": "eve"}) is not None


def test_input_shortcut() -> None:
    transform = pi_hello.pi_input(":greet Ada")
    assert transform is not None and transform.text == "Greet Ada using the greet tool."
    assert pi_hello.pi_input("hello there") is None


def test_context_filter_drops_notes_only() -> None:
    note = CustomMessage(custom_type=pi_hello.NOTE_TYPE, content="Said hello.")
    other = CustomMessage(custom_type="other", content="keep me")
    user = UserMessage(content="hi")
    assert pi_hello.pi_context([user, note, other]) == [user, other]
    assert pi_hello.pi_context([user, other]) is None  # nothing to change


# -- through a real host: integration tests ------------------------------------------------------


async def test_the_model_greets_with_the_tool(make_host: HostFactory) -> None:
    host = make_host(
        load=["hello"],  # the installed plugin, by entry-point name
        replies=[tool_call("greet", name="Ada", excited=True), "I greeted Ada."],
    )
    outcome = await host.run(":greet Ada")
    outcome.assert_ok().assert_text("I greeted Ada.")
    outcome.assert_tool_called("greet", name="Ada")
    assert outcome.result_text() == "Hello, Ada!"
    # The model was sent the transformed prompt, and the tool with its schema.
    first = host.provider.requests[0]
    assert first.last_user_text == "Greet Ada using the greet tool."
    assert "greet" in first.tool_names


async def test_the_policy_blocks_in_a_run(make_host: HostFactory) -> None:
    host = make_host(pi_hello, replies=[tool_call("greet", name="Voldemort"), "Understood."])
    outcome = await host.run("greet him")
    block = outcome.assert_blocked("greet", reason="will not greet Voldemort")
    assert block.plugin == "pi_hello"
    assert outcome.tool_results[0].is_error
    host.recorder.assert_order("pi_input", "pi_context", "pi_tool_call", "pi_context")


async def test_hello_command_notifies_and_notes_without_telling_the_model(make_host: HostFactory) -> None:
    host = make_host(pi_hello, replies=[reply("Hi!")])
    command = await host.run("/hello Grace")
    assert host.ui.messages == ["Hello, Grace!"]
    assert [m.custom_type for m in command.messages if isinstance(m, CustomMessage)] == [pi_hello.NOTE_TYPE]
    assert host.provider.requests == []  # a command does not reach the model

    await host.run("what did you just do?")
    sent = host.provider.last_request.messages
    assert [message.role for message in sent] == ["user"]  # the note was filtered out
    context = host.recorder.getcalls("pi_context")[-1]
    assert any(isinstance(m, CustomMessage) for m in context.messages)  # ...but the session has it
