"""The interactive mode used as a person uses it: in a pseudo-terminal, through the keyboard.

Each test starts ``run_interactive`` on the scripted fake session (``interactive_support``) in a
pty, types, and reads the screen back through a VT100 screen model. Every wait is for text to
appear on (or leave) the screen, with a timeout; nothing sleeps.
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.interactive_support.screen import Screen
from tests.interactive_support.terminal import (
    ALT_ENTER,
    ALT_UP,
    BEGIN_SYNCHRONIZED_UPDATE,
    CTRL_C,
    CTRL_D,
    CTRL_U,
    DOWN,
    END_SYNCHRONIZED_UPDATE,
    ENTER,
    ESCAPE,
    TAB,
    UP,
    Terminal,
)

SELECTED = "\N{SINGLE RIGHT-POINTING ANGLE QUOTATION MARK}"  # the picker's cursor
CTRL_A, CTRL_O, CTRL_T = "\x01", "\x0f", "\x14"
CTRL_LEFT, CTRL_RIGHT = "\x1b[1;5D", "\x1b[1;5C"
ALT_T = "\x1bt"
F2 = "\x1bOQ"
F5 = "\x1b[15~"

pytestmark = pytest.mark.skipif(
    not hasattr(__import__("os"), "openpty"), reason="needs a POSIX pseudo-terminal"
)


@pytest.fixture
def launch(tmp_path: Path) -> Iterator[Any]:
    terminals: list[Terminal] = []

    def start(script: list[dict[str, Any]], *, keybindings: Any = None, **kwargs: Any) -> Terminal:
        scenario = tmp_path / "scenario.json"
        scenario.write_text(json.dumps({"script": script, **kwargs}))
        agent = tmp_path / "agent"  # never the user's own keybindings.json
        agent.mkdir(exist_ok=True)
        if keybindings is not None:
            (agent / "keybindings.json").write_text(json.dumps(keybindings))
        terminal = Terminal.launch_fake(scenario, cwd=tmp_path, env={"PI_HOST_DIR": str(agent)})
        terminals.append(terminal)
        terminal.wait_for("fake-model", timeout=30)  # the footer: the app is up
        return terminal

    yield start
    for terminal in terminals:
        terminal.close()


def test_prompt_stream_steer_abort_compact_tree_quit(launch: Any) -> None:
    term: Terminal = launch(
        [
            {
                "thinking": "Considering the greeting.",
                "text": "# Greeting\n\nHello **world**, this is the first paragraph.\n\n"
                "- one\n- two\n\nThe end.",
            },
            {
                "toolCalls": [
                    {
                        "name": "bash",
                        "arguments": {"command": "make test"},
                        "until": "steer",
                        "result": "42 passed",
                    }
                ]
            },
            {"text": "Steered as asked."},
            {"toolCalls": [{"name": "bash", "arguments": {"command": "sleep 600"}, "until": "steer"}]},
        ]
    )

    # A prompt: the user message, thinking (dim), the streamed markdown, the usage in the footer.
    term.submit("hello there")
    term.wait_for("The end.")
    text = term.screen.text()
    assert "hello there" in text
    assert "Considering the greeting." in text
    assert "Greeting" in text and "Hello world, this is the first paragraph." in text
    assert "• one" in text and "• two" in text
    term.wait_for("↑1.2k ↓340")
    term.wait_gone("Working...")

    # Steer while a tool runs: Enter queues a steering message; the tool, waiting for it, ends;
    # the message is delivered and the model answers it.
    term.submit("run the tests")
    term.wait_for("$ make test")
    term.wait_for("Working... (esc to interrupt)")
    term.submit("also check lint")
    term.wait_for("Steered as asked.")
    text = term.screen.text()
    assert "42 passed" in text
    assert text.index("42 passed") < text.index("also check lint") < text.index("Steered as asked.")
    term.wait_gone("Working...")

    # Abort with Escape: the queued follow-up comes back into the editor.
    term.submit("start something long")
    term.wait_for("$ sleep 600")
    term.type("remember the docs")
    term.send(ALT_ENTER)
    term.wait_for("Follow-up: remember the docs", where=term.screen.screen_text)
    assert term.editor_text() == ""
    term.send(ESCAPE)
    term.wait_for("Command aborted")
    term.wait_for(lambda: term.editor_text() == "remember the docs")
    term.wait_gone("Follow-up: remember the docs")
    term.wait_gone("Working...")
    term.send(CTRL_C)  # clear the editor
    term.wait_for(lambda: term.editor_text() == "")

    # /compact with focus instructions: spinner, then the compaction notice.
    term.submit("/compact keep the test names")
    term.wait_for("[compaction]")
    term.wait_for("Compacted from 12,345 tokens")
    term.wait_for(lambda: term.rule_count() == 2)  # nothing of the live area was left behind

    # /tree: the session tree in place of the editor; pick the first user message, no summary.
    term.submit("/tree")
    term.wait_for("Session Tree", where=term.screen.screen_text)
    # The tree may draw in a later frame than its title, or its frame arrive in several reads.
    term.wait_for("user: hello there", where=term.screen.screen_text)
    term.wait_for("[compaction: 12k tokens]", where=term.screen.screen_text)
    term.wait_for(f"{SELECTED} • [compaction: 12k tokens]", where=term.screen.screen_text)  # the leaf
    term.send(DOWN)  # from the last entry round to the first, as in pi
    term.wait_for(f"{SELECTED} • user: hello there", where=term.screen.screen_text)
    term.send(ENTER)
    term.wait_for("Summarize branch?", where=term.screen.screen_text)
    term.send(ENTER)  # "No summary"
    term.wait_for("Navigated to selected point")
    term.wait_for(lambda: term.editor_text() == "hello there")

    # Quit. Ctrl+U, not Ctrl+C: the Ctrl+C that cleared the editor above may be less than half a
    # second ago on a fast machine, and a second one that soon quits (as in pi).
    term.send(CTRL_U)
    term.wait_for(lambda: term.editor_text() == "")
    term.submit("/quit")
    assert term.wait_exit() == 0


def test_slash_commands_plugin_ui_and_user_bash(launch: Any, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x")
    term: Terminal = launch([{"text": "A reply worth copying."}])

    # Completion of slash commands lists built-ins and plugin commands with descriptions.
    term.send("/gr")
    term.wait_for("Say hello through the UI bridge", where=term.screen.screen_text)
    term.send(TAB)
    term.wait_for(lambda: term.editor_text() == "/greet")
    # A plugin command asks through the UI bridge: a select dialog, then a notice and a status.
    term.send(ENTER)
    term.wait_for("Pick a greeting", where=term.screen.screen_text)
    term.send("\x1b[B")  # down to "howdy"
    term.wait_for(f"{SELECTED} howdy", where=term.screen.screen_text)
    term.send(ENTER)
    term.wait_for("greeting: howdy")
    term.wait_for("greeted howdy", where=term.screen.screen_text)  # footer status line
    # What the plugin printed and logged went above the editor, once, without tearing it.
    text = term.screen.text()
    assert "stray print from a plugin" in text
    assert text.count('Warning: plugin "greet" failed in pi_fake: just a test') == 1
    term.wait_for(lambda: term.rule_count() == 2)

    # @file completion.
    term.send("look at @note")
    term.wait_for("@notes.txt", where=term.screen.screen_text)
    term.send(TAB)
    term.wait_for(lambda: term.editor_text() == "look at @notes.txt")
    term.send(CTRL_C)
    term.wait_for(lambda: term.editor_text() == "")

    # !cmd runs in the shell and shows its output; a failing command shows its exit code.
    term.submit("!echo shell-$((6*7))")
    term.wait_for("shell-42")
    term.submit("!!exit 3")
    term.wait_for("(exit 3)")

    # A reply, then /copy puts it on the clipboard with OSC 52.
    term.submit("say something")
    term.wait_for("A reply worth copying.")
    term.wait_gone("Working...")
    term.submit("/copy")
    term.wait_for("Copied last agent message to clipboard")
    assert base64.b64decode(term.screen.clipboard[-1]).decode() == "A reply worth copying."

    # /name, /session, /hotkeys, /thinking, /model.
    term.submit("/name release prep")
    term.wait_for("Session name set: release prep")
    term.wait_for("• release prep", where=term.screen.screen_text)  # footer: cwd • session name
    term.submit("/session")
    term.wait_for("Session Info")
    term.wait_for("fake-session-0001")
    term.submit("/hotkeys")
    term.wait_for("Keyboard Shortcuts")
    term.wait_for("Queue a follow-up")
    term.submit("/thinking high")
    term.wait_for("Thinking level: high")
    term.wait_for("fake-model • high", where=term.screen.screen_text)
    term.submit("/model other-model")
    term.wait_for("Model: other-model")
    term.wait_for("other-model", where=lambda: _footer_stats(term))
    # No such model: the picker opens searching for it, and finds nothing.
    term.submit("/model nope")
    term.wait_for("No matches", where=term.screen.screen_text)
    term.send(ESCAPE)
    term.wait_gone("No matches")

    # Up recalls history; Ctrl+D on an empty editor quits.
    term.send(UP)
    term.wait_for(lambda: term.editor_text() == "/model nope")
    term.send(CTRL_U)  # not Ctrl+C: the one above may be under half a second ago, and would quit
    term.wait_for(lambda: term.editor_text() == "")
    term.send(CTRL_D)
    assert term.wait_exit() == 0


def _footer_stats(term: Terminal) -> str:
    return next((line for line in reversed(term.screen.display()) if "(auto)" in line), "")


def test_alt_up_restores_queued_messages(launch: Any) -> None:
    term: Terminal = launch(
        [{"toolCalls": [{"name": "bash", "arguments": {"command": "sleep 600"}, "until": "steer"}]}]
    )
    term.submit("go")
    term.wait_for("$ sleep 600")
    term.type("first follow-up")
    term.send(ALT_ENTER)
    term.wait_for("Follow-up: first follow-up", where=term.screen.screen_text)
    term.send(ALT_UP)
    term.wait_for("Restored 1 queued message to editor")
    # The notice can reach the screen before the editor's redraw does.
    term.wait_for(lambda: term.editor_text() == "first follow-up")
    term.wait_gone("Follow-up: first follow-up")
    term.send(ESCAPE)
    term.wait_for("Command aborted")
    term.wait_gone("Working...")
    term.double_ctrl_c()
    assert term.wait_exit() == 0


def test_keybindings_json_rebinds_keys_and_a_bad_entry_only_warns(launch: Any) -> None:
    output = "\n".join(f"line {n:02d} of the output" for n in range(1, 31))
    term: Terminal = launch(
        [
            {"toolCalls": [{"name": "bash", "arguments": {"command": "seq 30"}, "result": output}]},
            {"text": "Counted."},
            {
                "thinking": "Pondering the command.",
                "toolCalls": [{"name": "bash", "arguments": {"command": "sleep 600"}, "until": "steer"}],
            },
        ],
        keybindings={
            "app.message.followUp": "f5",
            "toggleThinking": "alt+t",  # a legacy id, read as app.thinking.toggle
            "app.session.new": "f2",
            "app.tools.expand": "hyper+o",
            "app.thinkingToggle": "ctrl+t",
        },
    )
    # Each problem is one warning naming the file, the id and the key; the UI is up regardless.
    term.wait_for('"app.tools.expand": "hyper+o" is not a key')
    term.wait_for('"app.thinkingToggle" is not a keybinding id (did you mean "app.thinking.toggle"?)')
    text = term.screen.text()
    assert text.count("hyper+o") == 1 and "keybindings.json" in text

    term.submit("count")
    term.wait_for("Counted.")
    term.wait_gone("Working...")

    # F5 queues a follow-up while the agent works; Alt+Enter, no longer bound, does nothing.
    term.submit("go")
    term.wait_for("$ sleep 600")
    term.type("later please")
    term.send(F5)
    term.wait_for("Follow-up: later please", where=term.screen.screen_text)
    term.type("typed")
    term.send(ALT_ENTER)
    term.type(" on")  # keys are read in order: had Alt+Enter queued "typed", the editor would be empty
    assert term.editor_text() == "typed on"
    assert "Follow-up: typed" not in term.screen.screen_text()
    term.send(ESCAPE)
    term.wait_for("Command aborted")
    term.wait_gone("Working...")
    term.send(CTRL_C)
    term.wait_for(lambda: term.editor_text() == "")

    # Ctrl+T was moved to Alt+T; Ctrl+O kept its default as its new key was bad.
    term.send(CTRL_T)
    term.type("still here")
    assert "Pondering the command." in term.screen.text()
    term.send(ALT_T)
    term.wait_for(lambda: "Pondering the command." not in term.screen.text())
    assert "line 01 of the output" not in term.screen.text()
    term.send(CTRL_O)
    term.wait_for("line 01 of the output")
    term.send(CTRL_U)  # not Ctrl+C: a second one this soon would quit
    term.wait_for(lambda: term.editor_text() == "")

    # A session command with no default key runs from the key bound to it.
    term.send(F2)
    term.wait_for("New session started")

    # /hotkeys shows what is in force.
    term.submit("/hotkeys")
    term.wait_for("Keyboard Shortcuts")
    term.wait_for("app.message.followUp")
    term.send(CTRL_D)
    assert term.wait_exit() == 0


def _old_session(directory: Path, cwd: Path) -> Path:
    """A pi session file with one exchange, as another machine or project left it."""
    from pi_host.messages import AssistantMessage, TextContent, UserMessage
    from pi_host.session import SessionManager

    manager = SessionManager.create(cwd, directory, cache_dir=False)
    manager.append_message(UserMessage(content="question from the old session"))
    manager.append_message(
        AssistantMessage(
            api="faux", provider="faux", model="m", content=[TextContent(text="answer from the old session")]
        )
    )
    assert manager.session_file is not None
    return manager.session_file


def test_changelog_import_and_trust_commands(launch: Any, tmp_path: Path) -> None:
    (tmp_path / "old.jsonl").write_bytes(_old_session(tmp_path / "elsewhere", tmp_path).read_bytes())
    term: Terminal = launch([])

    # /changelog renders pi-host's own CHANGELOG.md.
    term.submit("/changelog")
    term.wait_for("What's New")
    term.wait_for("[Unreleased]")
    term.wait_for("Interactive slash commands")

    # /import asks first; "n" keeps the current session.
    term.submit("/import")
    term.wait_for("Usage: /import <path.jsonl>")
    term.submit("/import old.jsonl")
    term.wait_for("Replace current session with old.jsonl?", where=term.screen.screen_text)
    term.send("n")
    term.wait_for("Import cancelled")
    assert "answer from the old session" not in term.screen.text()
    # What cannot be imported is named; nothing changes.
    term.submit("/import missing.jsonl")
    term.wait_for("Replace current session with missing.jsonl?", where=term.screen.screen_text)
    term.send("y")
    term.wait_for("Failed to import session: File not found")
    # The directory the session was recorded in is gone: asked, as pi asks; "n" cancels.
    gone = tmp_path / "gone"
    gone.mkdir()
    (tmp_path / "moved.jsonl").write_bytes(_old_session(tmp_path / "elsewhere", gone).read_bytes())
    gone.rmdir()
    term.submit("/import moved.jsonl")
    term.wait_for("Replace current session with moved.jsonl?", where=term.screen.screen_text)
    term.send("y")
    term.wait_for("Session cwd not found", where=term.screen.screen_text)
    term.send("n")
    term.wait_for(lambda: term.screen.text().count("Import cancelled") == 2)
    # "y": the session's messages are shown.
    term.submit("/import old.jsonl")
    term.wait_for("Replace current session with old.jsonl?", where=term.screen.screen_text)
    term.send("y")
    term.wait_for("Session imported from: old.jsonl")
    text = term.screen.text()
    assert "question from the old session" in text and "answer from the old session" in text

    # /trust shows the state, then asks with the start-up question's answers.
    term.submit("/trust")
    term.wait_for("Project Trust")
    term.wait_for("not decided yet")
    term.wait_for(f"{SELECTED} Trust", where=term.screen.screen_text)
    term.wait_for("Do not trust (this session only)", where=term.screen.screen_text)
    term.send(ENTER)
    term.wait_for("Project trusted: its .pi settings, skills, prompts and plugins are loaded")
    term.submit("/trust")
    term.wait_for("for this session only")
    term.wait_for(f"{SELECTED} Trust", where=term.screen.screen_text)
    term.send(ESCAPE)
    term.wait_gone("Do not trust (this session only)")
    term.send(CTRL_D)
    assert term.wait_exit() == 0


@pytest.mark.parametrize(
    ("typed", "shown"), [("/comp", "Compacted from 12,345 tokens"), ("/ses", "Session Info")]
)
def test_enter_on_a_partly_typed_command_runs_the_highlighted_one(
    launch: Any, typed: str, shown: str
) -> None:
    term: Terminal = launch([{"text": "Something to compact."}])
    term.submit("hello")
    term.wait_for("Something to compact.")
    term.wait_gone("Working...")
    term.type(typed)
    # The menu opens with its best match highlighted; Enter runs it, the model never sees it.
    expected = {"/comp": "/compact", "/ses": "/session"}[typed]
    term.wait_for(lambda: _highlighted_menu_entry(term).startswith(expected))
    term.send(ENTER)
    term.wait_for(shown)
    term.wait_for(lambda: term.editor_text() == "")
    assert f"Echo: {typed}" not in term.screen.text()
    assert "Working..." not in term.screen.text()
    term.send(CTRL_D)
    assert term.wait_exit() == 0


MENU_CURRENT_BACKGROUND = "5;24"  # the style's completion-menu.completion.current, #005f87


def _highlighted_menu_entry(term: Terminal) -> str:
    """The completion menu's highlighted entry: the text on the current completion's background."""
    lines = term.screen.text_on_background(MENU_CURRENT_BACKGROUND)
    return lines[0].strip() if lines else ""


def test_single_line_breaks_stay_in_replies_and_thinking(launch: Any) -> None:
    term: Terminal = launch(
        [
            {
                "thinking": "First check the tree.\nThen run the tests.",
                "text": "Changed files:\nsrc/app.py\nsrc/render.py\n\n"
                "fix: keep line breaks\nBody of the commit.",
            }
        ]
    )
    term.submit("what changed?")
    term.wait_for("Body of the commit.")
    lines = [line.strip() for line in term.screen.text().split("\n")]
    for line in (
        "First check the tree.",
        "Then run the tests.",
        "Changed files:",
        "src/app.py",
        "src/render.py",
    ):
        assert line in lines, term.dump()
    assert "fix: keep line breaks" in lines and "Body of the commit." in lines


def test_markdown_tables_are_boxed_and_task_lists_show_check_boxes(launch: Any) -> None:
    term: Terminal = launch(
        [
            {
                "text": "| tool | runs |\n|------|------|\n| bash | 3 |\n\n"
                "- [ ] write docs\n- [x] fix tests\n\nDone."
            }
        ]
    )
    term.submit("status?")
    term.wait_for("Done.")
    text = term.screen.text()
    assert "┌──────┬──────┐" in text and "│ tool │ runs │" in text and "│ bash │ 3    │" in text
    assert "└──────┴──────┘" in text
    assert "☐ write docs" in text and "☑ fix tests" in text and "[ ]" not in text


def test_ctrl_o_and_ctrl_t_redraw_what_is_on_screen_without_notices(launch: Any) -> None:
    output = "\n".join(f"line {n:02d} of the output" for n in range(1, 31))
    term: Terminal = launch(
        [
            {"thinking": "Weighing the options first.", "text": "Let me look."},
            {"toolCalls": [{"name": "bash", "arguments": {"command": "seq 30"}, "result": output}]},
            {"text": "All thirty lines are there."},
        ]
    )
    term.submit("hello")
    term.wait_for("Let me look.")
    term.wait_gone("Working...")
    term.submit("count")
    term.wait_for("All thirty lines are there.")
    term.wait_gone("Working...")
    term.wait_for_update_end()  # the condition can hold halfway through a redraw
    text = term.screen.text()
    assert "Weighing the options first." in text
    assert "line 30 of the output" in text and "line 01 of the output" not in text  # collapsed

    # Ctrl+O: the tool output already on screen is expanded in place; no notice is left.
    term.send(CTRL_O)
    term.wait_for("line 01 of the output")
    term.wait_for(lambda: term.rule_count() == 2)
    term.wait_for_update_end()
    text = term.screen.text()
    assert text.count("line 15 of the output") == 1 and text.count("All thirty lines are there.") == 1
    assert "Tool output" not in text
    # ... and collapsed again.
    term.send(CTRL_O)
    term.wait_for(lambda: "line 01 of the output" not in term.screen.text())
    term.wait_for_update_end()
    assert "line 30 of the output" in term.screen.text()

    # Ctrl+T: the thinking block already on screen becomes its label, then comes back.
    term.send(CTRL_T)
    term.wait_for(lambda: "Weighing the options first." not in term.screen.text())
    term.wait_for_update_end()
    text = term.screen.text()
    assert "Thinking..." in text and "Thinking blocks" not in text
    assert text.count("Let me look.") == 1 and text.count("hello") == 1
    term.send(CTRL_T)
    term.wait_for("Weighing the options first.")
    term.wait_for_update_end()
    assert "Thinking blocks" not in term.screen.text()
    term.send(CTRL_D)
    assert term.wait_exit() == 0


def test_resizing_while_streaming_lays_the_transcript_out_again_once(launch: Any) -> None:
    paragraphs = [
        f"Paragraph {n:02d} says a few words about the subject, long enough to wrap, end{n:02d}."
        for n in range(1, 41)
    ]
    term: Terminal = launch([{"text": "\n\n".join(paragraphs)}])
    term.submit("tell me")
    term.wait_for("end12.")
    term.resize(30, 60)
    term.wait_for("end40.")
    term.wait_gone("Working...")
    term.wait_for(lambda: term.rule_count() == 2)
    text = term.screen.text()
    for n in range(1, 41):
        assert text.count(f"end{n:02d}.") == 1, f"paragraph {n}:\n{term.dump()}"
    # Laid out for 60 columns, the early paragraphs included: nothing was cut at the edge.
    first = text.index("Paragraph 01")
    assert all(len(line) <= 60 for line in text.split("\n"))
    assert "subject, long enough" in text[first:].replace("\n", " ").split("end01.")[0]
    assert text.count("tell me") == 1


def test_a_large_paste_shows_as_a_marker_and_sends_the_full_text(launch: Any) -> None:
    term: Terminal = launch([{"text": "Got all of it."}])
    # 30 lines copied with their last line break: pi counts the pieces, +31 (checked with pi 0.73).
    pasted = "".join(f"pasted line {n:02d}\n" for n in range(1, 31))
    term.type("look: ")
    term.send(f"\x1b[200~{pasted}\x1b[201~")
    term.wait_for(lambda: term.editor_text() == "look: [paste #1 +31 lines]")
    term.send(ENTER)
    term.wait_for("Got all of it.")
    text = term.screen.text()
    assert "pasted line 01" in text and "pasted line 30" in text and "[paste #1" not in text
    # A short paste goes in as it is.
    term.wait_gone("Working...")
    term.send("\x1b[200~two\nlines\x1b[201~")
    term.wait_for(lambda: term.editor_text() == "two\nlines")
    # Eleven lines are a marker, numbered on; tabs become four spaces, as in pi's editor.
    term.send("\x1b[200~" + "\n".join(f"l{n}" for n in range(1, 12)) + "\x1b[201~")
    term.wait_for(lambda: term.editor_text() == "two\nlines[paste #2 +11 lines]")
    term.send("\x1b[200~ a\tb\x1b[201~")
    term.wait_for(lambda: term.editor_text() == "two\nlines[paste #2 +11 lines] a    b")
    term.send(CTRL_D)


def test_model_picker_filters_by_typed_text_with_few_models(launch: Any) -> None:
    term: Terminal = launch([])
    term.submit("/model")
    term.wait_for("Select model", where=term.screen.screen_text)
    term.wait_for("fake-model  [faux]", where=term.screen.screen_text)
    term.send("other")
    term.wait_for(lambda: "fake-model  [faux]" not in term.screen.screen_text())
    term.wait_for(f"{SELECTED} other-model  [faux]", where=term.screen.screen_text)
    term.send(ENTER)
    term.wait_for("Model: other-model")
    term.send(CTRL_D)
    assert term.wait_exit() == 0


def test_failures_that_a_retry_replaces_leave_no_error_block(launch: Any) -> None:
    overloaded = '529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    term: Terminal = launch(
        [
            {"error": overloaded, "retry": True},
            {"error": overloaded, "retry": True},
            {"text": "Third time lucky."},
            {"error": "400 bad request"},
        ]
    )
    term.submit("hello")
    term.wait_for("Third time lucky.")
    term.wait_gone("Working...")
    term.wait_gone("Retrying")
    assert "Overloaded" not in term.screen.text() and "Error" not in term.screen.text()
    # A failure no retry follows is still shown.
    term.submit("again")
    term.wait_for("Error: 400 bad request")
    term.send(CTRL_D)
    assert term.wait_exit() == 0


def test_frames_are_synchronized_and_an_erase_is_redrawn_in_the_same_frame(launch: Any) -> None:
    paragraphs = [f"Paragraph {n:02d} of a long streamed reply, end{n:02d}." for n in range(1, 41)]
    term: Terminal = launch([{"text": "\n\n".join(paragraphs)}])
    term.submit("go")
    term.wait_for("end40.")
    term.wait_gone("Working...")
    # "Working..." goes with the erase at the start of the last update; its redraw may still be
    # on the way (a real terminal shows none of that update before its end).
    term.wait_for_update_end()
    frames = term.updates()
    assert len(frames) > 40  # every frame of the stream, not just a few
    for frame in frames:
        if "\x1b[J" in frame:
            # What is erased is drawn again before the terminal shows anything: the footer
            # (its model name) is in the same update.
            assert "fake-model" in frame, repr(frame[-300:])
    assert "\x1b[J" not in term.outside_updates()  # nothing is erased outside a synchronized update

    # What a terminal that honours synchronized output shows: the screen as each update ends.
    # From the first paragraph to the last, every one of them has the editor and the footer.
    replay = Screen(term.screen.rows, term.screen.columns)
    shown = 0
    begin, end = BEGIN_SYNCHRONIZED_UPDATE, END_SYNCHRONIZED_UPDATE
    for piece in term.raw.split(end):
        replay.feed(piece + end)
        if begin in piece and "end40." not in replay.text() and "Paragraph 01" in replay.text():
            screen = replay.display()
            rules = [
                i for i, line in enumerate(screen) if len(line) >= replay.columns - 2 and set(line) == {"─"}
            ]
            assert len(rules) >= 2 and any("fake-model" in line for line in screen[rules[-1] :]), "\n".join(
                screen
            )
            shown += 1
    assert shown > 20  # many updates were looked at, not a lucky few


def test_a_plugins_print_goes_above_the_editor_in_the_update_that_redraws_it(launch: Any) -> None:
    """Regression: through prompt_toolkit's ``patch_stdout``, a print's erase of the live area,
    the text and the redraw were three writes, and the editor and footer blinked out."""
    term: Terminal = launch([{"text": "Unused."}])
    term.type("/greet")
    term.send(ENTER)  # the fake plugin command prints a line, then opens a dialog
    term.wait_for("Pick a greeting", where=term.screen.screen_text)
    term.wait_for_update_end()
    printed = [frame for frame in term.updates() if "stray print from a plugin" in frame]
    assert len(printed) == 1, "the printed line was not written inside a synchronized update"
    erase, _, redraw = printed[0].partition("stray print from a plugin")
    assert "\x1b[J" in erase and "fake-model" in redraw
    for frame in term.updates():
        if "\x1b[J" in frame:
            assert "fake-model" in frame, repr(frame[-300:])
    assert "\x1b[J" not in term.outside_updates()
    assert term.screen.text().count("stray print from a plugin") == 1


# A program that writes a whole synchronized update, then one in two pieces; each write after
# the first waits for a line on its input.
_UPDATE_IN_TWO_PIECES = """
import sys, termios
attributes = termios.tcgetattr(0)
attributes[3] &= ~termios.ECHO
termios.tcsetattr(0, termios.TCSANOW, attributes)
sys.stdout.write("\\x1b[?2026hWorking...\\x1b[?2026l")
sys.stdout.flush()
sys.stdin.readline()
sys.stdout.write("\\x1b[?2026h\\x1b[H\\x1b[JParagraph 40\\n")
sys.stdout.flush()
sys.stdin.readline()
sys.stdout.write("fake-model\\x1b[?2026l")
sys.stdout.flush()
sys.stdin.readline()
"""


def test_the_terminal_reads_an_update_to_its_end_before_it_is_looked_at(tmp_path: Path) -> None:
    """Regression: the frames test once judged an update read only up to a line break (the pty
    hands a large write over in pieces under load), and took its missing redraw for a flicker."""
    term = Terminal([sys.executable, "-c", _UPDATE_IN_TWO_PIECES], cwd=tmp_path)
    try:
        term.wait_for("Working...")
        term.send(ENTER)
        term.wait_gone("Working...")  # holds in the middle of the update
        assert term.in_update()
        with pytest.raises(AssertionError, match="not been read to its end"):
            term.updates()
        term.send(ENTER)
        term.wait_for_update_end()
        assert term.updates() == ["Working...", "\x1b[H\x1b[JParagraph 40\r\nfake-model"]
        assert "\x1b[J" not in term.outside_updates()
        term.send(ENTER)
        assert term.wait_exit() == 0
    finally:
        term.close()


def test_tree_names_tool_only_turns_and_searches_by_typed_text(launch: Any) -> None:
    term: Terminal = launch(
        [
            {"toolCalls": [{"name": "bash", "arguments": {"command": "make test"}, "result": "42 passed"}]},
            {"text": "All green."},
        ]
    )
    term.submit("run the tests")
    term.wait_for("All green.")
    term.wait_gone("Working...")
    term.submit("/tree")
    term.wait_for("Session Tree", where=term.screen.screen_text)
    term.wait_for("• assistant: → bash make test", where=term.screen.screen_text)
    assert "(no content)" not in term.screen.screen_text()
    term.send("green")
    term.wait_for(lambda: "user: run the tests" not in term.screen.screen_text())
    term.wait_for(f"{SELECTED} • assistant: All green.", where=term.screen.screen_text)
    term.send(ESCAPE)  # clears the search first, as in pi
    term.wait_for("user: run the tests", where=term.screen.screen_text)
    term.send(ESCAPE)
    term.wait_gone("Session Tree")
    term.send(CTRL_D)
    assert term.wait_exit() == 0


def test_tree_filters_and_folds_as_pi(launch: Any) -> None:
    """pi's /tree keys: Ctrl+T/U/L/A/D and Ctrl+O pick what shows, Ctrl+←/→ fold and unfold."""
    term: Terminal = launch(
        [
            {"toolCalls": [{"name": "bash", "arguments": {"command": "make test"}, "result": "42 passed"}]},
            {"text": "All green."},
            {"text": "Second answer."},
            {"text": "Third answer."},
        ]
    )
    screen = term.screen.screen_text
    term.submit("run the tests")
    term.wait_for("All green.")
    term.wait_gone("Working...")
    term.submit("second prompt")
    term.wait_for("Second answer.")
    term.wait_gone("Working...")
    # Branch off after "All green.": pick it, no summary, and ask something else.
    term.submit("/tree")
    term.wait_for(f"{SELECTED} • assistant: Second answer.", where=screen)
    term.send(UP)
    term.wait_for(f"{SELECTED} • user: second prompt", where=screen)
    term.send(UP)
    term.wait_for(f"{SELECTED} • assistant: All green.", where=screen)
    term.send(ENTER)
    term.wait_for("Summarize branch?", where=screen)
    term.send(ENTER)
    term.wait_for("Navigated to selected point")
    term.submit("third prompt")
    term.wait_for("Third answer.")
    term.wait_gone("Working...")

    term.submit("/tree")
    term.wait_for(f"{SELECTED} │  • assistant: Third answer.", where=screen)
    assert "├⊟ • user: third prompt" in screen() and "└⊟ user: second prompt" in screen()
    term.send(CTRL_LEFT)  # not a segment start: up to the start of its segment
    term.wait_for(f"{SELECTED} ├⊟ • user: third prompt", where=screen)
    term.send(CTRL_LEFT)  # a segment start: it folds
    term.wait_for(f"{SELECTED} ├⊞ • user: third prompt", where=screen)
    assert "• assistant: Third answer." not in screen() and "assistant: Second answer." in screen()
    term.send(CTRL_RIGHT)
    term.wait_for("│  • assistant: Third answer.", where=screen)

    # Filters: no tool results, then back; user messages only; labeled only; everything.
    assert "[bash] make test" in screen()
    term.send(CTRL_T)
    term.wait_for("[no-tools]", where=screen)
    assert "[bash] make test" not in screen() and "assistant: All green." in screen()
    term.send(CTRL_T)
    term.wait_for(lambda: "[no-tools]" not in screen() and "[bash] make test" in screen())
    term.send(CTRL_U)
    term.wait_for("[user]", where=screen)
    assert "user: run the tests" in screen() and "assistant:" not in screen()
    term.send(CTRL_O)  # user-only -> labeled-only
    term.wait_for("No entries found", where=screen)
    term.wait_for("(0/0) [labeled]", where=screen)
    term.send(CTRL_O)  # -> all (this session has no bookkeeping entries: as the default)
    term.wait_for("[all]", where=screen)
    term.wait_for("[bash] make test", where=screen)
    term.send(CTRL_A)  # toggles "all" off again
    term.wait_for(lambda: "[all]" not in screen())
    term.send(CTRL_U)
    term.wait_for("[user]", where=screen)
    term.send(CTRL_D)  # the default view, not quitting
    term.wait_for(lambda: "[user]" not in screen() and "[bash] make test" in screen())
    # Typing searches; Escape clears the search first, then closes the tree.
    term.send("third")
    term.wait_for(lambda: "second prompt" not in screen() and "user: third prompt" in screen())
    term.send(ESCAPE)
    term.wait_for("second prompt", where=screen)
    term.send(ESCAPE)
    term.wait_gone("Session Tree")
    term.send(CTRL_D)
    assert term.wait_exit() == 0
