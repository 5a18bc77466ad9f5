"""pi 0.73 and pi-host continue each other's sessions and send the model the same context.

Both command-line programs talk to one local fake Anthropic server (configured through
``models.json`` in each agent directory: ``PI_CODING_AGENT_DIR`` for pi, ``PI_HOST_DIR`` for
pi-host), which records every request body. A session is written by one program, copied, and
continued once by each with ``--session <file>``; the two continuation requests must carry
the same ``messages`` (and the same request settings, everything but the system prompt and
the tool descriptions, which are each program's own prose).

pi itself comes from ``tests.pi_reference``: found, or installed with npm into a cache
directory; the tests are skipped, saying why, only when node or npm is unavailable.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pi_host.messages import AssistantMessage, BashExecutionMessage, TextContent, Usage, UserMessage
from pi_host.session import SessionManager
from tests.fakeservers import AnthropicServer, anthropic_reply
from tests.pi_reference import PI_HOST, clean_env, require_pi_cli


@pytest.fixture(scope="session")
def pi_cli() -> Path:
    """pi's ``cli.js``; installed into the test cache with npm the first time if needed."""
    return require_pi_cli()


@dataclass
class Agents:
    """pi and pi-host, each with its own agent directory, sharing one fake server and project."""

    pi_cli: Path
    server: AnthropicServer
    project: Path
    pi_dir: Path
    host_dir: Path
    reasoning: bool

    def first_prompt(self) -> list[str]:
        """The arguments of the prompt that writes the session; queues its two replies."""
        self.server.enqueue(*(THINKING_REPLIES if self.reasoning else REPLIES))
        # With reasoning the session starts at "low"; continuing must restore it from the file.
        return (
            ["--thinking", "low", "-p", "What is in notes.txt?"]
            if self.reasoning
            else ["-p", "What is in notes.txt?"]
        )

    def _env(self) -> dict[str, str]:
        return clean_env()

    def pi(self, *args: str) -> str:
        env = {**self._env(), "PI_CODING_AGENT_DIR": str(self.pi_dir), "PI_OFFLINE": "1"}
        return self._run(["node", str(self.pi_cli), *args], env)

    def pi_host(self, *args: str) -> str:
        return self._run([PI_HOST, *args], {**self._env(), "PI_HOST_DIR": str(self.host_dir)})

    def _run(self, argv: list[str], env: dict[str, str]) -> str:
        done = subprocess.run(
            [*argv, "--provider", "fake", "--model", "fake-1"],
            cwd=self.project,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"{argv[:2]} failed:\n{done.stderr}"
        return done.stdout

    def continue_with_both(self, written: Path, prompt: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """Continue copies of ``written`` with pi, then with pi-host; their request bodies."""
        for_pi = self.project.parent / "continued-by-pi.jsonl"
        for_host = self.project.parent / "continued-by-pi-host.jsonl"
        shutil.copyfile(written, for_pi)
        shutil.copyfile(written, for_host)
        self.server.enqueue(anthropic_reply("pi continues."), anthropic_reply("pi-host continues."))
        before = len(self.server.requests)
        assert self.pi("--session", str(for_pi), "-p", prompt) == "pi continues.\n"
        assert self.pi_host("--session", str(for_host), "-p", prompt) == "pi-host continues.\n"
        pi_body, host_body = (request.json() for request in self.server.requests[before:])
        # Each program can read what the other appended.
        for file in (for_pi, for_host):
            assert SessionManager.open(file).warnings == []
        return pi_body, host_body


REPLIES = [
    anthropic_reply(
        [
            {"type": "text", "text": "Reading it."},
            {"type": "tool_use", "id": "toolu_01", "name": "read", "input": {"path": "notes.txt"}},
        ],
        stop_reason="tool_use",
    ),
    anthropic_reply("It says alpha and beta: é \u2028 done."),
]


THINKING_REPLIES = [
    anthropic_reply(
        [
            {"type": "thinking", "thinking": "The user wants the file.", "signature": "sig-1"},
            {"type": "tool_use", "id": "toolu_01", "name": "read", "input": {"path": "notes.txt"}},
        ],
        stop_reason="tool_use",
    ),
    anthropic_reply(
        [
            {"type": "thinking", "thinking": "Two lines.", "signature": "sig-2"},
            {"type": "text", "text": "It says alpha and beta: é \u2028 done."},
        ]
    ),
]


@pytest.fixture(params=[False, True], ids=["plain", "reasoning"])
def agents(request: pytest.FixtureRequest, tmp_path: Path, pi_cli: Path) -> Iterator[Agents]:
    """Plain replies, or a reasoning model whose signed thinking blocks must be replayed."""
    reasoning: bool = request.param
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("alpha\nbeta\n", "utf-8")
    server = AnthropicServer()
    with server:
        models = {
            "providers": {
                "fake": {
                    "baseUrl": server.base_url,
                    "api": "anthropic-messages",
                    "apiKey": "test-key",
                    "models": [
                        {
                            "id": "fake-1",
                            "name": "Fake",
                            "reasoning": reasoning,
                            "contextWindow": 200000,
                            "maxTokens": 8192,
                        }
                    ],
                }
            }
        }
        dirs: list[Path] = []
        for name in ("pi-agent", "pi-host-agent"):
            directory = tmp_path / name
            directory.mkdir()
            (directory / "models.json").write_text(json.dumps(models), "utf-8")
            dirs.append(directory)
        yield Agents(pi_cli, server, project, dirs[0], dirs[1], reasoning)


def comparable(body: dict[str, Any]) -> dict[str, Any]:
    """The request without what each program words itself: the system prompt and tool prose."""
    rest = {key: value for key, value in body.items() if key not in ("system", "tools")}
    rest["tool_names"] = [tool["name"] for tool in body.get("tools", [])]
    return rest


def only_session(directory: Path) -> Path:
    (file,) = (directory / "sessions").glob("*/*.jsonl")
    return file


def test_pi_continues_a_pi_host_session_with_the_same_context(agents: Agents) -> None:
    assert agents.pi_host(*agents.first_prompt()) == "It says alpha and beta: é \u2028 done.\n"
    written = only_session(agents.host_dir)

    pi_body, host_body = agents.continue_with_both(written, "And now?")

    assert pi_body["messages"] == host_body["messages"]
    assert comparable(pi_body) == comparable(host_body)
    roles = [message["role"] for message in pi_body["messages"]]
    assert roles == ["user", "assistant", "user", "assistant", "user"]
    assert pi_body["messages"][2]["content"][0]["content"] == "alpha\nbeta\n"


def test_pi_host_continues_a_pi_session_with_the_same_context(agents: Agents) -> None:
    assert agents.pi(*agents.first_prompt()) == "It says alpha and beta: é \u2028 done.\n"
    written = only_session(agents.pi_dir)

    pi_body, host_body = agents.continue_with_both(written, "And now?")

    assert host_body["messages"] == pi_body["messages"]
    assert comparable(host_body) == comparable(pi_body)
    assert host_body["messages"][-1]["content"][0]["text"] == "And now?"
    if agents.reasoning:
        assert host_body["messages"][1]["content"][0] == {
            "type": "thinking",
            "thinking": "The user wants the file.",
            "signature": "sig-1",
        }
        assert host_body.get("thinking") == pi_body.get("thinking") is not None


def test_every_context_entry_kind_reaches_both_models_alike(agents: Agents, tmp_path: Path) -> None:
    """A session with each entry kind that shapes the context (bash output, a custom message,
    a branch summary, a compaction), written by pi-host's session API: pi and pi-host turn it
    into the same Anthropic request."""
    manager = SessionManager.create(agents.project, tmp_path / "written", cache_dir=False)
    manager.append_model_change("fake", "fake-1")
    manager.append_thinking_level_change("low" if agents.reasoning else "off")

    def reply(text: str) -> AssistantMessage:
        return AssistantMessage(
            content=[TextContent(text=text)],
            api="anthropic-messages",
            provider="fake",
            model="fake-1",
            usage=Usage(input=10, output=2, total_tokens=12),
        )

    first_kept = manager.append_message(UserMessage(content="first"))
    kept = manager.append_message(reply("one"))
    manager.append_message(UserMessage(content="abandoned question"))
    manager.append_message(reply("abandoned answer"))
    manager.branch_with_summary(kept, "The user asked about something else, then came back.")
    manager.append_message(
        BashExecutionMessage(
            command="ls", output="notes.txt\n", exit_code=0, cancelled=False, truncated=False
        )
    )
    manager.append_message(
        BashExecutionMessage(
            command="env",
            output="SECRET=1",
            exit_code=0,
            cancelled=False,
            truncated=False,
            exclude_from_context=True,
        )
    )
    manager.append_custom_message_entry("note", "remember the notes file", True, {"k": 1})
    manager.append_message(UserMessage(content="second"))
    manager.append_message(reply("two"))
    manager.append_message(UserMessage(content="third"))
    manager.append_message(reply("three"))
    manager.append_compaction("They talked about notes.", first_kept, 1234)
    manager.append_message(UserMessage(content="fourth"))
    manager.append_message(reply("four"))
    written = manager.session_file
    assert written is not None

    pi_body, host_body = agents.continue_with_both(written, "And now?")

    assert host_body["messages"] == pi_body["messages"]
    assert comparable(host_body) == comparable(pi_body)
    texts = json.dumps(pi_body["messages"])
    assert "They talked about notes." in texts and "SECRET" not in texts
    # The compaction keeps everything from "first" on: each kind of entry is in the request.
    for text in ("notes.txt", "remember the notes file", "came back", "two", "four"):
        assert text in texts
    assert "abandoned question" not in texts
