"""``pi-host`` in interactive mode, end to end: the real session runtime on the faux provider.

The command runs in a pseudo-terminal with an isolated agent directory and a faux script; the
test types as a person would and reads the screen back. The tool calls are shell loops that wait
for a file the test creates once the screen shows what it waits for, so no step depends on
timing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.interactive_support.terminal import (
    ALT_ENTER,
    CTRL_C,
    CTRL_D,
    CTRL_U,
    DOWN,
    ENTER,
    ESCAPE,
    Terminal,
    Terminals,
)
from tests.wheelhouse import offline_uv_args

PI_HOST = shutil.which("pi-host") or str(Path(sys.executable).parent / "pi-host")
SELECTED = "\N{SINGLE RIGHT-POINTING ANGLE QUOTATION MARK}"  # the picker's cursor

pytestmark = pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a POSIX pseudo-terminal")


def move_down_to(term: Terminal, text: str, limit: int = 10) -> None:
    """Press Down in a picker until the selected line shows ``text``."""
    for _ in range(limit):
        if f"{SELECTED} {text}" in term.screen.screen_text():
            return
        counter = re.search(r"\((\d+)/\d+\)", term.screen.screen_text())
        term.send(DOWN)
        if counter is not None:
            before = counter.group(0)
            term.wait_for(lambda before=before: before not in term.screen.screen_text())
    raise AssertionError(f"{text!r} not reached in the picker:\n{term.dump()}")


def wait_for_file(name: str) -> str:
    return f"while [ ! -f {name} ]; do sleep 0.02; done"


@pytest.fixture
def pi_host(tmp_path: Path) -> Iterator[Any]:
    terminals = Terminals()

    def start(script: list[dict[str, Any]], *args: str, env: dict[str, str] | None = None) -> Terminal:
        agent_dir = tmp_path / "agent"
        agent_dir.mkdir(exist_ok=True)
        # Keep little recent history, so that a short test session has something to compact.
        (agent_dir / "settings.json").write_text(json.dumps({"compaction": {"keepRecentTokens": 10}}))
        script_file = tmp_path / "faux.json"
        script_file.write_text(json.dumps(script))
        environment = {
            "PI_HOST_DIR": str(agent_dir),
            "PI_HOST_FAUX_SCRIPT": str(script_file),
            "ANTHROPIC_API_KEY": "",
            "OPENAI_API_KEY": "",
            **(env or {}),
        }
        return terminals.start([PI_HOST, "--provider", "faux", *args], cwd=tmp_path, env=environment)

    yield start
    terminals.close()


def test_interactive_session_end_to_end(pi_host: Any, tmp_path: Path) -> None:
    term: Terminal = pi_host(
        [
            {
                "thinking": "Considering the greeting.",
                "text": "# Greeting\n\nHello **world**.\n\n- one\n- two\n\nThe end.",
            },
            {
                "toolCalls": [
                    {"name": "bash", "arguments": {"command": f"{wait_for_file('go')}; echo 42 passed"}}
                ]
            },
            {"text": "Steered as asked."},
            {"toolCalls": [{"name": "bash", "arguments": {"command": wait_for_file("never")}}]},
            {"text": "## Goal\nGreet and run the tests."},  # compaction: the history summary
            {"text": "The turn began with a long command."},  # ... and the split turn's prefix
        ]
    )

    # A prompt and its streamed answer: thinking, markdown, and usage in the footer.
    term.submit("hello there")
    term.wait_for("The end.")
    text = term.screen.text()
    assert "hello there" in text and "Considering the greeting." in text
    assert "Hello world." in text and "• one" in text
    term.wait_gone("Working...")

    # Steer while the tool runs: the message waits in the queue until the tool is done.
    term.submit("run the tests")
    term.wait_for("while [ ! -f go ]")
    term.submit("also check lint")
    term.wait_for("Steering: also check lint", where=term.screen.screen_text)
    (tmp_path / "go").write_text("")
    term.wait_for("Steered as asked.")
    text = term.screen.text()
    assert text.index("│ 42") < text.index("also check lint") < text.index("Steered as asked.")
    term.wait_gone("Working...")

    # Escape aborts the run; the queued follow-up comes back into the editor.
    term.submit("start something long")
    term.wait_for("while [ ! -f never ]")
    term.type("remember the docs")
    term.send(ALT_ENTER)
    term.wait_for("Follow-up: remember the docs", where=term.screen.screen_text)
    term.send(ESCAPE)
    term.wait_for(lambda: term.editor_text() == "remember the docs")
    term.wait_gone("Working...")
    term.wait_gone("Follow-up: remember the docs")
    term.send(CTRL_C)
    term.wait_for(lambda: term.editor_text() == "")

    # /compact summarizes through the model (the faux script's last reply).
    term.submit("/compact keep the test names")
    term.wait_for("[compaction]", timeout=30)
    term.wait_for("Compacted from")
    term.wait_for(lambda: term.rule_count() == 2)  # nothing of the live area was left behind

    # /tree: go back to the first user message, without a summary; its text returns to the editor.
    term.submit("/tree")
    term.wait_for("Session Tree", where=term.screen.screen_text)
    term.wait_for("• [compaction:", where=term.screen.screen_text)  # the tree draws after its title
    term.wait_for(f"{SELECTED} • [compaction:", where=term.screen.screen_text)  # the leaf
    term.send(DOWN)  # round to the first entry (the model change is bookkeeping, not shown)
    term.wait_for(f"{SELECTED} • user: hello there", where=term.screen.screen_text)
    term.send(ENTER)
    term.wait_for("Summarize branch?", where=term.screen.screen_text)
    term.send(ENTER)
    term.wait_for("Navigated to selected point")
    term.wait_for(lambda: term.editor_text() == "hello there")

    term.send(CTRL_U)  # not Ctrl+C: the one above may be under half a second ago, and would quit
    term.wait_for(lambda: term.editor_text() == "")
    term.submit("/quit")
    assert term.wait_exit(timeout=30) == 0


@pytest.mark.parametrize(("keys", "trusted"), [(ENTER, True), (ESCAPE, False)])
def test_an_undecided_project_is_asked_about_before_the_screen_starts(
    tmp_path: Path, keys: str, trusted: bool
) -> None:
    """A project with its own `.pi` settings and no decision yet: interactive mode asks first."""
    agent_dir, project = tmp_path / "agent", tmp_path / "project"
    agent_dir.mkdir()
    (project / ".pi").mkdir(parents=True)
    (project / ".pi" / "settings.json").write_text(json.dumps({"quietStartup": True}))
    script = tmp_path / "faux.json"
    script.write_text(json.dumps([{"text": "hi"}]))
    env = {"PI_HOST_DIR": str(agent_dir), "PI_HOST_FAUX_SCRIPT": str(script), "ANTHROPIC_API_KEY": ""}
    term = Terminal([PI_HOST, "--provider", "faux"], cwd=project, env=env)
    try:
        term.wait_for("Trust project folder?", timeout=60)
        term.wait_for("Do not trust (this session only)")
        term.send(keys)
        term.wait_for("(auto)", timeout=60)  # the interactive screen is up
        stored = agent_dir / "trust.json"
        assert (json.loads(stored.read_text()) if stored.exists() else {}) == (
            {str(project): True} if trusted else {}
        )
        term.double_ctrl_c()
        assert term.wait_exit() == 0
    finally:
        term.close()


def test_trust_command_saves_the_answer_and_loads_the_project(tmp_path: Path) -> None:
    """Untrusted at start-up (Escape), then /trust: trust.json records it and the project's
    settings and prompt templates take effect at once."""
    agent_dir, project = tmp_path / "agent", tmp_path / "project"
    agent_dir.mkdir()
    (project / ".pi" / "prompts").mkdir(parents=True)
    (project / ".pi" / "settings.json").write_text(json.dumps({"compaction": {"enabled": False}}))
    (project / ".pi" / "prompts" / "greet.md").write_text("Say hello from the project template.\n")
    script = tmp_path / "faux.json"
    script.write_text(json.dumps([{"text": "Hello back."}]))
    env = {"PI_HOST_DIR": str(agent_dir), "PI_HOST_FAUX_SCRIPT": str(script), "ANTHROPIC_API_KEY": ""}
    term = Terminal([PI_HOST, "--provider", "faux"], cwd=project, env=env)
    try:
        term.wait_for("Trust project folder?", timeout=60)
        term.send(ESCAPE)
        term.wait_for("(auto)", timeout=60)  # global settings only: auto-compaction is on

        term.submit("/trust")
        term.wait_for("not decided yet")
        term.wait_for(f"{SELECTED} Trust", where=term.screen.screen_text)
        term.send(ENTER)
        term.wait_for("Project trusted")
        assert json.loads((agent_dir / "trust.json").read_text()) == {str(project): True}
        # The project's settings.json turns auto-compaction off; its prompt template expands.
        term.wait_for(lambda: "(auto)" not in _footer(term))
        term.submit("/greet")
        term.wait_for("Hello back.")
        assert "Say hello from the project template." in term.screen.text()

        term.submit("/trust")
        term.wait_for("remembered in")
        term.wait_for(f"{SELECTED} Trust", where=term.screen.screen_text)
        move_down_to(term, "Do not trust (this session only)")
        term.send(ENTER)
        term.wait_for("Project not trusted")
        term.wait_for(lambda: "(auto)" in _footer(term))
        assert json.loads((agent_dir / "trust.json").read_text()) == {str(project): True}
        term.double_ctrl_c()
        assert term.wait_exit() == 0
    finally:
        term.close()


def _footer(term: Terminal) -> str:
    return next((line for line in reversed(term.screen.display()) if "↑" in line or "%/" in line), "")


def test_import_continues_a_session_file_from_elsewhere(pi_host: Any, tmp_path: Path) -> None:
    from pi_host.messages import AssistantMessage, TextContent, UserMessage
    from pi_host.session import SessionManager

    elsewhere = tmp_path / "elsewhere"
    manager = SessionManager.create(tmp_path, elsewhere, cache_dir=False)
    manager.append_message(UserMessage(content="question from the old session"))
    manager.append_message(
        AssistantMessage(
            api="faux", provider="faux", model="m", content=[TextContent(text="answer from the old session")]
        )
    )
    assert manager.session_file is not None
    source = tmp_path / "old.jsonl"
    source.write_bytes(manager.session_file.read_bytes())
    original = source.read_bytes()
    (tmp_path / "notes.jsonl").write_text("just some notes\n")
    term: Terminal = pi_host([{"text": "Continuing the old session."}])

    # Not a session file: named, and left as it was.
    term.submit("/import notes.jsonl")
    term.wait_for("Replace current session with notes.jsonl?", where=term.screen.screen_text)
    term.send("y")
    # (The message names the file by its full path, so it may wrap anywhere.)
    term.wait_for(re.compile(r"is\s+not\s+a\s+pi\s+session\s+file"))
    assert (tmp_path / "notes.jsonl").read_text() == "just some notes\n"

    term.submit("/import old.jsonl")
    term.wait_for("Replace current session with old.jsonl?", where=term.screen.screen_text)
    term.send("y")
    term.wait_for("Session imported from: old.jsonl")
    text = term.screen.text()
    assert "question from the old session" in text and "answer from the old session" in text

    # The conversation goes on in a copy inside the session directory; the original is untouched.
    term.submit("and now?")
    term.wait_for("Continuing the old session.")
    term.wait_gone("Working...")
    copies = list((tmp_path / "agent" / "sessions").rglob("old.jsonl"))
    assert len(copies) == 1
    assert "Continuing the old session." in copies[0].read_text()
    assert source.read_bytes() == original
    term.double_ctrl_c()
    assert term.wait_exit() == 0


@pytest.mark.parametrize("flag", ["-r", "--resume"])
def test_resume_flag_opens_the_session_picker(pi_host: Any, tmp_path: Path, flag: str) -> None:
    from pi_host.messages import AssistantMessage, TextContent, UserMessage
    from pi_host.session import SessionManager
    from pi_host.session._paths import default_session_dir

    manager = SessionManager.create(
        tmp_path, default_session_dir(tmp_path, tmp_path / "agent"), cache_dir=False
    )
    manager.append_message(UserMessage(content="question from yesterday"))
    manager.append_message(
        AssistantMessage(
            api="faux", provider="faux", model="m", content=[TextContent(text="answer from yesterday")]
        )
    )
    term: Terminal = pi_host([{"text": "Picking up where we left off."}], flag)

    term.wait_for("Resume session", where=term.screen.screen_text)
    term.wait_for(f"{SELECTED} question from yesterday", where=term.screen.screen_text)
    term.send(ENTER)
    term.wait_for("Resumed session")
    term.wait_for("answer from yesterday")
    term.submit("go on")
    term.wait_for("Picking up where we left off.")
    term.wait_gone("Working...")
    assert "Picking up where we left off." in manager.session_file.read_text()  # type: ignore[union-attr]
    term.double_ctrl_c()
    assert term.wait_exit() == 0


def test_escape_during_bash_keeps_the_output_so_far(pi_host: Any, tmp_path: Path) -> None:
    command = f"echo first line; echo second line; {wait_for_file('never')}"
    term: Terminal = pi_host(
        [{"toolCalls": [{"name": "bash", "arguments": {"command": command}}]}, {"text": "Stopped, as asked."}]
    )
    term.submit("run it")
    term.wait_for("second line")
    term.send(ESCAPE)
    term.wait_for("Command aborted")
    term.wait_gone("Working...")
    # The panel's bottom may reach the screen in a later read than the line above it.
    term.wait_for(lambda: "╰" in term.screen.text().partition("Command aborted")[2])
    text = term.screen.text()
    assert text.index("first line") < text.index("second line") < text.index("Command aborted")
    # (The empty reply cut short after the tool says "Operation aborted" under the panel, as pi's does.)
    panel_end = text.index("╰", text.index("Command aborted"))
    assert "Operation aborted" not in text[:panel_end]

    # The model is told the same: the output so far, then pi's "Command aborted".
    (session_file,) = (tmp_path / "agent" / "sessions").rglob("*.jsonl")
    results = [
        entry["message"]
        for entry in map(json.loads, session_file.read_text().splitlines())
        if entry.get("type") == "message" and entry["message"].get("role") == "toolResult"
    ]
    assert len(results) == 1 and results[0]["isError"] is True
    told = results[0]["content"][0]["text"]
    assert told.startswith("first line\nsecond line\n") and told.endswith("\n\nCommand aborted")
    term.double_ctrl_c()
    assert term.wait_exit() == 0


def term_words(term: Terminal) -> str:
    """The screen's text without spaces or line breaks, blank lines kept as ``\\n``: a
    message wrapped over lines reads as one word, and where it ends shows."""
    return "\n".join("".join(block.split()) for block in term.screen.text().split("\n\n"))


def test_fork_lists_every_user_message_session_shows_the_path_export_writes_here(
    pi_host: Any, tmp_path: Path
) -> None:
    term: Terminal = pi_host([{"text": "Answer one."}, {"text": "Answer two."}, {"text": "Answer three."}])
    term.submit("first question")
    term.wait_for("Answer one.")
    term.wait_gone("Working...")
    term.submit("second question")
    term.wait_for("Answer two.")
    term.wait_gone("Working...")
    # Back to the first question, and off on another branch from there.
    term.submit("/tree")
    term.wait_for("• user: second question", where=term.screen.screen_text)
    term.wait_for(f"{SELECTED} • assistant: Answer two.", where=term.screen.screen_text)  # the leaf
    term.send(DOWN)  # round to the first entry
    term.wait_for(f"{SELECTED} • user: first question", where=term.screen.screen_text)
    term.send(ENTER)
    term.wait_for("Summarize branch?", where=term.screen.screen_text)
    term.send(ENTER)
    term.wait_for(lambda: term.editor_text() == "first question")
    term.send(CTRL_C)
    term.wait_for(lambda: term.editor_text() == "")
    term.submit("another take")
    term.wait_for("Answer three.")
    term.wait_gone("Working...")

    # /fork offers the user messages of every branch, as pi does.
    term.submit("/fork")
    term.wait_for("Fork from message", where=term.screen.screen_text)
    # Waited for, not asserted: the list may draw after its title.
    for message in ("first question", "second question", "another take"):
        term.wait_for(message, where=term.screen.screen_text)
    term.send(ESCAPE)
    term.wait_gone("Fork from message")

    # /session names the file by its full path; /export writes into the working directory.
    (session_file,) = (tmp_path / "agent" / "sessions").rglob("*.jsonl")
    term.submit("/session")
    term.wait_for("Session Info")
    term.wait_for(lambda: str(session_file) in "".join(term.screen.text().split()))
    term.submit("/export")
    exported = tmp_path / f"pi-host-session-{session_file.stem}.html"
    term.wait_for(lambda: exported.exists())
    # As pi, the message names the file as written: the default name, relative to the cwd.
    term.wait_for(lambda: f"Sessionexportedto:{exported.name}\n" in term_words(term))
    assert "Answer three." in exported.read_text()
    # A .jsonl target gets the current branch alone, as a session file chained anew (pi's).
    term.submit("/export out/branch.jsonl")
    branch_file = tmp_path / "out" / "branch.jsonl"
    term.wait_for(lambda: f"Sessionexportedto:{branch_file}\n" in term_words(term))
    lines = [json.loads(line) for line in branch_file.read_text().splitlines()]
    assert lines[0]["type"] == "session"
    texts = json.dumps(lines)
    assert "another take" in texts and "Answer three." in texts
    assert "first question" not in texts and "second question" not in texts
    assert [line.get("parentId") for line in lines[1:]] == [None] + [line["id"] for line in lines[1:-1]]
    term.double_ctrl_c()
    assert term.wait_exit() == 0


def test_a_plugin_package_extends_the_screen(pi_host: Any, tmp_path: Path) -> None:
    """pi-fixture-screen, really installed: its key binding, custom-message renderer and tool
    renderer show on the screen."""
    import subprocess

    site = tmp_path / "site"
    package = Path(__file__).parent / "plugin_packages" / "pi-fixture-screen"
    uv = shutil.which("uv") or os.environ.get("UV")  # uv run names itself; a bootstrapped uv is off PATH
    if uv is None:
        pytest.skip("uv installs the plugin package")
    subprocess.run(
        [
            uv,
            "pip",
            "install",
            *offline_uv_args(tmp_path / "wheels"),
            "--quiet",
            "--python",
            sys.executable,
            "--target",
            str(site),
            str(package),
        ],
        check=True,
        capture_output=True,
    )
    term: Terminal = pi_host(
        [{"toolCalls": [{"name": "weather", "arguments": {"city": "Oslo"}}]}, {"text": "Sunny in Oslo."}],
        env={"PYTHONPATH": str(site)},
    )
    term.submit("weather in Oslo?")
    term.wait_for("Sunny in Oslo.")
    term.wait_gone("Working...")
    text = term.screen.text()
    assert "Forecast wanted for Oslo" in text and "FORECAST >> Oslo: sunny, 21 degrees" in text
    assert '"city": "Oslo"' not in text  # the default renderer's JSON arguments are not shown

    term.send("\x18")  # Ctrl+X: the plugin's shortcut sends its custom message
    term.wait_for("NOTE >> pressed ctrl+x")
    assert "[screen-note]" not in term.screen.text()  # drawn by the plugin, not the default
    term.submit("/hotkeys")
    term.wait_for("Keyboard Shortcuts")
    term.wait_for(re.compile(r"ctrl\+x\s*│\s*Leave a note"))
    term.double_ctrl_c()
    assert term.wait_exit() == 0


@pytest.mark.parametrize(
    "settings",
    [
        pytest.param({}, id="the-transport-retries"),
        pytest.param(
            {"retry": {"provider": {"maxRetries": 0}, "baseDelayMs": 10}}, id="the-retry-plugin-retries"
        ),
    ],
)
def test_two_overloaded_replies_then_an_answer_leave_no_error_on_screen(
    tmp_path: Path, settings: dict[str, Any]
) -> None:
    """Two 529s from a real (local) Anthropic endpoint, then a reply: the user sees the reply
    only, whether the provider transport absorbs the failures quietly (the default) or, with
    the transport's retries off, the retry plugin retries and its failed attempts are replaced."""
    from tests.fakeservers import AnthropicServer, anthropic_error, anthropic_reply

    overloaded = anthropic_error(529, "Overloaded")
    with AnthropicServer([overloaded, overloaded, anthropic_reply("Third time lucky.")]) as server:
        agent = tmp_path / "agent"
        agent.mkdir()
        (agent / "settings.json").write_text(json.dumps(settings))
        models = {
            "providers": {
                "local": {
                    "baseUrl": server.url,
                    "api": "anthropic-messages",
                    "apiKey": "test-key",
                    "models": [{"id": "claude-local", "contextWindow": 100000, "maxTokens": 4096}],
                }
            }
        }
        (agent / "models.json").write_text(json.dumps(models))
        environment = {"PI_HOST_DIR": str(agent), "ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": ""}
        term = Terminal([PI_HOST, "--model", "local/claude-local"], cwd=tmp_path, env=environment)
        try:
            term.wait_for("(auto)", timeout=60)
            term.submit("hello")
            term.wait_for("Third time lucky.", timeout=30)
            term.wait_gone("Working...")
            term.wait_gone("Retrying")
            assert len(server.requests) == 3
            text = term.screen.text()  # the scrollback too
            assert "Overloaded" not in text and "Error" not in text and "529" not in text, term.dump()
            term.send(CTRL_D)
            assert term.wait_exit() == 0
        finally:
            term.close()


def test_a_broken_settings_json_is_shown_once_in_the_terminal_ui(tmp_path: Path) -> None:
    # pi-host says what the other modes print before the run; pi-guard (installed here) reads
    # the same file for its permissions and leaves the file's problem to pi-host.
    agent_dir = tmp_path / "agent"
    agent_dir.mkdir()
    (agent_dir / "settings.json").write_text('{"theme": "dark",')
    script_file = tmp_path / "faux.json"
    script_file.write_text(json.dumps([{"text": "fine"}]))
    environment = {
        "PI_HOST_DIR": str(agent_dir),
        "PI_HOST_FAUX_SCRIPT": str(script_file),
        "ANTHROPIC_API_KEY": "",
        "OPENAI_API_KEY": "",
    }
    term = Terminal([PI_HOST, "--provider", "faux"], cwd=tmp_path, env=environment)
    try:

        def mentions() -> int:  # the notice wraps: compare with the line breaks taken out
            return " ".join(term.screen.text().split()).count("settings.json: is not valid JSON")

        term.wait_for("(auto)", timeout=60)
        term.wait_for(lambda: mentions() > 0)
        term.submit("hi")
        term.wait_for("fine")
        assert mentions() == 1, term.dump()
    finally:
        term.close()
