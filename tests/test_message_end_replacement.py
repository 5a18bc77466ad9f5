"""A ``pi_message_end`` replacement is the message for the rest of the run (issue #14 point 5).

pi replaces the message in place, so its state, later events, later hooks, the next request
and the session file all carry the replacement (notes §3.4). The plugin used throughout is
the hookspec's own redaction example, taken from its docstring: whatever it redacts must not
reach the model again, nor later hooks, nor JSON, RPC or print output, nor the session file.
Only the ``message_update`` deltas streamed before ``message_end`` carry the raw text, as in pi.
"""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import pytest

from pi_host import hookimpl
from pi_host.hookspecs import message as message_hooks
from pi_host.messages import AssistantMessage, TextContent, ToolResultMessage, UserMessage
from pi_host.runtime import SessionAgentEndEvent
from pi_host.testing import RpcClient
from tests.fakeservers import AnthropicServer, anthropic_reply
from tests.pi_reference import PI_HOST
from tests.test_runtime_hooks import fake_anthropic_models
from tests.test_runtime_prompt import open_session, read_session_file

SECRET = "sk-live-4f2a9"
REDACTED = "sk-****-4f2a9"
FAKE = {"provider": "fake", "model": "fake-1"}


def redaction_example() -> str:
    """The example of ``pi_message_end``'s docstring, as the source of a plugin module."""
    doc = inspect.getdoc(message_hooks.pi_message_end)
    assert doc is not None and "Example::" in doc
    return textwrap.dedent(doc.split("Example::", 1)[1]).strip() + "\n"


def redaction_plugin() -> ModuleType:
    module = ModuleType("redaction_example")
    exec(compile(redaction_example(), "redaction_example.py", "exec"), module.__dict__)
    return module


def replies() -> list[Any]:
    """Turn 1 says the secret and calls ``echo``; turn 2 says it again and stops."""
    tool_turn = anthropic_reply(
        [
            {"type": "text", "text": f"the key is {SECRET}"},
            {"type": "tool_use", "id": "toolu_1", "name": "echo", "input": {"text": "hi"}},
        ],
        stop_reason="tool_use",
    )
    return [tool_turn, anthropic_reply(f"done, key {SECRET}")]


def text_of(message: Any) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(getattr(block, "text", "") for block in content)


class Recorder:
    """What the hooks after ``pi_message_end`` are handed."""

    def __init__(self) -> None:
        self.seen: dict[str, list[str]] = {}

    def note(self, hook: str, *texts: str) -> None:
        self.seen.setdefault(hook, []).extend(texts)

    @hookimpl
    def pi_tool_execution_start(self, args: Any) -> None:
        self.note("tool_execution_start", json.dumps(args))

    @hookimpl
    def pi_turn_end(self, message: Any, tool_results: Any) -> None:
        self.note("turn_end", text_of(message), *(text_of(r) for r in tool_results))

    @hookimpl
    def pi_prepare_next_turn(self, message: Any, messages: Any) -> None:
        self.note("prepare_next_turn", text_of(message), *(text_of(m) for m in messages))

    @hookimpl
    def pi_context(self, messages: Any) -> None:
        self.note("context", *(text_of(m) for m in messages))

    @hookimpl
    def pi_agent_end(self, messages: Any) -> None:
        self.note("agent_end", *(text_of(m) for m in messages))

    @hookimpl
    def pi_after_agent_run(self, message: Any) -> None:
        self.note("after_agent_run", text_of(message))


# -- in-process: the next request, later hooks, events, state, the session file ----------------


async def test_the_docstring_redaction_reaches_the_next_request_hooks_events_and_file(tmp_path: Path) -> None:
    recorder = Recorder()
    with AnthropicServer(replies()) as started:
        server = cast("AnthropicServer", started)
        fake_anthropic_models(tmp_path / "agent", server.base_url)
        plugins = [redaction_plugin(), recorder]
        async with open_session(tmp_path, plugins=plugins, options=FAKE, persist=True) as rig:
            await rig.session.prompt("what is the key?")
            second = json.dumps(server.requests[1].json()["messages"])
            assert SECRET not in second and REDACTED in second
            assert rig.assistant_texts() == [f"the key is {REDACTED}", f"done, key {REDACTED}"]
            for hook, texts in recorder.seen.items():
                assert not any(SECRET in text for text in texts), (hook, texts)
            assert f"the key is {REDACTED}" in recorder.seen["turn_end"]
            assert f"done, key {REDACTED}" in recorder.seen["agent_end"]
            assert recorder.seen["after_agent_run"] == [f"done, key {REDACTED}"]
            ends = [e for e in rig.events if e.type in ("message_end", "turn_end", "agent_end")]
            assert [e.type for e in ends][-2:] == ["turn_end", "agent_end"]
            assert isinstance(ends[-1], SessionAgentEndEvent)
            assert not any(SECRET in e.to_json() for e in ends)
            stored = read_session_file(rig.session.session_manager).build_session_context().messages
            assert [text_of(m) for m in stored if isinstance(m, AssistantMessage)] == rig.assistant_texts()
            file = rig.session.session_manager.session_file
            assert file is not None and SECRET not in Path(file).read_text()


class RedactEveryRole:
    """Replaces ``SECRET`` in prompts, tool results and replies alike."""

    @hookimpl
    def pi_message_end(self, message: Any) -> Any:
        if isinstance(message, UserMessage | ToolResultMessage | AssistantMessage):
            if SECRET not in text_of(message):
                return None
            if isinstance(message.content, str):
                return message.model_copy(update={"content": message.content.replace(SECRET, REDACTED)})
            content = [
                TextContent(text=b.text.replace(SECRET, REDACTED)) if isinstance(b, TextContent) else b
                for b in message.content
            ]
            return message.model_copy(update={"content": content})
        return None


async def test_a_replaced_prompt_and_tool_result_are_what_the_model_reads(tmp_path: Path) -> None:
    echo_secret = anthropic_reply(
        [{"type": "tool_use", "id": "toolu_1", "name": "echo", "input": {"text": SECRET}}],
        stop_reason="tool_use",
    )
    recorder = Recorder()
    with AnthropicServer([echo_secret, anthropic_reply("ok")]) as started:
        server = cast("AnthropicServer", started)
        fake_anthropic_models(tmp_path / "agent", server.base_url)
        async with open_session(tmp_path, plugins=[RedactEveryRole(), recorder], options=FAKE) as rig:
            await rig.session.prompt(f"remember {SECRET}")
        first, second = (json.dumps(request.json()["messages"]) for request in server.requests)
    # The prompt's message_end comes before the first request; the tool result's before the
    # second. The tool itself ran with the model's arguments (the reply was not replaced).
    assert SECRET not in first and f"remember {REDACTED}" in first
    assert f"echo: {SECRET}" not in second and f"echo: {REDACTED}" in second
    assert second.count(SECRET) == 1  # the model's own tool call, which no plugin replaced
    assert recorder.seen["tool_execution_start"] == [json.dumps({"text": SECRET})]
    assert f"echo: {REDACTED}" in recorder.seen["turn_end"]
    assert not any(SECRET in text for text in recorder.seen["agent_end"])


# -- every mode's output, from a real pi-host process ----------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str], AnthropicServer]]:
    """A trusted project whose ``.pi/plugins/redact.py`` is the docstring example, its agent
    directory (``agent/``, with a ``fake`` provider) and the fake Anthropic server behind it."""
    (tmp_path / ".pi" / "plugins").mkdir(parents=True)
    (tmp_path / ".pi" / "plugins" / "redact.py").write_text(redaction_example())
    (tmp_path / "note.txt").write_text("hi\n")
    with AnthropicServer() as started:
        server = cast("AnthropicServer", started)
        fake_anthropic_models(tmp_path / "agent", server.base_url)
        env = {key: value for key, value in os.environ.items() if not key.startswith("PI_HOST_")}
        env["PI_HOST_DIR"] = str(tmp_path / "agent")
        yield tmp_path, env, server


def pi_host_command(*args: str) -> list[str]:
    return [PI_HOST, "--approve", "--provider", "fake", "--model", "fake-1", *args]


def run_pi_host(project: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    command = pi_host_command(*args)
    done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done


def test_json_mode_lines_and_session_file_carry_the_replacement(
    project: tuple[Path, dict[str, str], AnthropicServer],
) -> None:
    directory, env, server = project
    server.enqueue(
        anthropic_reply(
            [
                {"type": "text", "text": f"the key is {SECRET}"},
                {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "note.txt"}},
            ],
            stop_reason="tool_use",
        ),
        anthropic_reply(f"done, key {SECRET}"),
    )
    sessions = directory / "sessions"
    done = run_pi_host(directory, env, "--mode", "json", "--session-dir", str(sessions), "what is the key?")
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    kinds = [line["type"] for line in lines]
    assert kinds.count("turn_end") == 2 and kinds[-1] == "agent_end"
    leaking = {line["type"] for line in lines if SECRET in json.dumps(line)}
    assert leaking == {"message_update"}  # streamed before message_end, as in pi
    assert json.dumps(lines[-1]).count(REDACTED) == 2
    assert SECRET not in json.dumps(server.requests[1].json())
    (file,) = sessions.glob("*.jsonl")
    assert SECRET not in file.read_text() and REDACTED in file.read_text()


def test_print_mode_prints_the_replacement(project: tuple[Path, dict[str, str], AnthropicServer]) -> None:
    directory, env, server = project
    server.enqueue(anthropic_reply(f"the key is {SECRET}"))
    done = run_pi_host(directory, env, "--no-session", "-p", "what is the key?")
    assert done.stdout == f"the key is {REDACTED}\n"


def test_rpc_events_and_get_messages_carry_the_replacement(
    project: tuple[Path, dict[str, str], AnthropicServer],
) -> None:
    directory, env, server = project
    server.enqueue(anthropic_reply(f"the key is {SECRET}"), anthropic_reply(f"again {SECRET}"))
    command = pi_host_command("--mode", "rpc", "--no-session")
    with RpcClient(command, cwd=directory, env=env, timeout=20) as rpc:
        for text in ("what is the key?", "once more"):
            assert rpc.call({"id": text, "type": "prompt", "message": text})["success"] is True
            rpc.wait_for("agent_end")
        messages = rpc.call({"id": "m", "type": "get_messages"})["data"]["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
        assert SECRET not in json.dumps(messages) and json.dumps(messages).count(REDACTED) == 2
        ends = [r for r in rpc.records if r.get("type") in ("message_end", "turn_end", "agent_end")]
        assert len(ends) == 8 and not any(SECRET in json.dumps(r) for r in ends)
        assert SECRET not in json.dumps(server.requests[1].json())
        assert rpc.close() == 0
