"""The interactive terminal application: transcript, live area, editor, footer.

The screen has two parts, as in pi. Finished output (user messages, completed replies, settled
tool calls, notices) is written once into the terminal's own scrollback, so it can be scrolled,
searched and copied like any command output. Below it, prompt_toolkit redraws a small live area:
what is still changing (the reply being streamed, running tools, a running ``!cmd``), the queued
messages, a spinner, plugin widgets, the editor and the footer.

An item moves from the live area to the scrollback when it is done, strictly in order (a tool that
finished early waits for the one above it). A streaming reply does not wait for its end: each
markdown block is committed as soon as the next one starts, so long replies scroll naturally and
the live area stays a few lines tall. Writes into the scrollback go through prompt_toolkit's
``in_terminal``, which erases the live area first and redraws it after, so nothing flickers or
tears; what plugins print goes the same way (``_stdout``), never through ``patch_stdout``, whose
erase and redraw reach the terminal as separate frames.

What went into the scrollback is remembered item by item. When something already there must look
different (Ctrl+O expands tool output, Ctrl+T hides thinking, the terminal changes width), screen
and scrollback are cleared and the whole transcript is drawn again, as pi does.
"""

from __future__ import annotations

import base64
import inspect
import logging
import os
import sys
import time
import warnings
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

import anyio
from anyio.abc import TaskGroup
from prompt_toolkit.application import Application
from prompt_toolkit.application.current import set_app
from prompt_toolkit.application.run_in_terminal import in_terminal
from prompt_toolkit.buffer import Buffer, CompletionState
from prompt_toolkit.completion import Completion
from prompt_toolkit.filters import Condition, has_completions, has_focus
from prompt_toolkit.formatted_text import ANSI, StyleAndTextTuples, to_formatted_text
from prompt_toolkit.history import InMemoryHistory
from prompt_toolkit.input import Input
from prompt_toolkit.input.ansi_escape_sequences import ANSI_SEQUENCES
from prompt_toolkit.key_binding import DynamicKeyBindings
from prompt_toolkit.keys import Keys
from prompt_toolkit.layout import (
    ConditionalContainer,
    Container,
    Dimension,
    DynamicContainer,
    FormattedTextControl,
    HSplit,
    Layout,
    Window,
)
from prompt_toolkit.layout.controls import BufferControl
from prompt_toolkit.layout.menus import CompletionsMenu
from prompt_toolkit.output import Output
from prompt_toolkit.styles import Style
from rich.console import Group, RenderableType
from rich.text import Text

from pi_host.hookspecs import ToolRenderer
from pi_host.session._paths import agent_dir

from ._bindings import build_key_bindings
from ._completion import EditorCompleter
from ._dialogs import Dialog, EditorDialog, InputDialog, SelectDialog
from ._footer import GitBranch, UsageTotals, footer_lines
from ._keymap import load_keymap
from ._keys import key_label
from ._output import SynchronizedOutput
from ._render import (
    BashView,
    RenderOptions,
    ToolView,
    ansi_lines,
    field_of,
    markdown_tail,
    render_bash,
    render_markdown,
    render_notice,
    render_thinking,
    render_tool,
    render_user,
    stable_markdown_prefix,
)
from ._stdout import PrintedText, redirect_prints
from ._ui_bridge import UiBridge

if TYPE_CHECKING:
    from ._driver import InteractiveSession
    from ._quit import QuitRequest

__all__ = ["InteractiveApp"]

T = TypeVar("T")
D = TypeVar("D")

SPINNER_FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_SPINNER_INTERVAL = 0.08
_DOUBLE_PRESS_S = 0.5
_MAX_EDITOR_ROWS = 12
# The shortest time between two frames that what streams in asks for; what the user types is
# drawn at once (see InteractiveApp.invalidate).
_FRAME_INTERVAL = 0.02
_PASTE_MAX_LINES = 10  # a paste longer than this shows as a marker in the editor (pi's limits)
_PASTE_MAX_CHARS = 1000

_STYLE = Style.from_dict(
    {
        "footer": "#808080",
        "footer.context-warn": "#d7af00",
        "footer.context-high": "#ff5f5f",
        "footer.status": "#808080",
        "rule": "#5f5f5f",
        "rule.bash": "#af5fd7",
        "rule.thinking-minimal": "#5f5f87",
        "rule.thinking-low": "#5f87af",
        "rule.thinking-medium": "#5fafd7",
        "rule.thinking-high": "#af87ff",
        "rule.thinking-xhigh": "#ff5fd7",
        "queue": "#808080",
        "status": "#808080",
        "status.spinner": "#5fafff",
        "status.warning": "#d7af00",
        "widget": "",
        "picker.title": "bold",
        "picker.message": "",
        "picker.hint": "#808080",
        "picker.option": "",
        "picker.selected": "bold #5fafff",
        "picker.placeholder": "#6c6c6c italic",
        "picker.rule": "#5f5f5f",
        "completion-menu": "bg:#262626 #d0d0d0",
        "completion-menu.completion.current": "bg:#005f87 #ffffff",
        "completion-menu.meta.completion": "bg:#262626 #808080",
        "completion-menu.meta.completion.current": "bg:#005f87 #d0d0d0",
    }
)


def _install_key_sequences() -> None:
    # Terminals that report modified Enter (xterm's modifyOtherKeys, the kitty protocol) let
    # Shift+Enter insert a new line as pi's editor does; prompt_toolkit maps them all to Enter.
    for sequence in ("\x1b[27;2;13~", "\x1b[13;2u"):
        ANSI_SEQUENCES[sequence] = Keys.ControlJ


def _message_text(message: Any) -> str:
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)
        elif kind == "image":
            parts.append("[image]")
    return "".join(parts)


# -- transcript items ----------------------------------------------------------------------


class _Item:
    """Something shown in the live area until it is done, then committed to the scrollback."""

    done: bool = False
    # A failed reply waits in the live area until the run is over: a retry replaces it.
    held: bool = False
    version: int = 0

    def touch(self) -> None:
        self.version += 1

    def renderable(self, options: RenderOptions) -> RenderableType | None:
        raise NotImplementedError

    def take_partial(self, options: RenderOptions) -> RenderableType | None:
        """A finished leading part that can be committed before the whole item is done."""
        return None

    def has_partial(self) -> bool:
        return False

    def transcript_renderable(self, options: RenderOptions) -> RenderableType | None:
        """What this item has put into the scrollback so far, drawn afresh (a toggle or a resize
        redraws the whole transcript with the options then in force)."""
        return self.renderable(options)


class _StaticItem(_Item):
    def __init__(self, renderable: RenderableType) -> None:
        self._renderable = renderable
        self.done = True

    def renderable(self, options: RenderOptions) -> RenderableType | None:
        return self._renderable


class _AssistantItem(_Item):
    """A reply being streamed; its complete blocks are committed as they are finished."""

    def __init__(self, message: Any) -> None:
        self.message = message
        self._blocks_done = 0  # content blocks already committed
        self._chars_done = 0  # characters of the next block already committed

    def update(self, message: Any) -> None:
        self.message = message
        self.touch()

    def _block_text(self, block: Any) -> tuple[str | None, str]:
        kind = getattr(block, "type", None)
        if kind == "text":
            return "text", block.text
        if kind == "thinking":
            return "thinking", block.thinking
        return None, ""

    def _render_block(self, kind: str, text: str, options: RenderOptions) -> RenderableType | None:
        if not text.strip():
            return None
        if kind == "thinking":
            return render_thinking(text.strip(), options)
        return render_markdown(text.strip())

    def _parts(self, options: RenderOptions) -> list[RenderableType]:
        parts: list[RenderableType] = []
        content = list(getattr(self.message, "content", []))
        for index in range(self._blocks_done, len(content)):
            kind, text = self._block_text(content[index])
            if kind is None:
                continue
            if index == self._blocks_done:
                text = text[self._chars_done :]
                if kind == "thinking" and options.hide_thinking and self._chars_done:
                    continue  # its label is already in the scrollback
            if not self.done and index == len(content) - 1:
                # Only the bottom of a long streaming block fits on screen; rendering all of
                # it on every frame would stall the editor.
                text = markdown_tail(text, options.live_max_lines)
            part = self._render_block(kind, text, options)
            if part is not None:
                parts.append(part)
        if self.done:
            error = self._error_line(content)
            if error is not None:
                parts.append(error)
        return parts

    def transcript_renderable(self, options: RenderOptions) -> RenderableType | None:
        content = list(getattr(self.message, "content", []))
        parts: list[RenderableType] = []
        last = len(content) - 1 if self.done else min(self._blocks_done, len(content) - 1)
        for index in range(last + 1):
            kind, text = self._block_text(content[index])
            if kind is None:
                continue
            if not self.done and index == self._blocks_done:
                text = text[: self._chars_done]  # the rest is still in the live area
            part = self._render_block(kind, text, options)
            if part is not None:
                parts.append(part)
        if self.done:
            error = self._error_line(content)
            if error is not None:
                parts.append(error)
        return _spaced(parts)

    def _error_line(self, content: list[Any]) -> RenderableType | None:
        if any(getattr(block, "type", None) == "toolCall" for block in content):
            return None  # the tool panels show the error
        stop = getattr(self.message, "stop_reason", None)
        error = getattr(self.message, "error_message", None)
        if stop == "aborted":
            shown = error if error and error != "Request was aborted" else "Operation aborted"
            return Text(shown, style="red")
        if stop == "error":
            return Text(f"Error: {error or 'Unknown error'}", style="red")
        return None

    def renderable(self, options: RenderOptions) -> RenderableType | None:
        parts = self._parts(options)
        return _spaced(parts)

    def has_partial(self) -> bool:
        content = list(getattr(self.message, "content", []))
        if len(content) - 1 > self._blocks_done:
            return True
        if not content or len(content) - 1 < self._blocks_done:
            return False
        kind, text = self._block_text(content[-1])
        return kind is not None and stable_markdown_prefix(text[self._chars_done :]) > 0

    def take_partial(self, options: RenderOptions) -> RenderableType | None:
        content = list(getattr(self.message, "content", []))
        parts: list[RenderableType] = []
        last = len(content) - 1
        while self._blocks_done < last:
            kind, text = self._block_text(content[self._blocks_done])
            skip_label = kind == "thinking" and options.hide_thinking and self._chars_done
            if kind is not None and not skip_label:
                part = self._render_block(kind, text[self._chars_done :], options)
                if part is not None:
                    parts.append(part)
            self._blocks_done += 1
            self._chars_done = 0
        if last >= 0 and self._blocks_done == last:
            kind, text = self._block_text(content[last])
            if kind is not None:
                rest = text[self._chars_done :]
                cut = stable_markdown_prefix(rest)
                hidden = kind == "thinking" and options.hide_thinking
                if cut and not (hidden and self._chars_done):
                    part = self._render_block(kind, rest[:cut], options)
                    if part is not None:
                        parts.append(part)
                if cut:
                    self._chars_done += cut
        self.touch()
        return _spaced(parts)


class _ToolItem(_Item):
    def __init__(self, view: ToolView, screen: _PluginRendering) -> None:
        self.view = view
        self._screen = screen

    def renderable(self, options: RenderOptions) -> RenderableType | None:
        screen = self._screen
        return render_tool(self.view, options, screen.tool_renderer(self.view.name), screen.renderer_failed)


class _PluginRendering:
    """The renderers plugins registered (read from the session each time: /reload changes
    them), and the report of one that fails: once per renderer, not once per frame."""

    def __init__(self, app: InteractiveApp) -> None:
        self._app = app
        self._reported: set[str] = set()

    def _registered(self, method: str) -> Mapping[str, Any]:
        lookup = getattr(self._app.session, method, None)
        return self._app._safe(lookup, {}) if lookup is not None else {}

    def tool_renderer(self, name: str) -> ToolRenderer | None:
        return self._registered("tool_renderers").get(name)

    def custom_message(self, message: Any) -> RenderableType:
        renderer = self._registered("message_renderers").get(getattr(message, "custom_type", ""))
        if renderer is not None:
            try:
                shown = renderer.render(message, self._app.options.expand_tools)
            except Exception as exc:
                self.renderer_failed(f"the {message.custom_type!r} message renderer", exc)
            else:
                if shown is not None:
                    return cast(RenderableType, shown)
        return _render_custom(message)

    def renderer_failed(self, what: str, exc: Exception) -> None:
        if what not in self._reported:
            self._reported.add(what)
            self._app.warning(f"{what} failed: {type(exc).__name__}: {exc}; the default is shown")


class _BashItem(_Item):
    def __init__(self, view: BashView) -> None:
        self.view = view

    def renderable(self, options: RenderOptions) -> RenderableType | None:
        return render_bash(self.view, options)


class _Status:
    """The line under the live items: a spinner and what is going on."""

    def __init__(
        self,
        message: str,
        *,
        kind: Literal["working", "compacting", "retry", "summarizing"],
        deadline: float | None = None,
        template: Callable[[int], str] | None = None,
    ) -> None:
        self.message = message
        self.kind = kind
        self.deadline = deadline
        self.template = template

    def text(self) -> str:
        if self.deadline is not None and self.template is not None:
            remaining = max(0, int(self.deadline - time.monotonic() + 0.999))
            return self.template(remaining)
        return self.message


class _NoticeHandler(logging.Handler):
    """Shows log records (warnings and worse) as transcript notices while the screen is up.

    A log line written straight to the terminal would tear the live area, and Python writes
    unhandled warnings to stderr when nothing is configured.
    """

    def __init__(self, app: InteractiveApp) -> None:
        super().__init__(logging.WARNING)
        self._app = app

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
            if record.exc_info and record.exc_info[1] is not None:
                message += f": {record.exc_info[1]}"
        except Exception:
            return
        self._app.notice(message, "error" if record.levelno >= logging.ERROR else "warning")


@contextmanager
def _terminal_safe_logging(app: InteractiveApp) -> Iterator[None]:
    """Route logging and ``warnings`` to the transcript for the duration of the app."""
    root = logging.getLogger()
    handler = _NoticeHandler(app)
    # Handlers writing to the terminal are parked; file handlers keep working.
    parked = [
        h
        for h in root.handlers
        if isinstance(h, logging.StreamHandler) and getattr(h.stream, "isatty", lambda: False)()
    ]
    for h in parked:
        root.removeHandler(h)
    root.addHandler(handler)
    show_warning = warnings.showwarning

    def to_notice(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        app.notice(f"{category.__name__}: {message}", "warning")

    warnings.showwarning = to_notice
    try:
        yield
    finally:
        warnings.showwarning = show_warning
        root.removeHandler(handler)
        for h in parked:
            root.addHandler(h)


# -- the application -----------------------------------------------------------------------


class InteractiveApp:
    """pi's interactive mode over an :class:`InteractiveSession`.

    :param version: shown in the start-up header.
    :param input: / :param output: prompt_toolkit input and output (the terminal by default).
    :param keybindings_path: pi's keybindings.json to read (``<agent dir>/keybindings.json``
        by default).
    """

    def __init__(
        self,
        session: InteractiveSession,
        *,
        version: str = "",
        app_name: str = "pi-host",
        show_history: bool = True,
        hide_thinking: bool = False,
        verbose: bool = False,
        input: Input | None = None,
        output: Output | None = None,
        keybindings_path: Path | None = None,
    ) -> None:
        _install_key_sequences()
        self.session = session
        self.verbose = verbose
        self.app_name = app_name
        self.version = version
        self.options = RenderOptions(hide_thinking=hide_thinking, cwd=session.cwd)
        self._items: list[_Item] = []
        self._pastes: dict[str, str] = {}  # marker in the editor -> the text it stands for
        self._paste_count = 0
        # Everything written to the scrollback, in order, so it can be drawn again.
        self._committed: list[_Item] = []
        self._laid_out_width: int | None = None
        self._redraw_wanted = False
        self._assistant: _AssistantItem | None = None
        self._tools: dict[str, _ToolItem] = {}
        self._bash: _BashItem | None = None
        self._queue: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
        self._compaction_queue: list[tuple[str, Literal["steer", "followUp"]]] = []
        self._status: _Status | None = None
        self._working_message: str | None = None
        self.widgets_above: dict[str, list[str]] = {}
        self.widgets_below: dict[str, list[str]] = {}
        self.statuses: dict[str, str] = {}
        self._totals = UsageTotals.of(session.messages)
        self._branch = GitBranch(session.cwd)
        self._run_active = False
        self._compacting = False
        self._compaction_error_shown = False
        self._dialog: Dialog[Any] | None = None
        self._dialog_lock = anyio.Lock()
        self._last_ctrl_c = 0.0
        self._last_escape = 0.0
        self._frame = 0
        self._cache: dict[int, tuple[tuple[int, int, bool, bool], list[str]]] = {}
        self._flush_wanted = anyio.Event()
        self._printed = PrintedText(self.request_flush)  # what plugins print, for the flusher
        self._tg: TaskGroup | None = None
        self._exiting = False
        self._terminal_gone = False
        self._show_history = show_history
        self._agent_started: anyio.Event | None = None
        self._elapsed_second = 0
        self._recent_problems: dict[str, float] = {}
        self.ui = UiBridge(self)
        self.rendering = _PluginRendering(self)
        self.shortcut_problems: list[str] = []  # plugin shortcuts that could not be bound

        from ._commands import CommandRunner

        self.commands = CommandRunner(self)
        self.completer = EditorCompleter(
            cwd=session.cwd,
            commands=self.commands.completion_entries,
            models=lambda: [model.ref for model in self._safe(session.available_models, ())],
            thinking_levels=self.commands.thinking_levels,
        )
        self.history = InMemoryHistory()
        for message in session.messages:
            if getattr(message, "role", None) == "user":
                text = _message_text(message).strip()
                if text:
                    self.history.append_string(text)
        self.buffer = Buffer(
            multiline=True,
            completer=self.completer,
            complete_while_typing=Condition(self._complete_while_typing),
            history=self.history,
            on_completions_changed=self._highlight_first_command,
        )
        self._keybindings_path = keybindings_path or agent_dir() / "keybindings.json"
        self.keymap = load_keymap(self._keybindings_path)
        self._key_bindings = build_key_bindings(self, self.keymap)
        if output is None and sys.stdout.isatty() and os.environ.get("TERM") not in ("dumb", None):
            output = SynchronizedOutput.from_pty(sys.stdout, term=os.environ.get("TERM"))
        self.app: Application[None] = Application(
            layout=Layout(self._build_layout(), focused_element=self.buffer),
            # Dynamic, so /reload can swap in the keys of an edited keybindings.json.
            key_bindings=DynamicKeyBindings(lambda: self._key_bindings),
            style=_STYLE,
            full_screen=False,
            mouse_support=False,
            input=input,
            output=output,
            # No redraw interval of prompt_toolkit's: a key press would wait behind the frame
            # the stream already asked for. invalidate() spaces out the stream's frames instead.
            erase_when_done=True,
        )
        self._frame_due = 0.0  # time.monotonic() when the frame invalidate() scheduled is due
        self._last_frame = 0.0  # time.monotonic() when the last frame began
        self.app.before_render += self._frame_began
        self.app.ttimeoutlen = 0.05
        self.app.timeoutlen = 0.25

    # -- small helpers ---------------------------------------------------------------------

    @staticmethod
    def _safe(call: Callable[[], T], default: D) -> T | D:
        try:
            return call()
        except Exception:
            return default

    @property
    def busy(self) -> bool:
        """An agent run is going on (the session says so, or a prompt of ours has not returned)."""
        return self._run_active or bool(self.session.is_streaming)

    @property
    def width(self) -> int:
        try:
            return max(self.app.output.get_size().columns, 20)
        except Exception:
            return 80

    def _complete_while_typing(self) -> bool:
        text = self.buffer.document.text_before_cursor
        if text.startswith("/") and "\n" not in text:
            return True
        return "@" in text.rsplit(" ", 1)[-1].rsplit("\n", 1)[-1]

    def invalidate(self) -> None:
        """Ask for a frame, at most one each ``_FRAME_INTERVAL``: a reply streams in small
        pieces, and drawing each would leave the event loop little time for anything else.

        Only what changes on its own (the stream, tools, the spinner, plugins) comes this way.
        A key press changes the editor's buffer, which invalidates the application directly, so
        its frame is drawn at once instead of after the one the stream is waiting for.
        """
        app = self.app
        loop = app.loop
        now = time.monotonic()
        # (A frame long overdue was lost with the loop it was scheduled on: not waited for.)
        if app.invalidated or now < self._frame_due + _FRAME_INTERVAL:
            return  # a frame that will show this is on its way
        wait = self._last_frame + _FRAME_INTERVAL - now
        if wait <= 0 or loop is None or loop.is_closed():
            app.invalidate()
            return
        self._frame_due = now + wait

        def draw() -> None:
            self._frame_due = 0.0
            app.invalidate()

        # Thread-safe as Application.invalidate is (a plugin's thread may ask for a frame).
        loop.call_soon_threadsafe(loop.call_later, wait, draw)

    def _frame_began(self, _app: object) -> None:
        self._last_frame = time.monotonic()

    def spawn(self, func: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run ``func(*args)`` in the background; its failure becomes an error notice."""

        async def guarded() -> None:
            try:
                await func(*args)
            except anyio.get_cancelled_exc_class():
                raise
            except Exception as exc:
                self.error(str(exc) or type(exc).__name__)
            self._quit_if_shutdown_requested()

        if self._tg is None:
            raise RuntimeError("the interactive application is not running")
        self._tg.start_soon(guarded)

    # -- transcript ------------------------------------------------------------------------

    def add(self, item: _Item) -> None:
        self._items.append(item)
        self.request_flush()

    def add_static(self, renderable: RenderableType) -> None:
        self.add(_StaticItem(renderable))

    def notice(self, message: str, level: str = "info") -> None:
        """A status line in the transcript (``info``), or ``Warning: …`` / ``Error: …``.

        A warning or error repeated within a second is shown once (a plugin failure arrives
        both as an event and as a log record).
        """
        if level in ("warning", "error"):
            now = time.monotonic()
            if self._recent_problems.get(message, -1e9) > now - 1.0:
                return
            self._recent_problems[message] = now
        self.add_static(render_notice(message, level))

    def error(self, message: str) -> None:
        self.notice(message, "error")

    def warning(self, message: str) -> None:
        self.notice(message, "warning")

    def request_flush(self) -> None:
        self._flush_wanted.set()
        self.invalidate()

    def _committable(self) -> bool:
        if not self._items:
            return False
        first = self._items[0]
        return (first.done and not first.held) or first.has_partial()

    def _take_committable(self) -> str:
        renderables: list[RenderableType] = []
        while self._items:
            item = self._items[0]
            if item.held:
                break
            if item.done:
                self._items.pop(0)
                self._cache.pop(id(item), None)
                renderable = item.renderable(self.options)
            else:
                renderable = item.take_partial(self.options)
            if renderable is not None:
                renderables.append(renderable)
                if not self._committed or self._committed[-1] is not item:
                    self._committed.append(item)
            if not item.done:
                break
        width = self.width
        out: list[str] = []
        for renderable in renderables:
            lines = ansi_lines(renderable, width)
            if lines:
                out.append("\n" + "\n".join(lines) + "\n")
        return "".join(out)

    def _write(self, text: str) -> None:
        if not text:
            return
        output = self.app.output
        output.write_raw(text.replace("\r\n", "\n").replace("\n", "\r\n"))
        output.flush()

    async def _flusher(self) -> None:
        while True:
            await self._flush_wanted.wait()
            self._flush_wanted = anyio.Event()
            if not self._redraw_wanted and not self._committable() and not self._printed:
                continue
            with set_app(self.app), self._one_frame():
                async with in_terminal():
                    redrawn = self._take_transcript() if self._redraw_wanted else ""
                    self._write(redrawn + self._take_committable() + self._printed.take())

    def _one_frame(self) -> AbstractContextManager[None]:
        """Erase, write above and redraw as one frame, where the output can (never a blank
        editor or footer in between)."""
        output = self.app.output
        return output.held() if isinstance(output, SynchronizedOutput) else nullcontext()

    def redraw_transcript(self) -> None:
        """Draw the whole transcript again, as pi does when what is already on screen changes
        (Ctrl+O, Ctrl+T, a new terminal width): screen and scrollback are cleared first, so
        nothing shows twice."""
        self._redraw_wanted = True
        self.request_flush()  # the flusher draws it (key handlers cannot start tasks)

    def _take_transcript(self) -> str:
        """The whole scrollback drawn afresh, after the sequences that clear it."""
        self._redraw_wanted = False
        width = self._laid_out_width = self.width
        out = ["\x1b[H\x1b[2J\x1b[3J"]
        for item in self._committed:
            renderable = item.transcript_renderable(self.options)
            lines = ansi_lines(renderable, width) if renderable is not None else []
            if lines:
                out.append("\n" + "\n".join(lines) + "\n")
        return "".join(out)

    async def write_above(self, text: str) -> None:
        """Write raw ANSI text into the scrollback, above the live area."""
        with set_app(self.app), self._one_frame():
            async with in_terminal():
                self._write(self._take_committable())
                self._write(text)

    def write_control(self, sequence: str) -> None:
        """Send a control sequence that draws nothing (a title, a clipboard write)."""
        self.app.output.write_raw(sequence)
        self.app.output.flush()

    # -- live area ---------------------------------------------------------------------------

    def _item_lines(self, item: _Item) -> list[str]:
        key = (item.version, self.width, self.options.expand_tools, self.options.hide_thinking)
        cached = self._cache.get(id(item))
        if cached is not None and cached[0] == key:
            return cached[1]
        renderable = item.renderable(self.options)
        lines = ansi_lines(renderable, self.width) if renderable is not None else []
        self._cache[id(item)] = (key, lines)
        return lines

    def _spinner(self) -> str:
        return SPINNER_FRAMES[self._frame % len(SPINNER_FRAMES)]

    def _queue_lines(self) -> list[tuple[str, str]]:
        steering, follow_up = self._queue
        steering = steering + tuple(text for text, mode in self._compaction_queue if mode == "steer")
        follow_up = follow_up + tuple(text for text, mode in self._compaction_queue if mode == "followUp")
        if not steering and not follow_up:
            return []
        width = self.width
        lines = [("class:queue", _clip(f"Steering: {text}", width)) for text in steering]
        lines += [("class:queue", _clip(f"Follow-up: {text}", width)) for text in follow_up]
        dequeue = self.key_label("app.message.dequeue")
        if dequeue:
            lines.append(("class:queue", f"↳ {dequeue} to edit all queued messages"))
        return lines

    def _fixed_rows(self) -> int:
        rows = 3 if self.statuses else 2  # footer
        if self._dialog is not None:
            rows += self._dialog.height()
        else:
            rows += 2 + min(max(self.buffer.document.line_count, 1), _MAX_EDITOR_ROWS)
            if self.buffer.complete_state is not None:
                rows += min(len(self.buffer.complete_state.completions), 8)
        rows += sum(len(lines) for lines in self.widgets_above.values())
        rows += sum(len(lines) for lines in self.widgets_below.values())
        return rows

    def _live_fragments(self) -> StyleAndTextTuples:
        try:
            rows = self.app.output.get_size().rows
        except Exception:
            rows = 24
        width = self.width
        if self._laid_out_width is None:
            self._laid_out_width = width
        elif width != self._laid_out_width:
            self.redraw_transcript()  # the terminal was resized: lay everything out again
        self.options.live_max_lines = max(rows, 10)
        lines: list[str] = []
        for item in self._items:
            item_lines = self._item_lines(item)
            if item_lines:
                lines.append("")
                lines += item_lines
        fragments: StyleAndTextTuples = []
        queue = self._queue_lines()
        status = self._status_line()
        extra = len(queue) + (1 if queue else 0) + (2 if status else 0)
        room = max(rows - self._fixed_rows() - extra - 1, 0)
        if len(lines) > room:
            lines = lines[len(lines) - room :]
        for line in lines:
            fragments += to_formatted_text(ANSI(line))
            fragments.append(("", "\n"))
        if queue:
            fragments.append(("", "\n"))
            for style, text in queue:
                fragments.append((style, text))
                fragments.append(("", "\n"))
        if status:
            fragments.append(("", "\n"))
            fragments += status
            fragments.append(("", "\n"))
        if fragments and fragments[-1] == ("", "\n"):
            fragments.pop()
        return fragments

    def _status_line(self) -> StyleAndTextTuples:
        status = self._status
        if status is None:
            return []
        style = "class:status.warning" if status.kind == "retry" else "class:status.spinner"
        return [(style, self._spinner() + " "), ("class:status", _clip(status.text(), self.width - 2))]

    def _widget_fragments(self, widgets: dict[str, list[str]]) -> StyleAndTextTuples:
        fragments: StyleAndTextTuples = []
        for key in widgets:
            for line in widgets[key]:
                fragments += to_formatted_text(ANSI(line))
                fragments.append(("", "\n"))
        if fragments:
            fragments.pop()
        return fragments

    def _footer_fragments(self) -> StyleAndTextTuples:
        session = self.session
        model = self._safe(lambda: session.model, None)
        usage = self._safe(session.context_usage, None)
        window = usage.context_window if usage is not None else (model.context_window if model else 0)
        percent = usage.percent if usage is not None else 0.0
        lines = footer_lines(
            self.width,
            cwd=session.cwd,
            git_branch=self._branch.get(),
            session_name=self._safe(lambda: session.session_name, None),
            totals=self._totals,
            context_tokens_percent=percent,
            context_window=window,
            auto_compaction=bool(self._safe(lambda: session.auto_compaction_enabled, True)),
            model_id=model.id if model else None,
            provider=model.provider if model else None,
            reasoning=bool(model.reasoning) if model else False,
            thinking_level=self._safe(lambda: session.thinking_level, "off"),
            statuses=self.statuses,
        )
        fragments: StyleAndTextTuples = []
        for line in lines:
            fragments += line
            fragments.append(("", "\n"))
        fragments.pop()
        return fragments

    def _rule_style(self) -> str:
        if self.buffer.text.lstrip().startswith("!"):
            return "class:rule.bash"
        level = self._safe(lambda: self.session.thinking_level, "off")
        return "class:rule" if level == "off" else f"class:rule.thinking-{level}"

    def _build_layout(self) -> Container:
        live = Window(
            FormattedTextControl(self._live_fragments, show_cursor=False),
            dont_extend_height=True,
            wrap_lines=False,
        )
        editor = Window(
            BufferControl(self.buffer),
            height=lambda: Dimension(min=1, max=_MAX_EDITOR_ROWS),
            wrap_lines=True,
            dont_extend_height=True,
        )

        def rule() -> Window:
            return Window(char="─", height=1, style=self._rule_style)

        editor_area = ConditionalContainer(
            HSplit([rule(), editor, rule()]),
            filter=Condition(lambda: self._dialog is None),
        )
        dialog_area = DynamicContainer(lambda: self._dialog.container if self._dialog else Window(height=0))
        completions = ConditionalContainer(
            CompletionsMenu(max_height=8, scroll_offset=1),
            filter=has_completions & has_focus(self.buffer),
        )

        def widgets(store: dict[str, list[str]]) -> Container:
            return ConditionalContainer(
                Window(
                    FormattedTextControl(lambda: self._widget_fragments(store)),
                    dont_extend_height=True,
                    style="class:widget",
                ),
                filter=Condition(lambda: bool(store)),
            )

        footer = Window(FormattedTextControl(self._footer_fragments), dont_extend_height=True)
        return HSplit(
            [
                live,
                widgets(self.widgets_above),
                editor_area,
                dialog_area,
                completions,
                widgets(self.widgets_below),
                footer,
            ]
        )

    # -- keys ---------------------------------------------------------------------------------

    def _highlight_first_command(self, buffer: Buffer) -> None:
        # pi's command menu opens on its best match, so Enter on "/comp" runs /compact. Only the
        # index moves: selecting through the buffer would put the name into the editor.
        state = buffer.complete_state
        if (
            state is not None
            and state.complete_index is None
            and state.completions
            and _is_command_name(state.original_document.text_before_cursor)
        ):
            state.complete_index = 0

    def on_enter(self) -> None:
        """Submit: a highlighted completion is taken first (a picked command then runs)."""
        state = self.buffer.complete_state
        highlighted = _highlighted(state)
        if highlighted is not None:
            self.buffer.apply_completion(highlighted)
            # A picked command runs at once; a picked path stays in the editor.
            if not _is_command_name(self.buffer.text):
                return
        self.submit(follow_up=False)

    def on_paste(self, data: str) -> None:
        """A bracketed paste: a large one goes into the editor as pi's ``[paste #N +L lines]``
        marker (``[paste #N C chars]`` for one long line); the full text is sent.

        As pi counts, L is the number of pieces between line breaks: 30 lines copied with
        their final line break are ``+31 lines``. Tabs become four spaces and other control
        characters are dropped, as pi's editor does with pasted text.
        """
        text = data.replace("\r\n", "\n").replace("\r", "\n").replace("\t", "    ")
        text = "".join(char for char in text if char == "\n" or ord(char) >= 32)
        # A pasted path right after a word gets a space, so that it stays a separate word.
        before = self.buffer.document.text_before_cursor
        if text[:1] in ("/", "~", ".") and before[-1:].isalnum():
            text = " " + text
        lines = text.split("\n")
        if len(lines) <= _PASTE_MAX_LINES and len(text) <= _PASTE_MAX_CHARS:
            self.buffer.insert_text(text)
            return
        self._paste_count += 1
        size = f"+{len(lines)} lines" if len(lines) > _PASTE_MAX_LINES else f"{len(text)} chars"
        marker = f"[paste #{self._paste_count} {size}]"
        self._pastes[marker] = text
        self.buffer.insert_text(marker)

    def _expand_pastes(self, text: str) -> str:
        for marker, pasted in self._pastes.items():
            text = text.replace(marker, pasted)
        return text

    def on_tab(self) -> None:
        state = self.buffer.complete_state
        highlighted = _highlighted(state)
        if state is not None and len(state.completions) == 1:
            self.buffer.apply_completion(state.completions[0])
        elif highlighted is not None and self.buffer.document == state.original_document:  # type: ignore[union-attr]
            self.buffer.apply_completion(highlighted)  # the menu's pick, not yet in the editor
        elif state is not None:
            self.buffer.complete_next()
        else:
            self.buffer.start_completion(insert_common_part=True)

    def clear_or_exit(self) -> None:
        """Clear the editor; pressed again within half a second, quit."""
        now = time.monotonic()
        if now - self._last_ctrl_c < _DOUBLE_PRESS_S:
            self.request_exit()
        else:
            self.buffer.reset()
            self._last_ctrl_c = now

    def toggle_thinking(self) -> None:
        self.options.hide_thinking = not self.options.hide_thinking
        self.redraw_transcript()

    def toggle_tools(self) -> None:
        self.options.expand_tools = not self.options.expand_tools
        self.redraw_transcript()

    def dequeue(self) -> None:
        restored = self.restore_queue()
        if restored == 0:
            self.notice("No queued messages to restore")
        else:
            plural = "s" if restored > 1 else ""
            self.notice(f"Restored {restored} queued message{plural} to editor")

    def reload_keys(self) -> None:
        """Read keybindings.json again and bind its keys (``/reload``)."""
        self.keymap = load_keymap(self._keybindings_path)
        self._key_bindings = build_key_bindings(self, self.keymap)
        self.warn_key_problems()
        self.invalidate()

    def warn_key_problems(self) -> None:
        """One warning for each problem in keybindings.json (at start-up and on ``/reload``)."""
        for problem in (*self.keymap.problems, *self.shortcut_problems):
            self.warning(problem)

    def key_label(self, action_id: str) -> str:
        """The first key bound to ``action_id``, as ``/hotkeys`` shows it (empty if none)."""
        keys = self.keymap.keys_for(action_id)
        return key_label(keys[0]) if keys else ""

    def on_escape(self) -> None:
        """Esc: abort the run (queued messages go back into the editor), a compaction, a retry
        wait or a ``!cmd``; clear a ``!`` line; twice on an empty editor, open ``/tree`` (or
        what ``doubleEscapeAction`` says: ``fork``, ``none``, or a plugin command's name).
        With completions showing, it only closes them."""
        if self.buffer.complete_state is not None:
            self.buffer.cancel_completion()
            return
        if self.busy or self._compacting or self._status is not None or self._bash is not None:
            if self.busy:
                self.restore_queue()
            self.spawn(self.session.abort)
            return
        if self.buffer.text.lstrip().startswith("!"):
            self.buffer.reset()
            return
        if not self.buffer.text.strip():
            now = time.monotonic()
            if now - self._last_escape < _DOUBLE_PRESS_S:
                self._last_escape = 0.0
                action = self._safe(lambda: self.session.setting("doubleEscapeAction"), None)
                if action in (None, "tree", "fork"):
                    self.spawn(self.commands.run, f"/{action or 'tree'}")
                elif isinstance(action, str) and action != "none":
                    # Any other value names a plugin's command.
                    plugin = self.commands.plugin_command(f"/{action}")
                    if plugin is not None:
                        self.spawn(self.run_plugin_command, *plugin)
                    else:
                        self.warning(
                            f'doubleEscapeAction "{action}" in settings.json names no command; '
                            'use "tree", "fork", "none" or the name of a plugin\'s command'
                        )
            else:
                self._last_escape = now

    def restore_queue(self) -> int:
        """Take every queued message back into the editor, above what is typed there."""
        steering, follow_up = self.session.clear_queue()
        local = [text for text, _ in self._compaction_queue]
        self._compaction_queue.clear()
        queued = [*steering, *follow_up, *local]
        self._queue = ((), ())
        if queued:
            combined = "\n\n".join(part for part in ["\n\n".join(queued), self.buffer.text] if part.strip())
            self.buffer.text = combined
            self.buffer.cursor_position = len(combined)
        self.invalidate()
        return len(queued)

    def request_exit(self) -> None:
        if not self._exiting:
            self._exiting = True
            self._exit_if_requested()

    def quit(self, *, terminal_gone: bool = False) -> None:
        """Quit as ``/quit`` does, for a reason outside the keys (SIGTERM, SIGHUP).

        ``terminal_gone``: the terminal hung up; what is left of the transcript is not written
        (prompt_toolkit's few resetting sequences still are, for a terminal that is still there
        after a ``kill -HUP``).
        """
        self._terminal_gone = self._terminal_gone or terminal_gone
        self.request_exit()

    def _quit_if_shutdown_requested(self) -> None:
        """Quit, as ``/quit`` does, once a plugin's ``ctx.shutdown()`` finds the session idle.

        Called whenever background work (a prompt and its queued messages, a command, a
        shortcut) ends: pi defers the shutdown until the agent is idle.
        """
        if self.session.shutdown_requested and not self.busy:
            self.quit()

    def _exit_if_requested(self) -> None:
        """End the application if an exit was asked for; called again as it starts (``pre_run``),
        for a request that came before it ran."""
        # A finished application (its input closed: EOFError) must not be ended twice.
        if self._exiting and self.app.is_running and not self.app.is_done:
            self.app.exit()

    async def _quit_when(self, request: QuitRequest) -> None:
        await request.wait()
        self.quit(terminal_gone=request.terminal_gone)

    # -- input ----------------------------------------------------------------------------------

    def submit(self, *, follow_up: bool) -> None:
        """Enter (``follow_up=False``) or Alt+Enter on the editor's text."""
        text = self._expand_pastes(self.buffer.text).strip()
        if not text:
            return
        if follow_up and not self.busy and not self._compacting:
            follow_up = False  # idle: Alt+Enter sends like Enter
        if not follow_up and self.commands.is_builtin(text):
            self.history.append_string(text)
            self.buffer.reset()
            self.spawn(self.commands.run, text)
            return
        if not follow_up and text.startswith("!"):
            excluded = text.startswith("!!")
            command = text[2:].strip() if excluded else text[1:].strip()
            if command:
                if self._bash is not None:
                    self.warning("A bash command is already running. Press Esc to cancel it first.")
                    return
                self.history.append_string(text)
                self.buffer.reset()
                self.spawn(self.run_user_bash, command, excluded)
                return
        self.history.append_string(text)
        self.buffer.reset()
        plugin = self.commands.plugin_command(text)
        if plugin is not None:
            self.spawn(self.run_plugin_command, *plugin)
            return
        if self._compacting:
            self._compaction_queue.append((text, "followUp" if follow_up else "steer"))
            self.notice("Queued message for after compaction")
            return
        if self.busy:
            self.spawn(self._queue_prompt, text, "followUp" if follow_up else "steer")
            return
        self.spawn(self.run_prompt, text)

    async def _queue_prompt(self, text: str, behavior: Literal["steer", "followUp"]) -> None:
        await self.session.prompt(text, streaming_behavior=behavior)

    async def run_prompt(self, text: str) -> None:
        """Send ``text`` as a new prompt and wait for the run to end."""
        self._run_active = True
        self.invalidate()
        try:
            await self.session.prompt(text)
        finally:
            self._run_active = False
            self._release_held()

    def _release_held(self) -> None:
        """The run is over: a failed reply no retry replaced is shown after all."""
        for item in self._items:
            item.held = False
        self.request_flush()

    async def run_user_bash(self, command: str, excluded: bool) -> None:
        view = BashView(command=command, exclude_from_context=excluded, spinner=self._spinner())
        item = _BashItem(view)
        self._bash = item
        self.add(item)

        def on_output(chunk: str) -> None:
            view.append(chunk)
            item.touch()
            self.invalidate()

        try:
            result = await self.session.run_user_bash(
                command, exclude_from_context=excluded, on_output=on_output
            )
        except Exception as exc:
            view.running = False
            item.done = True
            item.touch()
            self._bash = None
            self.error(f"Bash command failed: {exc}")
            return
        if result.output and not view.output:
            view.append(result.output)
        view.running = False
        view.exit_code = result.exit_code
        view.cancelled = result.cancelled
        view.full_output_path = result.full_output_path if result.truncated else None
        item.done = True
        item.touch()
        self._bash = None
        self.request_flush()

    async def _flush_compaction_queue(self, will_retry: bool) -> None:
        queued, self._compaction_queue = self._compaction_queue, []
        if not queued:
            return
        self.invalidate()
        if will_retry or self.busy:
            for text, mode in queued:
                await self.session.prompt(text, streaming_behavior=mode)
            return
        (first, _), rest = queued[0], queued[1:]
        started = anyio.Event()
        self._agent_started = started
        self.spawn(self.run_prompt, first)
        if rest:
            with anyio.move_on_after(30):
                await started.wait()
            for text, mode in rest:
                await self.session.prompt(text, streaming_behavior=mode)

    # -- dialogs ----------------------------------------------------------------------------------

    async def show_dialog(self, dialog: Dialog[T]) -> T | None:
        """Show ``dialog`` in place of the editor and return its result (``None``: cancelled)."""
        async with self._dialog_lock:
            self._dialog = dialog
            self._refocus(dialog.focus)
            try:
                return await dialog.wait()
            finally:
                dialog.close(None)
                self._dialog = None
                self._refocus(self.buffer)

    def _refocus(self, target: Any) -> None:
        # Key bindings are looked up through the layout's parent links, which prompt_toolkit
        # refreshes only when it renders; refresh them now so keys typed before the next
        # frame already reach the dialog (or the editor again).
        layout = self.app.layout
        layout.update_parents_relations()
        with suppress(ValueError):
            layout.focus(target)
        self.invalidate()

    async def select(
        self,
        title: str,
        options: Sequence[str],
        *,
        initial: int = 0,
        filterable: bool | None = None,
        message: str | None = None,
        max_visible: int = 10,
        query: str | None = None,
        details: Sequence[str] | None = None,
    ) -> int | None:
        if filterable is None:
            filterable = len(options) > 8 or bool(query)
        dialog = SelectDialog(
            title,
            options,
            initial=initial,
            filterable=filterable,
            message=message,
            max_visible=max_visible,
            keymap=self.keymap,
            details=details,
        )
        if query:
            dialog.type_filter(query)
        return await self.show_dialog(dialog)

    async def confirm(self, title: str, message: str) -> bool:
        dialog = SelectDialog(
            title, ["Yes", "No"], message=message, shortcuts={"y": 0, "n": 1}, keymap=self.keymap
        )
        return await self.show_dialog(dialog) == 0

    async def input(self, title: str, placeholder: str | None = None) -> str | None:
        return await self.show_dialog(InputDialog(title, placeholder, keymap=self.keymap))

    async def editor(self, title: str, prefill: str | None = None) -> str | None:
        return await self.show_dialog(EditorDialog(title, prefill, keymap=self.keymap))

    # -- status ------------------------------------------------------------------------------------

    def set_status(self, status: _Status | None) -> None:
        self._status = status
        self.invalidate()

    def working_status(self) -> _Status:
        message = self._working_message or "Working... (esc to interrupt)"
        return _Status(message, kind="working")

    def set_working_message(self, message: str | None) -> None:
        self._working_message = message
        if self._status is not None and self._status.kind == "working":
            self.set_status(self.working_status())

    async def _ticker(self) -> None:
        while True:
            await anyio.sleep(_SPINNER_INTERVAL)
            animating = self._status is not None or self._bash is not None
            if animating:
                self._frame += 1
                if self._bash is not None:
                    self._bash.view.spinner = self._spinner()
                    self._bash.touch()
                self.invalidate()
            # A running bash tool shows its elapsed time; refresh it once a second.
            second = int(time.monotonic())
            if second != self._elapsed_second:
                self._elapsed_second = second
                for tool in self._tools.values():
                    if tool.view.name == "bash" and tool.view.started_at is not None and tool.view.partial:
                        tool.touch()
                        self.invalidate()

    # -- session events -----------------------------------------------------------------------------

    def on_event(self, event: Any) -> None:
        """Apply one session event to the screen."""
        handler = getattr(self, f"_on_{getattr(event, 'type', '')}", None)
        if handler is not None:
            handler(event)
        self.request_flush()

    def _on_agent_start(self, event: Any) -> None:
        self._tools.clear()
        self.set_status(self.working_status())
        if self._agent_started is not None:
            self._agent_started.set()
            self._agent_started = None

    def _on_queue_update(self, event: Any) -> None:
        self._queue = (tuple(event.steering), tuple(event.follow_up))

    def _on_session_info_changed(self, event: Any) -> None:
        self.update_title()

    def _on_message_start(self, event: Any) -> None:
        message = event.message
        role = getattr(message, "role", None)
        if role == "user":
            self.add_static(render_user(_message_text(message)))
        elif role == "custom":
            if getattr(message, "display", True):
                self.add_static(self.rendering.custom_message(message))
        elif role == "assistant":
            self._assistant = _AssistantItem(message)
            self.add(self._assistant)

    def _on_message_update(self, event: Any) -> None:
        message = event.message
        if getattr(message, "role", None) != "assistant":
            return
        if self._assistant is None:
            self._assistant = _AssistantItem(message)
            self.add(self._assistant)
        self._assistant.update(message)
        for block in message.content:
            if getattr(block, "type", None) != "toolCall":
                continue
            tool = self._tools.get(block.id)
            if tool is None:
                tool = _ToolItem(
                    ToolView(tool_call_id=block.id, name=block.name, args=block.arguments), self.rendering
                )
                self._tools[block.id] = tool
                self.add(tool)
            elif tool.view.args != block.arguments:
                tool.view.args = block.arguments
                tool.touch()

    def _on_message_end(self, event: Any) -> None:
        message = event.message
        role = getattr(message, "role", None)
        if role == "toolResult":
            self._totals.add_message(message)  # a sub-agent's spending, recorded in its result
        if role != "assistant":
            return
        self._totals.add_message(message)
        item = self._assistant
        if item is None:
            item = _AssistantItem(message)
            self.add(item)
        item.update(message)
        item.done = True
        self._assistant = None
        stop = getattr(message, "stop_reason", None)
        if stop == "error" and not any(getattr(b, "type", None) == "toolCall" for b in message.content):
            item.held = True  # shown once the run ends, unless a retry replaces it
        for block in message.content:
            if getattr(block, "type", None) == "toolCall" and block.id not in self._tools:
                tool = _ToolItem(
                    ToolView(tool_call_id=block.id, name=block.name, args=block.arguments), self.rendering
                )
                self._tools[block.id] = tool
                self.add(tool)
        if stop in ("aborted", "error"):
            error = getattr(message, "error_message", None)
            if stop == "aborted":
                text = error if error and error != "Request was aborted" else "Operation aborted"
            else:
                text = error or "Error"
            for tool in self._tools.values():
                if not tool.done:
                    tool.view.set_result([{"type": "text", "text": text}], None, is_error=True, partial=False)
                    tool.done = True
                    tool.touch()
            self._tools.clear()

    def _on_tool_execution_start(self, event: Any) -> None:
        tool = self._tools.get(event.tool_call_id)
        if tool is None:
            tool = _ToolItem(
                ToolView(tool_call_id=event.tool_call_id, name=event.tool_name, args=event.args),
                self.rendering,
            )
            self._tools[event.tool_call_id] = tool
            self.add(tool)
        tool.view.started_at = time.monotonic()
        tool.touch()

    def _on_tool_execution_update(self, event: Any) -> None:
        tool = self._tools.get(event.tool_call_id)
        if tool is not None:
            result = event.partial_result
            tool.view.set_result(result.content, result.details, is_error=False, partial=True)
            tool.touch()

    def _on_tool_execution_end(self, event: Any) -> None:
        tool = self._tools.pop(event.tool_call_id, None)
        if tool is not None:
            result = event.result
            tool.view.set_result(result.content, result.details, is_error=bool(event.is_error), partial=False)
            tool.done = True
            tool.touch()

    def _on_agent_end(self, event: Any) -> None:
        if self._status is not None and self._status.kind == "working":
            self.set_status(None)
        if self._assistant is not None:
            self._assistant.done = True
            self._assistant = None
        for tool in self._tools.values():
            tool.view.partial = False
            tool.done = True
            tool.touch()
        self._tools.clear()

    def _on_compaction_start(self, event: Any) -> None:
        self._compacting = True
        reason = getattr(event, "reason", "manual")
        if reason == "manual":
            label = "Compacting context... (esc to cancel)"
        else:
            prefix = "Context overflow detected, " if reason == "overflow" else ""
            label = f"{prefix}Auto-compacting... (esc to cancel)"
        self.set_status(_Status(label, kind="compacting"))

    def _on_compaction_end(self, event: Any) -> None:
        self._compacting = False
        if self._status is not None and self._status.kind == "compacting":
            self.set_status(self.working_status() if self.busy else None)
        reason = getattr(event, "reason", "manual")
        result = getattr(event, "result", None)
        error = getattr(event, "error_message", None)
        if getattr(event, "aborted", False):
            if reason == "manual":
                self.error("Compaction cancelled")
            else:
                self.notice("Auto-compaction cancelled")
            self._compaction_error_shown = True
        elif result is not None:
            tokens = field_of(result, "tokens_before", "tokensBefore")
            self.add_static(_render_compaction(tokens if isinstance(tokens, int) else None))
        elif error:
            self._compaction_error_shown = True
            if reason == "manual":
                self.error(error)
            else:
                self.add_static(Text(error, style="red"))
        if self._tg is not None and self._compaction_queue:
            self.spawn(self._flush_compaction_queue, bool(getattr(event, "will_retry", False)))

    def _on_auto_retry_start(self, event: Any) -> None:
        # pi waits silently: the failed reply being retried is not shown.
        self._items = [item for item in self._items if not item.held]
        attempt, maximum = event.attempt, event.max_attempts

        def template(seconds: int) -> str:
            return f"Retrying ({attempt}/{maximum}) in {seconds}s... (esc to cancel)"

        deadline = time.monotonic() + event.delay_ms / 1000
        self.set_status(_Status(template(0), kind="retry", deadline=deadline, template=template))

    def _on_auto_retry_end(self, event: Any) -> None:
        if self._status is not None and self._status.kind == "retry":
            self.set_status(self.working_status() if self.busy else None)
        if not event.success:
            final = getattr(event, "final_error", None) or "Unknown error"
            self.error(f"Retry failed after {event.attempt} attempts: {final}")

    def _on_extension_error(self, event: Any) -> None:
        where = field_of(event, "extension_path", "extensionPath", "plugin") or "?"
        hook = field_of(event, "event", "hook") or "?"
        # Worded as the plugin dispatcher logs it, so the two reports collapse into one.
        self.notice(f'plugin "{where}" failed in {hook}: {field_of(event, "error", "message")}', "warning")

    _on_plugin_error = _on_extension_error

    # -- whole-session rendering --------------------------------------------------------------

    def header(self) -> RenderableType:
        title = Text(self.app_name, style="bold")
        if self.version:
            title.append(f" v{self.version}", style="dim")
        key = self.key_label
        clear, exit_key = key("app.clear"), key("app.exit")
        quits = " / ".join(part for part in (f"{clear} twice" if clear else "", exit_key) if part)
        hints = [
            (key("app.interrupt"), "interrupt"),
            (clear, "clear"),
            (quits, "exit"),
            ("/", "commands"),
            ("!", "bash"),
            (key("app.thinking.cycle"), "thinking"),
            (key("app.model.cycleForward"), "model"),
            (key("app.message.followUp"), "follow-up"),
            (key("app.tools.expand"), "expand tools"),
        ]
        line = " · ".join(f"{keys.lower()} {what}" for keys, what in hints if keys)
        return Group(title, Text(f"{line} · /hotkeys for more", style="dim"))

    def render_messages(self, messages: Sequence[Any]) -> None:
        """Add the transcript of ``messages`` (a resumed or switched-to branch)."""
        tools: dict[str, _ToolItem] = {}
        for message in messages:
            role = getattr(message, "role", None)
            if role == "user":
                self.add_static(render_user(_message_text(message)))
            elif role == "assistant":
                item = _AssistantItem(message)
                item.done = True
                self.add(item)
                for block in message.content:
                    if getattr(block, "type", None) == "toolCall":
                        tool = _ToolItem(
                            ToolView(tool_call_id=block.id, name=block.name, args=block.arguments),
                            self.rendering,
                        )
                        tools[block.id] = tool
                        self.add(tool)
            elif role == "toolResult":
                settled = tools.pop(str(message.tool_call_id), None)
                if settled is not None:
                    settled.view.set_result(
                        message.content, message.details, is_error=message.is_error, partial=False
                    )
                    settled.done = True
            elif role == "bashExecution":
                view = BashView(
                    command=message.command,
                    exclude_from_context=bool(message.exclude_from_context),
                    output=message.output,
                    running=False,
                    exit_code=message.exit_code,
                    cancelled=message.cancelled,
                    full_output_path=message.full_output_path,
                )
                bash = _BashItem(view)
                bash.done = True
                self.add(bash)
            elif role == "custom":
                if getattr(message, "display", True):
                    self.add_static(self.rendering.custom_message(message))
            elif role == "compactionSummary":
                self.add_static(_render_compaction(message.tokens_before))
            elif role == "branchSummary":
                self.add_static(_render_branch_summary(message.summary))
        for tool in tools.values():  # calls whose results were never recorded
            tool.view.partial = False
            tool.done = True

    async def run_plugin_command(self, name: str, args: str) -> None:
        """Run a plugin's command; when it moved the conversation elsewhere (``ctx.navigate_tree``,
        ``ctx.fork``, ``ctx.switch_session`` …), show the session where it now is, as the
        built-in ``/tree`` and ``/fork`` do. A command that only adds to the conversation
        leaves the screen as it is."""
        file_before = self._safe(lambda: self.session.session_file, None)
        before = list(self._safe(lambda: self.session.messages, ()))
        await self.session.run_plugin_command(name, args)
        after = list(self._safe(lambda: self.session.messages, ()))
        moved = self._safe(lambda: self.session.session_file, None) != file_before
        if moved or after[: len(before)] != before:
            self.session_switched()

    def session_switched(self, status: str | None = None) -> None:
        """Show the session the runtime has switched to (after /resume, /fork, /tree …)."""
        self._totals = UsageTotals.of(self.session.messages)
        self._queue = ((), ())
        name = self._safe(lambda: self.session.session_name, None)
        title = f" {name} " if name else ""
        self.add_static(Text(f"──{title}" + "─" * max(self.width - 4 - len(title), 0), style="dim"))
        self.render_messages(self.session.messages)
        if status:
            self.notice(status)
        self.update_title()

    def update_title(self) -> None:
        name = self._safe(lambda: self.session.session_name, None)
        base = os.path.basename(self.session.cwd.rstrip(os.sep)) or self.session.cwd
        self.set_title(f"{self.app_name} - {name} - {base}" if name else f"{self.app_name} - {base}")

    def set_title(self, title: str) -> None:
        with suppress(Exception):
            self.app.output.set_title(title)

    def copy_to_clipboard(self, text: str) -> None:
        """Put ``text`` on the clipboard with OSC 52, which terminals (and tmux, ssh) relay."""
        encoded = base64.b64encode(text.encode("utf-8")).decode("ascii")
        self.write_control(f"\x1b]52;c;{encoded}\x07")

    # -- running ---------------------------------------------------------------------------------

    async def run(
        self,
        initial_messages: Sequence[str] = (),
        *,
        open_resume_picker: bool = False,
        quit_request: QuitRequest | None = None,
    ) -> None:
        """Run until the user quits; ``open_resume_picker`` starts with ``/resume`` (``-r``).

        ``quit_request`` ends it too, as ``/quit`` does (the command line's signal handling).
        The end of the terminal's input (it hung up) ends it the same way, without an error.
        """

        async def listener(event: Any) -> None:
            self.on_event(event)

        unsubscribe = self.session.subscribe(listener)
        set_ui = getattr(self.session, "set_ui", None)
        if set_ui is not None:
            set_ui(self.ui)
        if self.verbose or not self._safe(lambda: self.session.setting("quietStartup"), None):
            self.add_static(self.header())
        self.warn_key_problems()
        if self.session.model is None:
            # Say how to get a model now, not after a first prompt that could only fail.
            from pi_host.runtime._setup_help import no_model_message

            self.warning(no_model_message())
        if self._show_history and self.session.messages:
            self.render_messages(self.session.messages)
        self.update_title()
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                tg.start_soon(self._flusher)
                tg.start_soon(self._ticker)
                if open_resume_picker:
                    self.spawn(self.commands.run, "/resume")
                if initial_messages:
                    tg.start_soon(self._send_initial, list(initial_messages))
                if quit_request is not None:
                    tg.start_soon(self._quit_when, quit_request)
                with set_app(self.app), _terminal_safe_logging(self), redirect_prints(self._printed):
                    try:
                        await self.app.run_async(
                            pre_run=self._exit_if_requested, set_exception_handler=False, handle_sigint=False
                        )
                    except EOFError:  # the terminal hung up; SIGHUP is on its way or here
                        self._terminal_gone = True
                # Quitting stops what runs as Escape does, before the tasks waiting on it are
                # cancelled: cancelled first, a streaming reply would end without its
                # message_end, and neither be saved (as "aborted") nor shown.
                await self._abort_running()
                tg.cancel_scope.cancel()
        finally:
            self._tg = None
            await self._abort_running()
            for item in self._items:
                item.done = True
            left = self._take_committable() + self._printed.take(everything=True)
            if not self._terminal_gone:
                self._write(left)
            unsubscribe()
            if set_ui is not None:
                set_ui(None)

    async def _abort_running(self) -> None:
        if self.busy or self._compacting or self._bash is not None:
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                await self.session.abort()

    async def _send_initial(self, messages: list[str]) -> None:
        for text in messages:
            try:
                await self.run_prompt(text)
            except Exception as exc:
                self.error(str(exc))


def _highlighted(state: CompletionState | None) -> Completion | None:
    """The completion the menu highlights (None when the list emptied under its index)."""
    if state is None or state.complete_index is None or state.complete_index >= len(state.completions):
        return None
    return state.completions[state.complete_index]


def _spaced(parts: Sequence[RenderableType]) -> RenderableType | None:
    """``parts`` one under another with a blank line between them; None for no parts."""
    if not parts:
        return None
    spaced: list[RenderableType] = []
    for part in parts:
        if spaced:
            spaced.append(Text(""))
        spaced.append(part)
    return Group(*spaced)


def _is_command_name(text: str) -> bool:
    return text.startswith("/") and " " not in text.strip() and "\n" not in text


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split("\n"))
    return text if len(text) <= width else text[: max(width - 3, 0)] + "..."


def _render_compaction(tokens_before: int | None) -> RenderableType:
    label = Text("[compaction]", style="bold magenta")
    if tokens_before is None:
        return Group(label, Text("Context compacted", style="magenta"))
    return Group(label, Text(f"Compacted from {tokens_before:,} tokens", style="magenta"))


def _render_branch_summary(summary: str) -> RenderableType:
    return Group(Text("[branch summary]", style="bold yellow"), render_markdown(summary, style="yellow"))


def _render_custom(message: Any) -> RenderableType:
    label = Text(f"[{message.custom_type}]", style="bold magenta")
    return Group(label, render_markdown(_message_text(message)))


def maybe_await(value: Any) -> Awaitable[Any]:
    """Await ``value`` if it is awaitable (session methods may be sync or async)."""

    async def identity() -> Any:
        return value

    return value if inspect.isawaitable(value) else identity()
