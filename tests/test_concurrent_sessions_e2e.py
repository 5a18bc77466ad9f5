"""Many sessions in one process, end to end (issue 21): 21 sessions made by ``create_session``
run at once on one event loop against a scripted Anthropic endpoint on 127.0.0.1 (real HTTP,
the real wire format), each with its own working directory, model, API key, tools and prompt,
their tool calls interleaved; one of them is aborted mid-reply while the others are between
tool calls.

Nothing may cross between them: every request a session sends carries its own prompt, tools,
model, key and tool results (read from its own directory, ``pwd`` in its own directory), its
session file holds its own conversation only, the abort ends that one session's run alone,
and one session's quit stops the processes its commands left running, not the others'.

The scripted server holds every first reply until all sessions have sent their first
request, and every second reply until the aborted session's abort has returned, so the
interleaving is certain rather than likely.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pi_bash
import pytest

from pi_host.messages import AssistantMessage, TextContent, ToolResultMessage
from pi_host.runtime import AgentSession, SessionOptions, create_session
from tests.fakeservers import AnthropicServer, RecordedRequest, Reply, anthropic_events, anthropic_reply

COUNT = 21
VICTIM = 20  # the session that is aborted
MODELS = ("model-a", "model-b", "model-c")
_SESSION = re.compile(r"session (\d+):")


def _tools(number: int) -> list[str]:
    return ["read", "bash"] if number % 2 == 0 else ["read", "ls"]


def _number(body: dict[str, Any]) -> int:
    first = body["messages"][0]["content"]
    text = first if isinstance(first, str) else first[0]["text"]
    match = _SESSION.search(text)
    assert match is not None, text
    return int(match.group(1))


def _tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        block
        for message in body["messages"]
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block["type"] == "tool_result"
    ]


class _Script:
    """The model's side: what each session is answered, from its request alone."""

    def __init__(self) -> None:
        self.first_requests = 0
        self.all_started: anyio.Event | None = None  # made on the server's loop
        self.victim_aborted = threading.Event()  # set on the test's loop

    async def respond(self, request: RecordedRequest) -> Reply:
        body = request.json()
        number = _number(body)
        results = _tool_results(body)
        first = len(body["messages"]) == 1
        if first:
            await self._all_started()
        if number == VICTIM:
            # The aborted reply is not sent again (pi drops it), so the next prompt's request
            # holds the two prompts.
            if first:
                # Some text, then nothing more: the session is aborted in the middle of it.
                return Reply(
                    pieces=anthropic_events([{"type": "text", "text": "Let me think"}], stop=False), hang=True
                )
            return anthropic_reply(f"session {number} is back")
        if not results:
            return _tool_use(number, "read", {"path": "note.txt"})
        if len(results) == 1:
            # Wait (in a worker thread, the server's loop serves on) for the victim's abort.
            await anyio.to_thread.run_sync(self.victim_aborted.wait)
            if number % 2 == 0:
                # Leaves a process running, which only this session's quit may stop.
                return _tool_use(number, "bash", {"command": "pwd; sleep 60 > /dev/null 2>&1 &"})
            return _tool_use(number, "ls", {})
        return anthropic_reply(f"session {number} is done")

    async def _all_started(self) -> None:
        if self.all_started is None:
            self.all_started = anyio.Event()
        self.first_requests += 1
        if self.first_requests == COUNT:
            self.all_started.set()
        await self.all_started.wait()


def _tool_use(number: int, name: str, arguments: dict[str, Any]) -> Reply:
    block = {"type": "tool_use", "id": f"toolu_{number}_{name}", "name": name, "input": arguments}
    return anthropic_reply([block], stop_reason="tool_use", chunk_size=4)


def _write_models(agent: Path, base_url: str) -> None:
    agent.mkdir()
    models = {
        "providers": {
            "local": {
                "baseUrl": base_url,
                "api": "anthropic-messages",
                "apiKey": "the-shared-key",
                "models": [{"id": model, "contextWindow": 100000, "maxTokens": 4096} for model in MODELS],
            }
        }
    }
    (agent / "models.json").write_text(json.dumps(models))


async def test_concurrent_sessions_on_one_loop_share_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = _Script()
    agent = tmp_path / "agent"
    projects = [tmp_path / f"project-{number}" for number in range(COUNT)]
    for number, project in enumerate(projects):
        project.mkdir()
        (project / "note.txt").write_text(f"secret<{number}>\n")
        (project / f"only-{number}.txt").write_text("")
    sessions: dict[int, AgentSession] = {}
    closed: set[int] = set()
    victim_streaming = anyio.Event()

    with AnthropicServer(respond=script.respond) as server:
        _write_models(agent, server.base_url)
        monkeypatch.setenv("PI_HOST_DIR", str(agent))
        monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)

        async def run(number: int) -> None:
            session = sessions[number] = await create_session(
                SessionOptions(
                    cwd=str(projects[number]),
                    provider="local",
                    model=MODELS[number % len(MODELS)],
                    api_key=f"key-{number}",
                    tools=_tools(number),
                )
            )
            if number == VICTIM:
                session.subscribe(
                    lambda event: victim_streaming.set() if event.type == "message_update" else None
                )
            await session.prompt(f"session {number}: read note.txt, then look around")

        async def abort_the_victim() -> None:
            await victim_streaming.wait()
            await sessions[VICTIM].abort()
            script.victim_aborted.set()

        try:
            with anyio.fail_after(60):
                async with anyio.create_task_group() as tg:
                    for number in range(COUNT):
                        tg.start_soon(run, number)
                    tg.start_soon(abort_the_victim)
                # The aborted session goes on as any session does.
                await sessions[VICTIM].prompt(f"session {VICTIM}: are you there?")
            # One session's quit stops its own background process, not the other sessions'.
            left_running = pi_bash.background_process_groups()
            assert len(left_running) == len(range(0, VICTIM, 2))
            await sessions[0].shutdown("quit")
            closed.add(0)
            assert len(pi_bash.background_process_groups()) == len(left_running) - 1
            assert pi_bash.background_process_groups() < left_running
        finally:
            async with anyio.create_task_group() as tg:
                for number, session in sessions.items():
                    if number not in closed:
                        tg.start_soon(session.shutdown, "quit")
        assert pi_bash.background_process_groups() == frozenset()
        requests = list(server.requests)

    by_session: dict[int, list[RecordedRequest]] = {}
    for request in requests:
        by_session.setdefault(_number(request.json()), []).append(request)
    assert sorted(by_session) == list(range(COUNT))
    # The first requests of all sessions came before any second one: the calls interleaved.
    assert {_number(request.json()) for request in requests[:COUNT]} == set(range(COUNT))

    for number in range(COUNT):
        project = str(projects[number])
        session = sessions[number]
        others = [f"secret<{other}>" for other in range(COUNT) if other != number]
        for request in by_session[number]:
            body = request.json()
            text = request.body.decode()
            assert request.headers["x-api-key"] == f"key-{number}"
            assert body["model"] == MODELS[number % len(MODELS)]
            assert sorted(tool["name"] for tool in body["tools"]) == sorted(_tools(number))
            assert not any(other in text for other in others)
            assert not any(f"session {other}:" in text for other in range(COUNT) if other != number)
        texts = [
            _assistant_text(message) for message in session.messages if isinstance(message, AssistantMessage)
        ]
        results = [
            _result_text(message) for message in session.messages if isinstance(message, ToolResultMessage)
        ]
        if number == VICTIM:
            assert len(by_session[number]) == 2
            stops = [m.stop_reason for m in session.messages if isinstance(m, AssistantMessage)]
            assert stops == ["aborted", "stop"]
            assert texts[-1] == f"session {number} is back"
            assert results == []
        else:
            assert len(by_session[number]) == 3
            second = f"{project}\n" if number % 2 == 0 else f"note.txt\nonly-{number}.txt"
            assert results == [f"secret<{number}>\n", second]
            assert texts[-1] == f"session {number} is done"
        _assert_session_file(session, project, number, others)


def _assert_session_file(session: AgentSession, project: str, number: int, others: list[str]) -> None:
    file = session.session_manager.session_file
    assert file is not None
    lines = [json.loads(line) for line in file.read_text().splitlines()]
    assert lines[0]["type"] == "session" and lines[0]["cwd"] == project
    text = file.read_text()
    assert f"session {number}:" in text
    assert not any(other in text for other in others)
    prompts = [line["message"]["content"] for line in lines if line.get("message", {}).get("role") == "user"]
    assert all(f"session {number}:" in json.dumps(prompt) for prompt in prompts)


def _assistant_text(message: AssistantMessage) -> str:
    return "".join(part.text for part in message.content if isinstance(part, TextContent))


def _result_text(message: ToolResultMessage) -> str:
    return "".join(part.text for part in message.content if isinstance(part, TextContent))
