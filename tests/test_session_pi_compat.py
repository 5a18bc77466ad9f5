"""pi 0.73 and pi-host read and write each other's session files.

The fixtures under tests/data/session were written by pi's own SessionManager
(make_pi_fixtures.mjs). The tests marked ``needs_pi`` run pi itself (node and the pi 0.73
package) and are skipped where those are not installed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from pi_host.messages import AssistantMessage, BashExecutionMessage, TextContent, ToolCall, UserMessage
from pi_host.messages import ToolResultMessage as ToolResult
from pi_host.session import LabelEntry, SessionContext, SessionManager, SessionTreeNode, migrate_entries
from pi_host.session._jsjson import js_dumps
from tests.pi_reference import require_pi_cli, require_pi_package

DATA = Path(__file__).parent / "data" / "session"


@pytest.fixture(autouse=True)
def _agent_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_HOST_DIR", str(tmp_path / "pi-host-agent"))


def _lines(path: Path) -> list[str]:
    return path.read_text("utf-8").split("\n")[:-1]


def _context_json(context: SessionContext) -> dict[str, Any]:
    model = context.model
    return {
        "messages": [message.to_json_dict() for message in context.messages],
        "thinkingLevel": context.thinking_level,
        "model": {"provider": model.provider, "modelId": model.model_id} if model else None,
    }


def _tree_json(nodes: list[SessionTreeNode]) -> list[dict[str, Any]]:
    return [{"id": n.entry.id, "label": n.label, "children": _tree_json(n.children)} for n in nodes]


def _our_view(manager: SessionManager) -> dict[str, Any]:
    """What pi_view.mjs prints, computed by pi-host."""
    leaf = manager.leaf_id
    entries = manager.get_entries()
    contexts = {}
    for key in ["null", *(entry.id for entry in entries)]:
        if key == "null":
            manager.reset_leaf()
        else:
            manager.branch(key)
        contexts[key] = _context_json(manager.build_session_context())
    if leaf is not None:
        manager.branch(leaf)
    return {
        "leafId": leaf,
        "sessionName": manager.session_name,
        "entryIds": [entry.id for entry in entries],
        "contexts": contexts,
        "tree": _tree_json(manager.get_tree()),
        "labels": {entry.id: manager.get_label(entry.id) for entry in entries},
    }


def _pi_view(file: Path) -> dict[str, Any]:
    done = subprocess.run(
        [
            "node",
            str(DATA / "pi_view.mjs"),
            str(require_pi_package() / "dist/core/session-manager.js"),
            str(file),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    view: dict[str, Any] = json.loads(done.stdout)
    return view


def _comparable(view: dict[str, Any]) -> dict[str, Any]:
    return {key: view[key] for key in ("leafId", "sessionName", "entryIds", "contexts", "tree", "labels")}


# -- files pi wrote ---------------------------------------------------------------------


def test_context_at_every_entry_of_a_pi_file_matches_pi(tmp_path: Path) -> None:
    expected = json.loads((DATA / "pi073_session.expected.json").read_text("utf-8"))
    file = tmp_path / "s.jsonl"
    shutil.copy(DATA / "pi073_session.jsonl", file)
    manager = SessionManager.open(file)
    assert manager.warnings == []
    assert manager.leaf_id == expected["leafId"]
    assert manager.header.to_json_dict() == expected["header"]
    ours = _our_view(manager)
    expected["entryIds"] = ours["entryIds"]  # not recorded in the fixture
    assert _comparable(ours) == _comparable(expected)
    assert file.read_bytes() == (DATA / "pi073_session.jsonl").read_bytes()  # reading never writes


def test_branched_session_like_pi_but_without_the_broken_link(tmp_path: Path) -> None:
    expected = json.loads((DATA / "pi073_session.expected.json").read_text("utf-8"))
    source = tmp_path / "s.jsonl"
    shutil.copy(DATA / "pi073_session.jsonl", source)
    manager = SessionManager.open(source)
    new_file = manager.create_branched_session(expected["ids"]["a4"])
    assert new_file is not None and new_file.parent == tmp_path
    ours = _lines(new_file)
    pis = _lines(DATA / "pi073_branched.jsonl")
    header = json.loads(ours[0])
    assert header["parentSession"] == str(source)
    assert list(header) == ["type", "version", "id", "timestamp", "cwd", "parentSession"]
    assert len(ours) == len(pis)
    source_lines = {json.loads(line)["id"]: line for line in _lines(source)[1:]}
    for mine, theirs in zip(ours[1:], pis[1:], strict=True):
        mine_obj, theirs_obj = json.loads(mine), json.loads(theirs)
        if theirs_obj["type"] == "label":  # re-created: new ids
            assert {k: v for k, v in mine_obj.items() if k not in ("id", "parentId")} == {
                k: v for k, v in theirs_obj.items() if k not in ("id", "parentId")
            }
        elif theirs_obj["id"] == expected["ids"]["name1"]:
            # pi leaves this entry pointing at a label it dropped; pi-host re-attaches it.
            assert theirs_obj["parentId"] == expected["ids"]["label3"]
            assert mine_obj["parentId"] == expected["ids"]["customNoData"]
        else:
            assert mine == theirs == source_lines[theirs_obj["id"]]
    context = manager.build_session_context()
    assert context.messages[0].role == "compactionSummary"
    assert manager.get_label(expected["ids"]["u1"]) == "start"
    assert SessionManager.open(new_file).build_session_context() == context


def test_v1_migration_matches_pi(tmp_path: Path) -> None:
    file = tmp_path / "old.jsonl"
    shutil.copy(DATA / "pi072_v1_session.jsonl", file)
    manager = SessionManager.open(file)
    ours = [json.loads(line) for line in _lines(file)]
    pis = [json.loads(line) for line in _lines(DATA / "pi072_v1_session.migrated.jsonl")]
    rename = {mine["id"]: theirs["id"] for mine, theirs in zip(ours[1:], pis[1:], strict=True)}
    renamed = js_dumps(ours)
    for mine_id, pi_id in rename.items():
        renamed = renamed.replace(f'"{mine_id}"', f'"{pi_id}"')
    assert renamed == js_dumps(pis)  # same objects, same key order
    context = manager.build_session_context()
    assert [m.role for m in context.messages] == ["compactionSummary", "assistant", "custom"]
    assert context.thinking_level == "medium"
    assert manager.header.version == 3


def test_v2_files_rename_hook_message(tmp_path: Path) -> None:
    lines = [
        {"type": "session", "version": 2, "id": "v2", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"},
        {
            "type": "message",
            "id": "aaaa0001",
            "parentId": None,
            "timestamp": "2025-01-01T00:00:01.000Z",
            "message": {
                "role": "hookMessage",
                "customType": "h",
                "content": "x",
                "display": True,
                "timestamp": 1,
            },
        },
    ]
    file = tmp_path / "v2.jsonl"
    file.write_text("".join(js_dumps(line) + "\n" for line in lines), "utf-8")
    manager = SessionManager.open(file)
    assert manager.build_session_context().messages[0].role == "custom"
    written = _lines(file)
    assert json.loads(written[0])["version"] == 3
    assert '"role":"custom"' in written[1]
    assert migrate_entries([json.loads(line) for line in written]) is False


# -- pi reading what pi-host writes -----------------------------------------------------


def _build_rich_session(directory: Path) -> SessionManager:
    """A session using every entry type, branches, labels, compactions and a name."""
    manager = SessionManager.create("/home/user/project", directory)
    manager.append_model_change("anthropic", "claude-sonnet-4-5")
    manager.append_thinking_level_change("medium")
    u1 = manager.append_message(UserMessage(content="hello", timestamp=1))
    a1 = manager.append_message(
        AssistantMessage(
            content=[TextContent(text="reading"), ToolCall(id="t1", name="read", arguments={"path": "a"})],
            provider="anthropic",
            model="claude-sonnet-4-5",
            api="anthropic-messages",
            stop_reason="toolUse",
            timestamp=2,
        )
    )
    manager.append_message(
        ToolResult(tool_call_id="t1", tool_name="read", content=[TextContent(text="x = 1/3")], timestamp=3)
    )
    manager.append_message(BashExecutionMessage(command="ls", output="a", exit_code=0, timestamp=4))
    manager.append_custom_message_entry("note", "remember", True, {"k": 1})
    manager.append_custom_entry("state", {"n": 0.000015})
    manager.append_label_change(u1, "first")
    manager.append_session_info("  Rich session ")
    kept = manager.append_message(UserMessage(content="continue", timestamp=5))
    manager.append_message(
        AssistantMessage(content=[TextContent(text="ok")], provider="p2", model="m2", timestamp=6)
    )
    manager.append_compaction("summary of it all", kept, 1234, {"readFiles": ["a"]})
    manager.append_message(UserMessage(content="after", timestamp=7))
    manager.branch_with_summary(a1, "went elsewhere", None, True)
    manager.append_thinking_level_change("high")
    manager.append_message(UserMessage(content="other branch", timestamp=8))
    manager.append_label_change(a1, "fork point")
    manager.append_label_change(u1, None)
    manager.branch_with_summary(None, "from the top")
    manager.append_message(UserMessage(content="new root", timestamp=9))
    manager.append_message(AssistantMessage(content=[TextContent(text="fine")], timestamp=10))
    return manager


def test_pi_resolves_a_pi_host_file_exactly_as_pi_host_does(tmp_path: Path) -> None:
    manager = _build_rich_session(tmp_path / "sessions")
    file = manager.session_file
    assert file is not None
    pi = _pi_view(file)
    ours = _our_view(SessionManager.open(file))
    assert _comparable(ours) == _comparable(pi)
    assert pi["header"] == manager.header.to_json_dict()


def test_pi_reads_a_branched_session_pi_host_made(tmp_path: Path) -> None:
    manager = _build_rich_session(tmp_path / "sessions")
    entries = manager.get_entries()
    target = next(e for e in entries if e.type == "message" and e.to_json().count('"other branch"'))
    new_file = manager.create_branched_session(target.id)
    assert new_file is not None
    assert any(isinstance(entry, LabelEntry) for entry in manager.get_entries())
    pi = _pi_view(new_file)
    assert _comparable(_our_view(SessionManager.open(new_file))) == _comparable(pi)


# -- the real pi, end to end -------------------------------------------------------------


class _FakeAnthropic:
    """A local Anthropic Messages API that streams scripted replies (SSE)."""

    def __init__(self, replies: list[list[dict[str, Any]]]) -> None:
        self.replies = replies
        self.requests: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                fake.requests.append(body)
                blocks = fake.replies[min(len(fake.requests), len(fake.replies)) - 1]
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                self.wfile.write(_sse_reply(len(fake.requests), blocks))

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> _FakeAnthropic:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def _sse_reply(number: int, blocks: list[dict[str, Any]]) -> bytes:
    def event(name: str, data: dict[str, Any]) -> str:
        return f"event: {name}\ndata: {json.dumps(data)}\n\n"

    usage = {
        "input_tokens": 12,
        "output_tokens": 1,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    }
    out = [
        event(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": f"msg_{number}",
                    "type": "message",
                    "role": "assistant",
                    "model": "fake-1",
                    "content": [],
                    "stop_reason": None,
                    "usage": usage,
                },
            },
        )
    ]
    stop = "end_turn"
    for index, block in enumerate(blocks):
        start: dict[str, Any]
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            stop = "tool_use"
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        out.append(
            event(
                "content_block_start", {"type": "content_block_start", "index": index, "content_block": start}
            )
        )
        out.append(
            event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
        )
        out.append(event("content_block_stop", {"type": "content_block_stop", "index": index}))
    out.append(
        event(
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 9}},
        )
    )
    out.append(event("message_stop", {"type": "message_stop"}))
    return "".join(out).encode()


@pytest.fixture
def pi_cli(tmp_path: Path) -> Iterator[Any]:
    pi_cli = require_pi_cli()
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("alpha\nbeta\n", "utf-8")
    agent = tmp_path / "pi-agent"
    agent.mkdir()
    replies: list[list[dict[str, Any]]] = [
        [
            {"type": "text", "text": "Reading it."},
            {"type": "tool_use", "id": "toolu_01", "name": "read", "input": {"path": "notes.txt"}},
        ],
        [{"type": "text", "text": "It says alpha and beta: é \u2028 done."}],
        [{"type": "text", "text": "Continuing where pi-host left off."}],
    ]
    with _FakeAnthropic(replies) as server:
        models = {
            "providers": {
                "fake": {
                    "baseUrl": server.url,
                    "api": "anthropic-messages",
                    "apiKey": "test-key",
                    "models": [
                        {
                            "id": "fake-1",
                            "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75},
                        }
                    ],
                }
            }
        }
        (agent / "models.json").write_text(json.dumps(models), "utf-8")

        def run(*args: str) -> None:
            env = {**os.environ, "PI_CODING_AGENT_DIR": str(agent), "PI_OFFLINE": "1"}
            subprocess.run(
                ["node", str(pi_cli), "--provider", "fake", "--model", "fake-1", *args],
                cwd=project,
                env=env,
                check=True,
                capture_output=True,
                timeout=120,
            )

        run.agent = agent  # type: ignore[attr-defined]
        run.server = server  # type: ignore[attr-defined]
        yield run


def test_round_trip_with_the_real_pi(pi_cli: Any) -> None:
    pi_cli("-p", "What is in notes.txt?")
    files = list((pi_cli.agent / "sessions").glob("*/*.jsonl"))
    assert len(files) == 1
    file = files[0]
    written_by_pi = file.read_bytes()

    # pi-host reads pi's file: same context as pi, every line reproduced exactly.
    manager = SessionManager.open(file)
    assert manager.warnings == []
    assert _comparable(_our_view(manager)) == _comparable(_pi_view(file))
    for line in _lines(file)[1:]:
        entry = manager.get_entry(json.loads(line)["id"])
        assert entry is not None and entry.to_json() == line
    context = manager.build_session_context()
    assert [m.role for m in context.messages] == ["user", "assistant", "toolResult", "assistant"]
    assert context.model is not None and context.model.model_id == "fake-1"

    # pi-host appends; the file keeps pi's bytes and pi continues from pi-host's leaf.
    manager.append_message(UserMessage(content="And now?"))
    manager.append_message(
        AssistantMessage(content=[TextContent(text="From pi-host.")], provider="fake", model="fake-1")
    )
    assert file.read_bytes().startswith(written_by_pi)
    assert _comparable(_pi_view(file)) == _comparable(_our_view(SessionManager.open(file)))

    pi_cli("-c", "-p", "Go on")
    assert len(list((pi_cli.agent / "sessions").glob("*/*.jsonl"))) == 1
    sent = pi_cli.server.requests[-1]["messages"]
    assert any("From pi-host." in json.dumps(message) for message in sent)
    reopened = SessionManager.open(file)
    assert reopened.warnings == []
    assert _comparable(_our_view(reopened)) == _comparable(_pi_view(file))
    last = reopened.build_session_context().messages[-1]
    assert isinstance(last, AssistantMessage)
    assert last.content[0] == TextContent(text="Continuing where pi-host left off.")
