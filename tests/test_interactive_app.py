"""The interactive application in-process: plugin UI requests, session events, streaming commits.

The app runs on a prompt_toolkit pipe input and a dummy output; what it commits to the
scrollback is captured as plain text. Waits poll the app's state with a timeout.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from prompt_toolkit.input import PipeInput, create_pipe_input
from prompt_toolkit.output import DummyOutput

from pi_host.messages import (
    AgentStartEvent,
    AssistantMessage,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    TextContent,
    TextDeltaEvent,
)
from pi_host.modes._interactive import (
    AutoRetryEndEvent,
    AutoRetryStartEvent,
    CompactionEndEvent,
    CompactionStartEvent,
    QueueUpdateEvent,
)
from pi_host.modes._interactive import _app as app_module
from pi_host.modes._interactive._app import InteractiveApp
from tests.interactive_support.fake_session import FakeInteractiveSession

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


class CapturingApp(InteractiveApp):
    """Keeps what would be written to the terminal's scrollback, without escapes."""

    written: str = ""

    def _write(self, text: str) -> None:
        _, erase, rest = text.rpartition("\x1b[3J")
        if erase:  # a redraw of the whole transcript starts from an empty scrollback
            self.written, text = "", rest
        self.written += ANSI.sub("", text).replace("\r\n", "\n")


async def until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    with anyio.fail_after(timeout):
        while not condition():
            await anyio.sleep(0.005)


class Harness:
    def __init__(self, app: CapturingApp, keys: PipeInput, session: FakeInteractiveSession) -> None:
        self.app = app
        self.keys = keys
        self.session = session

    async def committed(self, text: str) -> None:
        await until(lambda: text in self.app.written)


@asynccontextmanager
async def running(
    tmp_path: Path, script: list[dict[str, Any]] | None = None, *, keybindings: Any = None
) -> AsyncIterator[Harness]:
    session = FakeInteractiveSession(cwd=str(tmp_path), script=script or [])
    keybindings_path = tmp_path / "keybindings.json"
    if keybindings is not None:
        keybindings_path.write_text(json.dumps(keybindings))
    with create_pipe_input() as keys:
        app = CapturingApp(session, input=keys, output=DummyOutput(), keybindings_path=keybindings_path)
        async with anyio.create_task_group() as tg:
            tg.start_soon(app.run)
            await until(lambda: app.app.is_running and app._tg is not None)
            yield Harness(app, keys, session)
            app.request_exit()


async def test_select_confirm_input_editor_dialogs(tmp_path: Path) -> None:
    async with running(tmp_path) as harness:
        ui = harness.app.ui
        keys = harness.keys

        async def answer(send: str) -> None:
            await until(lambda: harness.app._dialog is not None)
            keys.send_text(send)

        async with anyio.create_task_group() as tg:
            tg.start_soon(answer, "\x1b[B\r")
            assert await ui.select("Pick", ["a", "b", "c"]) == "b"
            tg.start_soon(answer, "y")
            assert await ui.confirm("Delete?", "It cannot be undone") is True
            tg.start_soon(answer, "n")
            assert await ui.confirm("Delete?", "It cannot be undone") is False
            tg.start_soon(answer, "my answer\r")
            assert await ui.input("Name?", "type here") == "my answer"
            tg.start_soon(answer, "\nmore\r")
            assert await ui.editor("Edit", "first") == "first\nmore"
            tg.start_soon(answer, "\x1b")
            assert await ui.select("Pick", ["a"]) is None
        assert harness.app._dialog is None


async def test_a_cancelled_caller_closes_its_dialog(tmp_path: Path) -> None:
    async with running(tmp_path) as harness:
        with anyio.move_on_after(0.2):
            await harness.app.ui.input("Waiting", None)
        assert harness.app._dialog is None


async def test_notify_status_widget_title_editor_text(tmp_path: Path) -> None:
    async with running(tmp_path) as harness:
        ui = harness.app.ui
        ui.notify("plain note")
        ui.notify("careful", "warning")
        ui.notify("broken", "error")
        await harness.committed("Error: broken")
        assert "plain note" in harness.app.written and "Warning: careful" in harness.app.written
        ui.set_status("z", "last")
        ui.set_status("a", "first")
        footer = "".join(text for _, text in harness.app._footer_fragments())
        assert footer.endswith("first last")
        ui.set_status("z", None)
        assert harness.app.statuses == {"a": "first"}
        ui.set_widget("todo", ["- [ ] one", "- [x] two"])
        ui.set_widget("below", ["under"], "belowEditor")
        assert (
            "".join(t for _, t in harness.app._widget_fragments(harness.app.widgets_above))
            == "- [ ] one\n- [x] two"
        )
        assert harness.app.widgets_below == {"below": ["under"]}
        ui.set_widget("todo", None)
        assert harness.app.widgets_above == {}
        ui.set_editor_text("prefilled")
        assert ui.get_editor_text() == "prefilled"
        ui.set_title("custom title")


async def test_streaming_reply_is_committed_block_by_block(tmp_path: Path) -> None:
    async with running(tmp_path) as harness:
        session = harness.session
        message = AssistantMessage(content=[])
        await session.emit(AgentStartEvent())
        await session.emit(MessageStartEvent(message=message))

        async def stream(text: str) -> None:
            partial = message.model_copy(update={"content": [TextContent(text=text)]})
            delta = TextDeltaEvent(content_index=0, delta="", partial=partial)
            await session.emit(MessageUpdateEvent(message=partial, assistant_message_event=delta))

        await stream("First paragraph.\n\nSecond")
        await anyio.sleep(0.05)
        assert "First paragraph." not in harness.app.written  # the next block's line is not complete
        await stream("First paragraph.\n\nSecond paragraph\nstill going")
        await harness.committed("First paragraph.")
        assert "Second paragraph" not in harness.app.written
        final = message.model_copy(
            update={"content": [TextContent(text="First paragraph.\n\nSecond paragraph\nstill going. Done.")]}
        )
        await session.emit(MessageEndEvent(message=final))
        await harness.committed("still going. Done.")
        assert harness.app.written.count("First paragraph.") == 1


async def test_a_key_is_drawn_at_once_while_the_stream_waits_for_its_frame(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # prompt_toolkit's own redraw interval made a key's redraw wait behind the frame a
    # streaming reply had already asked for (12 ms median keystroke latency in bench_ui).
    monkeypatch.setattr(app_module, "_FRAME_INTERVAL", 60.0)  # the stream's frame never comes
    async with running(tmp_path) as harness:
        app = harness.app
        assert not app.app.min_redraw_interval
        drawn: list[str] = []
        app.app.after_render += lambda _: drawn.append(app.buffer.text)
        app.app.invalidate()
        await until(lambda: bool(drawn))
        app.invalidate()  # what streams in: waits for its frame
        await anyio.sleep(0.05)
        assert not app.app.invalidated
        count = len(drawn)
        harness.keys.send_text("x")
        await until(lambda: "x" in drawn)
        assert len(drawn) == count + 1


async def test_compaction_retry_and_queue_events(tmp_path: Path) -> None:
    async with running(tmp_path) as harness:
        app, session = harness.app, harness.session
        await session.emit(CompactionStartEvent(reason="overflow"))
        assert app._status is not None
        assert app._status.text() == "Context overflow detected, Auto-compacting... (esc to cancel)"
        await session.emit(
            CompactionEndEvent(reason="overflow", result={"tokensBefore": 150_000, "summary": "s"})
        )
        await harness.committed("Compacted from 150,000 tokens")
        assert app._status is None

        await session.emit(CompactionStartEvent(reason="manual"))
        await session.emit(CompactionEndEvent(reason="manual", aborted=True))
        await harness.committed("Error: Compaction cancelled")

        await session.emit(
            AutoRetryStartEvent(attempt=1, max_attempts=3, delay_ms=2000, error_message="overloaded")
        )
        assert app._status is not None and app._status.text() == "Retrying (1/3) in 2s... (esc to cancel)"
        await session.emit(AutoRetryEndEvent(success=False, attempt=3, final_error="529 overloaded"))
        await harness.committed("Error: Retry failed after 3 attempts: 529 overloaded")

        await session.emit(QueueUpdateEvent(steering=("fix it",), follow_up=("then docs",)))
        queue = [text for _, text in app._queue_lines()]
        assert queue == ["Steering: fix it", "Follow-up: then docs", "↳ Alt+Up to edit all queued messages"]


async def test_error_reply_and_prompt_failures_are_shown(tmp_path: Path) -> None:
    async with running(tmp_path) as harness:
        harness.session._script = [{"error": "401 invalid x-api-key"}]
        await harness.app.run_prompt("hi")
        await harness.committed("Error: 401 invalid x-api-key")


async def test_messages_typed_during_compaction_wait_for_it(tmp_path: Path) -> None:
    async with running(tmp_path) as harness:
        app, session = harness.app, harness.session
        await session.emit(CompactionStartEvent(reason="threshold"))
        harness.keys.send_text("after compaction\r")
        await harness.committed("Queued message for after compaction")
        assert app._queue_lines()[0][1] == "Steering: after compaction"
        await session.emit(
            CompactionEndEvent(reason="threshold", result={"tokensBefore": 10, "summary": "s"})
        )
        await harness.committed("Echo: after compaction")


async def test_resumed_session_history_is_shown(tmp_path: Path) -> None:
    session = FakeInteractiveSession(cwd=str(tmp_path), script=[{"text": "earlier answer"}])
    await session.prompt("earlier question")
    with create_pipe_input() as keys:
        app = CapturingApp(
            session, input=keys, output=DummyOutput(), keybindings_path=tmp_path / "keybindings.json"
        )
        async with anyio.create_task_group() as tg:
            tg.start_soon(app.run)
            await until(lambda: "earlier answer" in app.written)
            assert app.written.index("earlier question") < app.written.index("earlier answer")
            assert list(app.history.load_history_strings()) == ["earlier question"]
            app.request_exit()


# -- keybindings.json -------------------------------------------------------------------------------


async def test_editor_actions_follow_keybindings_json(tmp_path: Path) -> None:
    bindings = {"tui.editor.cursorLineStart": "alt+a", "tui.editor.deleteWordBackward": "alt+w"}
    async with running(tmp_path, keybindings=bindings) as harness:
        app, keys = harness.app, harness.keys
        keys.send_text("hello world")
        await until(lambda: app.buffer.text == "hello world")
        keys.send_text("\x1bw")  # the word before the cursor goes
        await until(lambda: app.buffer.text == "hello ")
        keys.send_text("\x01\x17X")  # Ctrl+A, Ctrl+W: no longer bound, they do nothing
        await until(lambda: app.buffer.text == "hello X")
        keys.send_text("\x1baY")  # Alt+A: start of line
        await until(lambda: app.buffer.text == "Yhello X")
        keys.send_text("\x05Z")  # Ctrl+E keeps its default
        await until(lambda: app.buffer.text == "Yhello XZ")


async def test_exit_key_on_a_non_empty_editor_does_its_editor_action_or_nothing(tmp_path: Path) -> None:
    async with running(tmp_path, keybindings={"tui.editor.deleteCharForward": ["delete"]}) as harness:
        app, keys = harness.app, harness.keys
        keys.send_text("abc\x01\x04")  # Ctrl+A, then Ctrl+D: no longer deletes, does not quit
        keys.send_text("\x1b[3~X")  # Delete still deletes
        await until(lambda: app.buffer.text == "Xbc")
        assert app.app.is_running


async def test_app_actions_and_lists_follow_keybindings_json(tmp_path: Path) -> None:
    bindings = {"app.tools.expand": "alt+o", "tui.select.down": "ctrl+j", "tui.select.confirm": "tab"}
    async with running(tmp_path, keybindings=bindings) as harness:
        app, keys = harness.app, harness.keys
        keys.send_text("\x0f")  # Ctrl+O: moved away, it does nothing
        keys.send_text("\x1bo")
        await until(lambda: app.options.expand_tools)
        keys.send_text("\x0fx")
        await until(lambda: app.buffer.text == "x")
        assert app.options.expand_tools  # Ctrl+O did not toggle it back
        app.buffer.reset()

        async def answer() -> None:
            await until(lambda: app._dialog is not None)
            keys.send_text("\n\n\t")

        async with anyio.create_task_group() as tg:
            tg.start_soon(answer)
            assert await app.ui.select("Pick", ["a", "b", "c"]) == "c"


async def test_keybinding_problems_warn_at_start_and_reload_rereads(tmp_path: Path) -> None:
    bindings = {"app.thinking.toggle": "hyper+t", "app.tools.expand": "alt+o"}
    async with running(tmp_path, keybindings=bindings) as harness:
        app, keys = harness.app, harness.keys
        await harness.committed('"app.thinking.toggle": "hyper+t" is not a key')
        assert app.written.count("hyper+t") == 1
        keys.send_text("\x14")  # the bad key left Ctrl+T in place
        await until(lambda: app.options.hide_thinking)

        (tmp_path / "keybindings.json").write_text(json.dumps({"app.thinking.toggle": "alt+t", "nope": "x"}))
        # Run directly: a command spawned from a key needs anyio's own event loop, not pytest's.
        await app.commands.run("/reload")
        await harness.committed("Reloaded keybindings")
        assert app.written.count("hyper+t") == 1
        assert app.written.count('"nope" is not a keybinding id') == 1
        keys.send_text("\x1bt")
        await until(lambda: not app.options.hide_thinking)
        await app.commands.run("/hotkeys")
        await harness.committed("Keyboard Shortcuts")
        await harness.committed("Alt+T")


async def test_import_without_a_path_and_the_changelog(tmp_path: Path) -> None:
    async with running(tmp_path) as harness:
        app = harness.app
        assert app.commands.is_builtin("/import old.jsonl") and app.commands.is_builtin("/trust")
        await app.commands.run("/import")
        await harness.committed("Usage: /import <path.jsonl>")
        await app.commands.run("/changelog")
        await harness.committed("What's New")
        await harness.committed("[Unreleased]")
        app.request_exit()


class _RewindingSession(FakeInteractiveSession):
    """A plugin command that moves the conversation back, as pi-checkpoints' /rewind does."""

    async def run_plugin_command(self, name: str, args: str) -> None:
        self.plugin_log.append((name, args))
        if args != "stay":
            first = next(i for i, e in self._entries.items() if e[1]["type"] == "message")
            await self.navigate_tree(first, summarize=False)


async def test_a_plugin_command_that_moves_the_conversation_redraws_it(tmp_path: Path) -> None:
    session = _RewindingSession(
        cwd=str(tmp_path), script=[{"text": "first answer"}, {"text": "second answer"}]
    )
    await session.prompt("first question")
    with create_pipe_input() as keys:
        app = CapturingApp(
            session, input=keys, output=DummyOutput(), keybindings_path=tmp_path / "keybindings.json"
        )
        async with anyio.create_task_group() as tg:
            tg.start_soon(app.run)
            await until(lambda: "first answer" in app.written)
            shown = len(app.written)
            await app.run_plugin_command("greet", "")
            # The conversation went back to before the first question: the screen says so.
            assert session.messages == []
            await until(lambda: "──" in app.written[shown:])
            assert "first answer" not in app.written[shown:]
            # A command that leaves the conversation as it was draws nothing new.
            before = len(app.written)
            await app.run_plugin_command("greet", "stay")
            assert app.written[before:] == ""
            app.request_exit()
