"""pi-host's JSON and RPC modes beside pi 0.73's: the same records, field by field.

Each scenario (a plain reply, a ``read`` tool call then text, an overloaded 529 and an invalid
400 error, an abort mid-stream) runs as a subprocess against its own local fake Anthropic
server, configured through ``models.json`` in the agent's directory (``PI_HOST_DIR`` for
pi-host, ``PI_CODING_AGENT_DIR`` for pi) with retries off, so an error ends the run at once.

pi-host's output is always checked against pi 0.73's record shapes, written out below
(:data:`EVENT_KEYS` and friends, read off the real pi's output). When pi itself can run
(``tests.pi_reference`` finds it or installs it with npm), the same scenario also runs in pi
and the two outputs are compared record by record:

- the sequence of records (``message_update`` with its ``assistantMessageEvent`` type);
- every record's shape: its keys, recursively, and the JSON type of every value;
- the values themselves wherever they do not depend on timing: everything but the streaming
  snapshots, with timestamps, session ids, paths and the servers' ports set aside.

Differences that are deliberate, and normalised away here:

- pi's streaming snapshots (``message_update``'s ``message`` and ``partial``, the assistant's
  ``message_start``) are the provider's live object, serialised after later chunks changed
  it: they may already hold blocks whose start event comes later, a later usage, and the
  provider's scratch fields ``index`` and ``partialJson``. pi-host writes what the message
  was at the time of the event. Snapshots are compared by shape, without their content.
- An aborted reply's ``errorMessage``: pi passes on Node's fetch text ("This operation was
  aborted"); pi-host says "Request was aborted", as pi's other providers do.
- The edit tool's details: pi-host adds a unified ``patch`` beside pi's ``diff``.
- A tool's progress updates (``tool_execution_update``) come as its output arrives: each
  stretch of them is compared as the set of its shapes.
- ``get_last_assistant_text`` without a reply: pi writes ``{}``, pi-host ``{"text": null}``
  as pi's RPC docs say.
- ``get_available_models``: pi-host also lists its built-in offline model ``faux/faux-1``
  (so ``cycle_model`` with one configured model moves to it, where pi answers null: not
  compared).
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest

from pi_host.messages import AssistantMessage, TextContent
from pi_host.providers import Model
from pi_host.runtime import SessionAgentEndEvent
from pi_host.testing import RpcClient
from tests.fakeservers import (
    AnthropicServer,
    Reply,
    anthropic_error,
    anthropic_events,
    anthropic_reply,
    sse_event,
)
from tests.pi_reference import PI_HOST, clean_env, require_pi_cli

Agent = Literal["pi", "pi-host"]
Mode = Literal["json", "rpc"]
Record = dict[str, Any]

TIMEOUT = 60.0
PROMPT = "What is in notes.txt?"
MODEL = {"id": "fake-1", "name": "Fake", "contextWindow": 200000, "maxTokens": 8192}
# Both agents' retry layers off: pi's auto-retry and its SDK's own retries of a 529.
NO_RETRY = {"retry": {"enabled": False, "provider": {"maxRetries": 0}}}
# One quick auto-retry, without the SDK's retries.
QUICK_RETRY = {"retry": {"enabled": True, "maxRetries": 2, "baseDelayMs": 10, "provider": {"maxRetries": 0}}}

# -- the scenarios ---------------------------------------------------------------------------


def _tool_call() -> list[Reply]:
    return [
        anthropic_reply(
            [
                {"type": "text", "text": "Reading it."},
                {"type": "tool_use", "id": "toolu_01", "name": "read", "input": {"path": "notes.txt"}},
            ],
            stop_reason="tool_use",
        ),
        anthropic_reply("It says alpha and beta."),
    ]


def _slow_reply(repeat: int = 40) -> list[Reply]:
    # Long enough that the abort lands mid-stream whatever the machine's load.
    return [anthropic_reply("one two three four five six seven eight " * repeat, chunk_size=4, latency=0.05)]


def _held_reply(release: threading.Event) -> Reply:
    """A reply that stops after its first text delta until ``release`` is set.

    Commands sent mid-stream are then all answered before the next delta: how many deltas
    would otherwise fall between them depends on the machine's load (CI's 2 cores).
    """
    reply = anthropic_reply("one two three four five six seven eight " * 3, chunk_size=4)
    first_delta = next(n for n, piece in enumerate(reply.pieces) if b"content_block_delta" in piece)
    return dataclasses.replace(reply, hold_before=first_delta + 1, release=release)


def _tool_error() -> list[Reply]:
    call = {"type": "tool_use", "id": "toolu_01", "name": "read", "input": {"path": "missing.txt"}}
    return [anthropic_reply([call], stop_reason="tool_use"), anthropic_reply("There is no such file.")]


def _edit_write_bash() -> list[Reply]:
    calls = [
        ("edit", {"path": "edit-me.txt", "edits": [{"oldText": "two", "newText": "TWO"}]}),
        ("write", {"path": "new.txt", "content": "fresh\n"}),
        ("bash", {"command": "printf 'a\\nb\\n'"}),
    ]
    replies = [
        anthropic_reply(
            [{"type": "tool_use", "id": f"toolu_0{n}", "name": name, "input": args}], stop_reason="tool_use"
        )
        for n, (name, args) in enumerate(calls, 1)
    ]
    return [*replies, anthropic_reply("Done.")]


def _error_mid_stream() -> list[Reply]:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    started = anthropic_events([{"type": "text", "text": "Partial answ"}], stop=False)
    return [Reply(pieces=[*started, sse_event("error", error)])]


@dataclass(frozen=True)
class Scenario:
    """The server's replies, and how both agents are set up for them."""

    replies: Callable[[], list[Reply]]
    #: The first reply is :func:`_held_reply`, which the run releases.
    held: bool = False
    settings: dict[str, Any] = field(default_factory=lambda: NO_RETRY)
    reasoning: bool = False
    args: tuple[str, ...] = ()
    #: Files the scenario's tools work on, written afresh before each run (None: removed).
    files: dict[str, str | None] = field(default_factory=dict)


SCENARIOS: dict[str, Scenario] = {
    "plain": Scenario(lambda: [anthropic_reply("Hello there, friend.")]),
    "tool-call": Scenario(_tool_call),
    "tool-error": Scenario(_tool_error),
    "thinking": Scenario(
        lambda: [
            anthropic_reply(
                [
                    {"type": "thinking", "thinking": "The user wants the file.", "signature": "sig-1"},
                    {"type": "text", "text": "Answer."},
                ]
            )
        ],
        reasoning=True,
        args=("--thinking", "low"),
    ),
    "edit-write-bash": Scenario(
        _edit_write_bash, files={"edit-me.txt": "one\ntwo\nthree\n", "new.txt": None}
    ),
    "overloaded": Scenario(lambda: [anthropic_error(529, "Overloaded")]),
    "invalid-request": Scenario(lambda: [anthropic_error(400, "messages.0.content: must not be empty")]),
    "error-mid-stream": Scenario(_error_mid_stream),
    "auto-retry": Scenario(
        lambda: [anthropic_error(529, "Overloaded"), anthropic_reply("Recovered.")], settings=QUICK_RETRY
    ),
    "abort": Scenario(_slow_reply),
    "compact": Scenario(
        lambda: [anthropic_reply("Hello there, friend. " * 20), anthropic_reply("## Goal\nRead notes.\n")],
        # Keep almost nothing, so that even this short session has something to summarise.
        settings={**NO_RETRY, "compaction": {"keepRecentTokens": 1}},
    ),
    # #17: a manual compaction of a session that all fits keepRecentTokens still summarises.
    "compact-small": Scenario(
        lambda: [anthropic_reply("Hello there."), anthropic_reply("## Goal\nSay hello.\n")], settings=NO_RETRY
    ),
    "bad-lines": Scenario(list),
    "ui": Scenario(list),
    "queue": Scenario(lambda: [anthropic_reply("It is small."), anthropic_reply("Two lines.")], held=True),
}

# Lines no client should send; each gets one error response and the process keeps serving.
BAD_LINES = [b"{not json\n", b"[1, 2]\n", b'"text"\n', b'{"id": "no-type"}\n', b'{"type": null}\n']

# After the plain RPC run: the commands whose answers depend on the session (request id,
# command, fields).
PLAIN_RPC_COMMANDS: list[tuple[str, str, dict[str, Any]]] = [
    ("stats", "get_session_stats", {}),
    ("last", "get_last_assistant_text", {}),
    ("forks", "get_fork_messages", {}),
    ("bash", "bash", {"command": "echo hi"}),
    ("bad-fork", "fork", {"entryId": "nope"}),
    ("thinking", "set_thinking_level", {"level": "high"}),
    ("cycle-thinking", "cycle_thinking_level", {}),
    ("steering-mode", "set_steering_mode", {"mode": "all"}),
    ("follow-up-mode", "set_follow_up_mode", {"mode": "all"}),
    ("auto-compaction", "set_auto_compaction", {"enabled": False}),
    ("auto-retry", "set_auto_retry", {"enabled": True}),
    ("name", "set_session_name", {"name": "notes"}),
    ("empty-name", "set_session_name", {"name": "  "}),
    ("state-after", "get_state", {}),
    ("set-model", "set_model", {"provider": "fake", "modelId": "fake-1"}),
    ("bad-model", "set_model", {"provider": "fake", "modelId": "nope"}),
    ("new", "new_session", {}),
    ("messages-after-new", "get_messages", {}),
    ("last-after-new", "get_last_assistant_text", {}),
    ("stats-after-new", "get_session_stats", {}),
    ("forks-after-new", "get_fork_messages", {}),
    ("unknown", "no_such_command", {}),
]

# -- pi 0.73's record shapes: (required keys, optional keys) ---------------------------------

EVENT_KEYS: dict[str, tuple[set[str], set[str]]] = {
    "session": ({"type", "version", "id", "timestamp", "cwd"}, {"parentSession"}),
    "agent_start": ({"type"}, set()),
    "agent_end": ({"type", "messages"}, set()),
    "turn_start": ({"type"}, set()),
    "turn_end": ({"type", "message", "toolResults"}, set()),
    "message_start": ({"type", "message"}, set()),
    "message_update": ({"type", "message", "assistantMessageEvent"}, set()),
    "message_end": ({"type", "message"}, set()),
    "tool_execution_start": ({"type", "toolCallId", "toolName", "args"}, set()),
    "tool_execution_update": ({"type", "toolCallId", "toolName", "args", "partialResult"}, set()),
    "tool_execution_end": ({"type", "toolCallId", "toolName", "result", "isError"}, set()),
    "queue_update": ({"type", "steering", "followUp"}, set()),
    "compaction_start": ({"type", "reason"}, set()),
    "compaction_end": ({"type", "reason", "aborted", "willRetry"}, {"result", "errorMessage"}),
    "auto_retry_start": ({"type", "attempt", "maxAttempts", "delayMs", "errorMessage"}, set()),
    "auto_retry_end": ({"type", "success", "attempt"}, {"finalError"}),
    "session_info_changed": ({"type"}, {"name"}),
    "thinking_level_changed": ({"type", "level"}, set()),
    # An unknown command's type, when missing, is missing from the answer too.
    "response": ({"type", "success"}, {"id", "command", "data", "error"}),
    "extension_ui_request": (
        {"type", "id", "method"},
        {
            "title",
            "options",
            "message",
            "placeholder",
            "prefill",
            "timeout",
            "notifyType",
            "statusKey",
            "statusText",
            "widgetKey",
            "widgetLines",
            "widgetPlacement",
            "text",
        },
    ),
}
MESSAGE_KEYS: dict[str, tuple[set[str], set[str]]] = {
    "user": ({"role", "content", "timestamp"}, set()),
    "assistant": (
        {"role", "content", "api", "provider", "model", "usage", "stopReason", "timestamp"},
        {"responseId", "errorMessage"},
    ),
    "toolResult": ({"role", "toolCallId", "toolName", "content", "isError", "timestamp"}, {"details"}),
    "compactionSummary": ({"role", "summary", "tokensBefore", "timestamp"}, set()),
}
BLOCK_KEYS: dict[str, tuple[set[str], set[str]]] = {
    "text": ({"type", "text"}, {"textSignature"}),
    "thinking": ({"type", "thinking"}, {"thinkingSignature", "redacted"}),
    "toolCall": ({"type", "id", "name", "arguments"}, {"thoughtSignature"}),
    "image": ({"type", "data", "mimeType"}, set()),
}
STREAM_EVENT_KEYS: dict[str, set[str]] = {
    "start": {"type", "partial"},
    "text_start": {"type", "contentIndex", "partial"},
    "text_delta": {"type", "contentIndex", "delta", "partial"},
    "text_end": {"type", "contentIndex", "content", "partial"},
    "thinking_start": {"type", "contentIndex", "partial"},
    "thinking_delta": {"type", "contentIndex", "delta", "partial"},
    "thinking_end": {"type", "contentIndex", "content", "partial"},
    "toolcall_start": {"type", "contentIndex", "partial"},
    "toolcall_delta": {"type", "contentIndex", "delta", "partial"},
    "toolcall_end": {"type", "contentIndex", "toolCall", "partial"},
}
USAGE_KEYS = {"input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost"}
COST_KEYS = {"input", "output", "cacheRead", "cacheWrite", "total"}
MODEL_KEYS = {
    "id",
    "name",
    "api",
    "provider",
    "baseUrl",
    "reasoning",
    "input",
    "cost",
    "contextWindow",
    "maxTokens",
}
STATE_KEYS = (
    {
        "model",
        "thinkingLevel",
        "isStreaming",
        "isCompacting",
        "steeringMode",
        "followUpMode",
        "sessionId",
        "autoCompactionEnabled",
        "messageCount",
        "pendingMessageCount",
    },
    {"sessionFile", "sessionName"},
)


def _check_keys(where: str, found: Iterable[str], expected: tuple[set[str], set[str]]) -> None:
    required, optional = expected
    keys = set(found)
    assert required <= keys <= required | optional, (
        f"{where}: missing {sorted(required - keys)}, unexpected {sorted(keys - required - optional)}"
    )


def check_message(where: str, message: Record, *, streaming: bool = False) -> None:
    """``message`` has pi 0.73's keys for its role, its blocks and its usage."""
    _check_keys(where, message, MESSAGE_KEYS[message["role"]])
    content = message.get("content")
    if isinstance(content, list):
        for block in content:
            _check_keys(f"{where} {block['type']} block", block, BLOCK_KEYS[block["type"]])
            if block["type"] == "toolCall":
                assert isinstance(block["arguments"], dict), where
    if message["role"] == "assistant":
        assert set(message["usage"]) == USAGE_KEYS, where
        assert set(message["usage"]["cost"]) == COST_KEYS, where
        assert isinstance(message["timestamp"], int), where
        if not streaming:
            assert message["stopReason"] in ("stop", "length", "toolUse", "error", "aborted"), where
            assert ("errorMessage" in message) == (message["stopReason"] in ("error", "aborted")), where


def check_pi_shapes(records: Sequence[Record]) -> None:
    """Every record has the keys pi 0.73 writes for its kind, down to messages and blocks."""
    for number, record in enumerate(records):
        kind = record["type"]
        where = f"record {number} ({kind})"
        assert kind in EVENT_KEYS, f"{where}: pi 0.73 writes no such record"
        _check_keys(where, record, EVENT_KEYS[kind])
        if kind == "message_update":
            update = record["assistantMessageEvent"]
            assert set(update) == STREAM_EVENT_KEYS[update["type"]], where
            check_message(f"{where} partial", update["partial"], streaming=True)
            check_message(where, record["message"], streaming=True)
        elif kind in ("message_start", "message_end", "turn_end"):
            check_message(where, record["message"], streaming=kind == "message_start")
        if kind == "turn_end":
            for result in record["toolResults"]:
                check_message(f"{where} tool result", result)
        if kind == "agent_end":
            for message in record["messages"]:
                check_message(where, message)
        if kind == "tool_execution_end":
            assert set(record["result"]) <= {"content", "details"}, where
        if kind == "response" and record["success"] and record.get("command") == "get_state":
            _check_keys(f"{where} data", record["data"], STATE_KEYS)
            assert set(record["data"]["model"]) == MODEL_KEYS, where
        if kind == "response" and record.get("command") == "get_messages":
            for message in record["data"]["messages"]:
                check_message(where, message)
        if kind == "response" and record.get("command") == "get_available_models":
            for model in record["data"]["models"]:
                assert set(model) == MODEL_KEYS, where


# -- running an agent ------------------------------------------------------------------------


@dataclass
class Workspace:
    """A project with ``notes.txt`` and one agent directory per program."""

    root: Path
    pi_cli: Path | None = None
    runs: dict[tuple[Agent, Mode, str], Run] = field(default_factory=dict)
    #: Set by a run of a ``held`` scenario when its first reply may go on.
    release: threading.Event = field(default_factory=threading.Event)

    @property
    def project(self) -> Path:
        return self.root / "project"

    def agent_dir(self, agent: Agent) -> Path:
        return self.root / agent

    def command(self, agent: Agent, scenario: str, *args: str) -> tuple[list[str], dict[str, str]]:
        env = clean_env()
        if agent == "pi":
            assert self.pi_cli is not None
            env.update(PI_CODING_AGENT_DIR=str(self.agent_dir(agent)), PI_OFFLINE="1")
            argv = ["node", str(self.pi_cli)]
        else:
            env["PI_HOST_DIR"] = str(self.agent_dir(agent))
            argv = [PI_HOST]
        setup = SCENARIOS[scenario].args
        return [*argv, "--model", "fake/fake-1", "--no-session", *setup, *args], env

    def serve(self, agent: Agent, scenario: Scenario, server: AnthropicServer) -> None:
        """Point ``agent`` at ``server``, set up for ``scenario``."""
        directory = self.agent_dir(agent)
        directory.mkdir(exist_ok=True)
        provider = {"baseUrl": server.base_url, "api": "anthropic-messages", "apiKey": "test-key"}
        model = {**MODEL, "reasoning": scenario.reasoning}
        models = {"providers": {"fake": {**provider, "models": [model]}}}
        (directory / "models.json").write_text(json.dumps(models), "utf-8")
        (directory / "settings.json").write_text(json.dumps(scenario.settings), "utf-8")

    def run(self, agent: Agent, mode: Mode, scenario: str) -> Run:
        """The output of ``scenario`` in ``agent``'s ``mode``, run once per module."""
        key = (agent, mode, scenario)
        if key not in self.runs:
            for name, text in SCENARIOS[scenario].files.items():
                (self.project / name).unlink(missing_ok=True)
                if text is not None:
                    (self.project / name).write_text(text, "utf-8")
            replies = SCENARIOS[scenario].replies()
            if SCENARIOS[scenario].held:
                self.release = threading.Event()
                replies.insert(0, _held_reply(self.release))
            server = AnthropicServer(replies)
            with server:
                self.serve(agent, SCENARIOS[scenario], server)
                try:
                    if mode == "json":
                        self.runs[key] = self._run_json(agent, scenario)
                    else:
                        self.runs[key] = self._run_rpc(agent, scenario)
                finally:
                    self.release.set()  # a failed run leaves no server thread waiting
                self.runs[key].requests = len(server.requests)
        return self.runs[key]

    def _run_json(self, agent: Agent, scenario: str) -> Run:
        argv, env = self.command(agent, scenario, "--mode", "json", PROMPT)
        done = subprocess.run(
            argv,
            cwd=self.project,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        assert done.stderr == "" or done.returncode == 0, done.stderr
        records = [json.loads(line) for line in done.stdout.splitlines()]
        return Run(records, done.returncode, done.stderr)

    def _run_rpc(self, agent: Agent, scenario: str) -> Run:
        if scenario == "ui":
            return self._run_ui(agent)
        argv, env = self.command(agent, scenario, "--mode", "rpc")
        with RpcClient(argv, cwd=self.project, env=env, timeout=TIMEOUT) as rpc:
            if scenario == "bad-lines":
                for line in BAD_LINES:
                    rpc.send_raw(line)
                    rpc.wait_for(lambda r: r["type"] == "response")
                return _finish(rpc)
            if scenario == "plain":
                _call(rpc, "state-before", "get_state")
            rpc.send({"id": "run", "type": "prompt", "message": PROMPT})
            if scenario in ("abort", "queue"):
                rpc.wait_for(
                    lambda r: (
                        r["type"] == "message_update" and r["assistantMessageEvent"]["type"] == "text_delta"
                    )
                )
            if scenario == "abort":
                rpc.send({"id": "stop", "type": "abort"})
            if scenario == "queue":
                _call(rpc, "steer", "steer", message="Also look at the size.")
                _call(rpc, "follow-up", "follow_up", message="Then summarise.")
                self.release.set()
                # The run goes on through both queued messages: three replies, one agent_end.
            rpc.wait_for(lambda r: r["type"] == "agent_end")
            for command in ("get_state", "get_messages", "get_available_models"):
                _call(rpc, command, command)
            if scenario == "plain":
                for request_id, command, fields in PLAIN_RPC_COMMANDS:
                    _call(rpc, request_id, command, **fields)
            if scenario in ("compact", "compact-small"):
                _call(rpc, "compact", "compact")
                _call(rpc, "messages-after", "get_messages")
                _call(rpc, "state-after", "get_state")
                _call(rpc, "stats-after", "get_session_stats")
            return _finish(rpc)

    def _run_ui(self, agent: Agent) -> Run:
        """The ``/ask`` command of :data:`ASK_EXTENSION` (pi) or :data:`ASK_PLUGIN` (pi-host),
        answered from the client side of the UI sub-protocol."""
        if agent == "pi":
            extension = self.root / "ask.js"
            extension.write_text(ASK_EXTENSION, "utf-8")
            argv, env = self.command(agent, "ui", "--mode", "rpc", "--extension", str(extension))
        else:
            # pi-host loads the plugin module the way a distribution does (PYTHONPATH + module).
            plugin_dir = self.root / "ui-plugin"
            plugin_dir.mkdir(exist_ok=True)
            (plugin_dir / "ask_plugin.py").write_text(ASK_PLUGIN, "utf-8")
            argv, env = self.command(agent, "ui", "--mode", "rpc")
            argv[:1] = [sys.executable, "-c", ASK_LAUNCHER]
            env["PYTHONPATH"] = str(plugin_dir)
        with RpcClient(argv, cwd=self.project, env=env, timeout=TIMEOUT) as rpc:
            rpc.send({"id": "ask", "type": "prompt", "message": "/ask"})
            for answer in UI_ANSWERS:
                request = rpc.wait_for(lambda r: r["type"] == "extension_ui_request")
                rpc.send({"type": "extension_ui_response", "id": request["id"], **answer})
            rpc.wait_for(lambda r: r.get("method") == "set_editor_text")
            _call(rpc, "after", "get_state")
            return _finish(rpc)


ASK_LAUNCHER = (
    "import sys; from pi_host import Distribution; "
    "sys.exit(Distribution(name='pi-host', agent_dir_env='PI_HOST_DIR', "
    "plugin_modules=('ask_plugin',)).main())"
)
# The same command for both programs: every dialog, then every fire-and-forget request.
ASK_EXTENSION = """
export default function (pi) {
  pi.registerCommand("ask", {
    description: "Ask the client",
    handler: async (args, ctx) => {
      const color = await ctx.ui.select("Pick one", ["red", "blue"]);
      const sure = await ctx.ui.confirm("Sure?", "You picked " + color);
      const name = await ctx.ui.input("Name?", "your name");
      const text = await ctx.ui.editor("Edit", "prefill");
      const none = await ctx.ui.select("Cancel me", ["x"]);
      ctx.ui.notify([color, sure, name, text, none].join(" "), "warning");
      ctx.ui.setStatus("ask", "asked");
      ctx.ui.setWidget("ask", ["line 1", "line 2"]);
      ctx.ui.setTitle("Asked");
      ctx.ui.setEditorText("next prompt");
    },
  });
}
"""
ASK_PLUGIN = """
from pi_host.hookspecs import Command, hookimpl


async def ask(args, ctx):
    ui = ctx.ui
    color = await ui.select("Pick one", ["red", "blue"])
    sure = await ui.confirm("Sure?", "You picked " + color)
    name = await ui.input("Name?", "your name")
    text = await ui.editor("Edit", "prefill")
    none = await ui.select("Cancel me", ["x"])
    # As JavaScript joins them: booleans in lower case, a missing value as "".
    shown = [color, "true" if sure else "false", name, text, none or ""]
    ui.notify(" ".join(shown), "warning")
    ui.set_status("ask", "asked")
    ui.set_widget("ask", ["line 1", "line 2"])
    ui.set_title("Asked")
    ui.set_editor_text("next prompt")


@hookimpl
def pi_register_commands(register):
    register(Command(name="ask", description="Ask the client", handler=ask))
"""
UI_ANSWERS: list[Record] = [
    {"value": "blue"},
    {"confirmed": True},
    {"value": "Ada"},
    {"value": "edited"},
    {"cancelled": True},
]


@dataclass
class Run:
    """What one program wrote on stdout, as records, and how it ended."""

    records: list[Record]
    exit_code: int
    stderr: str
    requests: int = 0


def _call(rpc: RpcClient, request_id: str, command: str, /, **fields: Any) -> Record:
    """Send a command and read on to its response.

    Not :meth:`RpcClient.call`: pi answers an unknown command without the id.
    """
    rpc.send({"id": request_id, "type": command, **fields})
    return rpc.wait_for(
        lambda r: (
            r["type"] == "response" and r.get("id", request_id) == request_id and r["command"] == command
        )
    )


def _finish(rpc: RpcClient) -> Run:
    """Close stdin, wait for the exit, and collect what is still written: the whole run."""
    code = rpc.close()
    rpc.read_to_end()
    return Run(rpc.records, code, rpc.stderr)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    root = tmp_path_factory.mktemp("json-rpc-vs-pi")
    (root / "project").mkdir()
    (root / "project" / "notes.txt").write_text("alpha\nbeta\n", "utf-8")
    return Workspace(root)


@pytest.fixture
def with_pi(workspace: Workspace) -> Workspace:
    """The workspace, with the real pi available (or the test skipped, saying why)."""
    workspace.pi_cli = require_pi_cli()
    return workspace


# -- normalising for comparison --------------------------------------------------------------

# Keys whose values differ between any two runs: when, where, which session, which port.
VOLATILE = {"timestamp", "sessionId", "baseUrl", "cwd", "entryId", "firstKeptEntryId"}
# The provider's scratch fields that pi's live streaming snapshots expose.
PI_SCRATCH = {"index", "partialJson"}


def shape(value: Any) -> Any:
    """``value`` with every leaf replaced by its JSON type."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(item) for item in value]
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    assert value is None, f"not a JSON value: {value!r}"
    return "null"


def settled(value: Any) -> Any:
    """``value`` with the volatile values set aside, numbers as written (``0`` is not ``0.0``)."""
    if isinstance(value, dict):
        return {key: f"<{key}>" if key in VOLATILE else settled(item) for key, item in value.items()}
    if isinstance(value, list):
        return [settled(item) for item in value]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return Number(json.dumps(value))
    return value


class Number(str):
    """A JSON number's text, so that a comparison tells ``3`` from ``3.0``."""


def snapshot(message: Record) -> Any:
    """A streaming snapshot's shape, without what pi may have filled in by the time it
    serialised it: the content and a failure's ``errorMessage``."""
    return shape({key: value for key, value in message.items() if key not in ("content", "errorMessage")})


def comparable(record: Record, *, values: bool) -> Any:
    """What of ``record`` must be equal in pi and pi-host: its values (``values``, volatile
    ones aside) or its shape; streaming snapshots by their shape, without content."""
    kind = record["type"]
    if kind == "message_update":
        update = {key: value for key, value in record["assistantMessageEvent"].items() if key != "partial"}
        return {
            "type": kind,
            "assistantMessageEvent": settled(update) if values else shape(update),
            "partial": snapshot(record["assistantMessageEvent"]["partial"]),
            "message": snapshot(record["message"]),
        }
    if kind == "message_start" and record["message"]["role"] == "assistant":
        return {"type": kind, "message": snapshot(record["message"])}
    if kind in ("session", "extension_ui_request"):
        record = {**record, "id": "<id>"}
    if kind == "response" and record.get("command") == "get_available_models" and record["success"]:
        models = [model for model in record["data"]["models"] if model["provider"] != "faux"]
        record = {**record, "data": {"models": models}}
    if kind == "response" and record.get("command") == "get_last_assistant_text" and record["data"] == {}:
        # pi leaves out an undefined text; its docs (and pi-host) say {"text": null}.
        record = {**record, "data": {"text": None}}
    if kind == "response" and record.get("command") == "get_session_stats":
        # After new_session, pi's in-memory session reports a made-up relative file name.
        data = {key: value for key, value in record["data"].items() if key != "sessionFile"}
        record = {**record, "data": data}
    return settled(record) if values else shape(record)


def key_order(value: Any) -> Any:
    """The keys of every object in ``value``, in the order they are written."""
    if isinstance(value, dict):
        return [(key, key_order(item)) for key, item in value.items()]
    if isinstance(value, list):
        return [key_order(item) for item in value]
    return None


def without_pi_scratch(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: without_pi_scratch(item) for key, item in value.items() if key not in PI_SCRATCH}
    if isinstance(value, list):
        return [without_pi_scratch(item) for item in value]
    return value


def label(record: Record) -> str:
    if record["type"] == "message_update":
        return f"message_update:{record['assistantMessageEvent']['type']}"
    if record["type"] == "response":
        return f"response:{record.get('command')}"
    return str(record["type"])


def assert_same_records(pi: Run, host: Run, *, values: bool = True, collapse_updates: bool = False) -> None:
    """pi's and pi-host's records agree: sequence, then each record's shape or values.

    A tool's progress updates come as its output happens to arrive, so each stretch of
    ``tool_execution_update`` is compared as the set of its shapes. With
    ``collapse_updates``, so are stretches of ``message_update``: how many come before a
    command's answer, or before an abort lands, depends on timing.
    """
    timed = {"tool_execution_update"} | ({"message_update"} if collapse_updates else set())
    pi_records = _collapse([without_host_extras(without_pi_scratch(record)) for record in pi.records], timed)
    host_records = _collapse([without_host_extras(record) for record in host.records], timed)
    assert [label(r) for r in host_records] == [label(r) for r in pi_records]
    for number, (ours, theirs) in enumerate(zip(host_records, pi_records, strict=True)):
        by_value = values and ours["type"] not in timed
        assert comparable(ours, values=by_value) == comparable(theirs, values=by_value), (
            f"record {number} ({label(ours)}) differs"
        )
        if ours["type"] != "message_update" and not (
            ours["type"] == "message_start" and ours["message"]["role"] == "assistant"
        ):
            mine, pis = (key_order(comparable(r, values=True)) for r in (ours, theirs))
            assert mine == pis, f"record {number} ({label(ours)}): keys in another order"
    assert (host.exit_code, host.requests) == (pi.exit_code, pi.requests)


def _collapse(records: list[Record], timed: set[str]) -> list[Record]:
    """Each stretch of ``timed`` records reduced to the first record of each shape."""
    seen: list[Any] = []
    kept: list[Record] = []
    for record in records:
        if record["type"] not in timed:
            seen.clear()
            kept.append(record)
            continue
        view = (label(record), comparable(record, values=False))
        if view not in seen:
            seen.append(view)
            kept.append(record)
    return kept


def without_host_extras(value: Any) -> Any:
    """``value`` without what pi-host adds on purpose: the edit tool's unified ``patch``
    beside pi's ``diff`` in its details."""
    if isinstance(value, dict):
        extra = {"patch"} if {"diff", "firstChangedLine"} <= value.keys() else set()
        return {key: without_host_extras(item) for key, item in value.items() if key not in extra}
    if isinstance(value, list):
        return [without_host_extras(item) for item in value]
    return value


# -- pi-host against pi 0.73's shapes --------------------------------------------------------

ALL_JSON = [
    "plain",
    "tool-call",
    "tool-error",
    "thinking",
    "overloaded",
    "invalid-request",
    "error-mid-stream",
    "auto-retry",
    "edit-write-bash",
]
ALL_RPC = ["plain", "tool-call", "overloaded", "abort", "queue", "compact", "ui", "bad-lines"]


def _kinds(run: Run) -> list[str]:
    return [label(record) for record in run.records if record["type"] != "message_update"]


@pytest.mark.parametrize("scenario", ALL_JSON)
def test_json_mode_writes_pis_record_shapes(workspace: Workspace, scenario: str) -> None:
    run = workspace.run("pi-host", "json", scenario)
    assert run.exit_code == 0, run.stderr
    assert run.records[0]["type"] == "session"
    check_pi_shapes(run.records)
    assert run.records[-1]["type"] == "agent_end"


@pytest.mark.parametrize("scenario", ALL_RPC)
def test_rpc_mode_writes_pis_record_shapes(workspace: Workspace, scenario: str) -> None:
    run = workspace.run("pi-host", "rpc", scenario)
    assert run.exit_code == 0, run.stderr
    check_pi_shapes(run.records)


# The order pi's providers write an assistant message's keys in (responseId and
# errorMessage are added last).
ASSISTANT_KEY_ORDER = ["role", "content", "api", "provider", "model", "usage", "stopReason", "timestamp"]


def test_json_plain_reply_sequence(workspace: Workspace) -> None:
    run = workspace.run("pi-host", "json", "plain")
    assert _kinds(run) == [
        "session",
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]
    updates = [r["assistantMessageEvent"] for r in run.records if r["type"] == "message_update"]
    assert [u["type"] for u in updates] == [
        "text_start",
        "text_delta",
        "text_delta",
        "text_delta",
        "text_end",
    ]
    assert "".join(u.get("delta", "") for u in updates) == "Hello there, friend."
    reply = [r for r in run.records if r["type"] == "message_end"][-1]["message"]
    assert list(reply) == [*ASSISTANT_KEY_ORDER, "responseId"]


def test_json_tool_call_sequence(workspace: Workspace) -> None:
    run = workspace.run("pi-host", "json", "tool-call")
    assert _kinds(run)[5:] == [
        "message_start",
        "message_end",
        "tool_execution_start",
        "tool_execution_end",
        "message_start",
        "message_end",
        "turn_end",
        "turn_start",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]
    end = next(r for r in run.records if r["type"] == "tool_execution_end")
    assert end["result"] == {"content": [{"type": "text", "text": "alpha\nbeta\n"}]}
    assert end["isError"] is False


@pytest.mark.parametrize(
    ("scenario", "text"),
    [
        ("overloaded", '529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'),
        (
            "invalid-request",
            '400 {"type":"error","error":{"type":"invalid_request_error",'
            '"message":"messages.0.content: must not be empty"}}',
        ),
    ],
)
def test_json_error_reply_is_one_failed_assistant_message(
    workspace: Workspace, scenario: str, text: str
) -> None:
    run = workspace.run("pi-host", "json", scenario)
    ends = [r["message"] for r in run.records if r["type"] == "message_end"]
    assert [m["role"] for m in ends] == ["user", "assistant"]
    assert (ends[1]["stopReason"], ends[1]["errorMessage"], ends[1]["content"]) == ("error", text, [])
    assert list(ends[1]) == [*ASSISTANT_KEY_ORDER, "errorMessage"]
    assert run.records[-1] == {"type": "agent_end", "messages": run.records[-1]["messages"]}
    assert run.requests == 1


OVERLOADED = '529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'


def test_json_auto_retry_events_sit_where_pi_puts_them(workspace: Workspace) -> None:
    run = workspace.run("pi-host", "json", "auto-retry")
    assert _kinds(run)[7:] == [
        "turn_end",
        "agent_end",
        "auto_retry_start",
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "auto_retry_end",
        "turn_end",
        "agent_end",
    ]
    retry = [r for r in run.records if r["type"].startswith("auto_retry")]
    assert retry == [
        {
            "type": "auto_retry_start",
            "attempt": 1,
            "maxAttempts": 2,
            "delayMs": 10,
            "errorMessage": OVERLOADED,
        },
        {"type": "auto_retry_end", "success": True, "attempt": 1},
    ]
    assert run.requests == 2


def test_json_error_mid_stream_keeps_the_text_so_far(workspace: Workspace) -> None:
    run = workspace.run("pi-host", "json", "error-mid-stream")
    updates = [r["assistantMessageEvent"]["type"] for r in run.records if r["type"] == "message_update"]
    assert updates == ["text_start", "text_delta", "text_delta", "text_end"]
    reply = [r for r in run.records if r["type"] == "message_end"][-1]["message"]
    assert (reply["stopReason"], reply["content"]) == ("error", [{"type": "text", "text": "Partial answ"}])
    assert "overloaded_error" in reply["errorMessage"]


def test_json_thinking_blocks_carry_their_signature(workspace: Workspace) -> None:
    run = workspace.run("pi-host", "json", "thinking")
    updates = [r["assistantMessageEvent"]["type"] for r in run.records if r["type"] == "message_update"]
    assert updates[0] == "thinking_start" and "thinking_end" in updates
    reply = [r for r in run.records if r["type"] == "message_end"][-1]["message"]
    assert reply["content"][0] == {
        "type": "thinking",
        "thinking": "The user wants the file.",
        "thinkingSignature": "sig-1",
    }


def test_rpc_steer_and_follow_up_become_turns_of_the_same_run(workspace: Workspace) -> None:
    run = workspace.run("pi-host", "rpc", "queue")
    queues = [(r["steering"], r["followUp"]) for r in run.records if r["type"] == "queue_update"]
    steer, follow_up = "Also look at the size.", "Then summarise."
    assert queues == [([steer], []), ([steer], [follow_up]), ([], [follow_up]), ([], [])]
    prompts = [
        r["message"]["content"][0]["text"]
        for r in run.records
        if r["type"] == "message_start" and r["message"]["role"] == "user"
    ]
    assert prompts == [PROMPT, steer, follow_up]
    assert _kinds(run).count("agent_end") == 1


def test_rpc_abort_keeps_the_partial_reply_and_its_timestamp(workspace: Workspace) -> None:
    run = workspace.run("pi-host", "rpc", "abort")
    kinds = _kinds(run)
    # pi answers abort once the run has ended.
    assert kinds.index("response:abort") == kinds.index("agent_end") + 1
    start = next(
        r for r in run.records if r["type"] == "message_start" and r["message"]["role"] == "assistant"
    )
    end = next(r for r in run.records if r["type"] == "message_end" and r["message"]["role"] == "assistant")
    assert end["message"]["stopReason"] == "aborted"
    assert end["message"]["content"][0]["text"].startswith("one ")
    assert end["message"]["timestamp"] == start["message"]["timestamp"]
    state = next(r for r in run.records if r["type"] == "response" and r["command"] == "get_state")
    assert (state["data"]["isStreaming"], state["data"]["messageCount"]) == (False, 2)


def test_rpc_session_stats_write_whole_numbers_as_pi_does(workspace: Workspace) -> None:
    run = workspace.run("pi-host", "rpc", "plain")
    stats = next(r["data"] for r in run.records if r.get("id") == "stats-after-new")
    # JavaScript writes 0, not 0.0: the numbers must come back as ints.
    assert type(stats["contextUsage"]["percent"]) is int
    assert type(stats["cost"]) is int


def test_rpc_manual_compaction_events_and_result(workspace: Workspace) -> None:
    run = workspace.run("pi-host", "rpc", "compact")
    kinds = _kinds(run)
    start = kinds.index("compaction_start")
    assert kinds[start : start + 3] == ["compaction_start", "compaction_end", "response:compact"]
    end = next(r for r in run.records if r["type"] == "compaction_end")
    assert set(end) == {"type", "reason", "result", "aborted", "willRetry"}
    assert set(end["result"]) == {"summary", "firstKeptEntryId", "tokensBefore", "details"}
    answer = next(r for r in run.records if r.get("id") == "compact")
    assert answer["data"] == end["result"]
    messages = next(r for r in run.records if r.get("id") == "messages-after")["data"]["messages"]
    assert messages[0]["role"] == "compactionSummary"


def test_rpc_compact_of_a_small_session_summarises_it(workspace: Workspace) -> None:
    """Regression (#17): ``compact`` on a one-exchange session answered "Nothing to compact";
    pi summarises (the cut keeps the whole exchange)."""
    run = workspace.run("pi-host", "rpc", "compact-small")
    answer = next(r for r in run.records if r.get("id") == "compact")
    assert answer["success"] is True, answer
    assert answer["data"]["summary"].startswith("## Goal\nSay hello.")
    assert run.requests == 2
    messages = next(r for r in run.records if r.get("id") == "messages-after")["data"]["messages"]
    assert [m["role"] for m in messages] == ["compactionSummary", "user", "assistant"]


def test_rpc_context_usage_is_unknown_after_compaction(workspace: Workspace) -> None:
    run = workspace.run("pi-host", "rpc", "compact")
    stats = next(r for r in run.records if r.get("id") == "stats-after")["data"]
    assert stats["contextUsage"] == {"tokens": None, "contextWindow": 200000, "percent": None}


def test_rpc_ui_requests_carry_only_what_the_plugin_gave(workspace: Workspace) -> None:
    run = workspace.run("pi-host", "rpc", "ui")
    requests = {r["method"]: r for r in run.records if r["type"] == "extension_ui_request"}
    assert {key: value for key, value in requests["setWidget"].items() if key != "id"} == {
        "type": "extension_ui_request",
        "method": "setWidget",
        "widgetKey": "ask",
        "widgetLines": ["line 1", "line 2"],
    }
    assert requests["notify"]["message"] == "blue true Ada edited "


def test_agent_end_json_leaves_out_will_retry() -> None:
    # pi 0.73's agent_end is {type, messages}; will_retry is for Python subscribers.
    event = SessionAgentEndEvent(
        messages=[AssistantMessage(content=[TextContent(text="x")])], will_retry=True
    )
    assert set(event.to_json_dict()) == {"type", "messages"}
    assert event.will_retry is True


def test_model_prices_keep_whole_numbers_whole() -> None:
    model = Model(id="m", api="anthropic-messages", provider="p", cost={"input": 3, "output": 0.8})
    assert '"cost":{"input":3,"output":0.8,"cacheRead":0,"cacheWrite":0}' in model.to_json()


# -- pi-host beside the real pi --------------------------------------------------------------


@pytest.mark.parametrize("scenario", ALL_JSON)
def test_json_mode_matches_pi(with_pi: Workspace, scenario: str) -> None:
    pi = with_pi.run("pi", "json", scenario)
    host = with_pi.run("pi-host", "json", scenario)
    assert_same_records(pi, host)


@pytest.mark.parametrize("scenario", ["plain", "tool-call", "overloaded", "compact", "compact-small"])
def test_rpc_mode_matches_pi(with_pi: Workspace, scenario: str) -> None:
    pi = with_pi.run("pi", "rpc", scenario)
    host = with_pi.run("pi-host", "rpc", scenario)
    assert_same_records(pi, host)


def test_rpc_bad_lines_get_pis_errors_and_the_process_keeps_serving(workspace: Workspace) -> None:
    run = workspace.run("pi-host", "rpc", "bad-lines")
    parse, *unknown = run.records
    assert parse["command"] == "parse" and parse["error"].startswith("Failed to parse command: ")
    assert unknown == [
        *[{"type": "response", "success": False, "error": "Unknown command: undefined"}] * 3,
        {"type": "response", "command": None, "success": False, "error": "Unknown command: null"},
    ]
    assert run.exit_code == 0


def test_rpc_bad_lines_match_pi(with_pi: Workspace) -> None:
    pi = with_pi.run("pi", "rpc", "bad-lines")
    host = with_pi.run("pi-host", "rpc", "bad-lines")
    # The parse error quotes each language's JSON parser: its shape only.
    assert shape(host.records[0]) == shape(pi.records[0])
    assert host.records[1:] == pi.records[1:]


def test_rpc_ui_sub_protocol_matches_pi(with_pi: Workspace) -> None:
    pi = with_pi.run("pi", "rpc", "ui")
    host = with_pi.run("pi-host", "rpc", "ui")
    assert [r["method"] for r in host.records if r["type"] == "extension_ui_request"] == [
        "select",
        "confirm",
        "input",
        "editor",
        "select",
        "notify",
        "setStatus",
        "setWidget",
        "setTitle",
        "set_editor_text",
    ]
    assert_same_records(pi, host)


def test_rpc_steer_and_follow_up_while_streaming_match_pi(with_pi: Workspace) -> None:
    pi = with_pi.run("pi", "rpc", "queue")
    host = with_pi.run("pi-host", "rpc", "queue")
    assert_same_records(pi, host, collapse_updates=True)


def test_rpc_abort_matches_pi(with_pi: Workspace) -> None:
    pi = with_pi.run("pi", "rpc", "abort")
    host = with_pi.run("pi-host", "rpc", "abort")
    # Where the stream stops and the abort's wording depend on the program: shapes only.
    assert_same_records(pi, host, values=False, collapse_updates=True)
