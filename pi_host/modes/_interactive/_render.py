"""Turning messages, tool executions and notices into rich renderables and ANSI lines.

Everything here is pure: given data and a width, produce text. The application decides what is
live (redrawn under the transcript) and what is committed to the terminal's scrollback.
"""

from __future__ import annotations

import difflib
import io
import json
import os
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.markdown import Heading, Markdown, MarkdownElement, TableElement
from rich.padding import Padding
from rich.panel import Panel
from rich.segment import Segment
from rich.style import Style
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from pi_host.hookspecs import ToolCallView, ToolRenderer

__all__ = [
    "DEFAULT_TOOL_RENDERER",
    "BashView",
    "RenderOptions",
    "ToolView",
    "ansi_lines",
    "field_of",
    "markdown_tail",
    "render_bash",
    "render_diff",
    "render_markdown",
    "render_notice",
    "render_thinking",
    "render_tool",
    "render_user",
    "shorten_path",
    "stable_markdown_prefix",
    "tool_result_text",
]

# Preview sizes when tool output is collapsed, as pi shows them.
_USER_BASH_PREVIEW_LINES = 20
_READ_PREVIEW_LINES = 10
_LIST_PREVIEW_LINES = 15
_GENERIC_PREVIEW_LINES = 10

EXPAND_HINT = "ctrl+o to expand"


@dataclass
class RenderOptions:
    """Display switches the user toggles at run time."""

    expand_tools: bool = False
    hide_thinking: bool = False
    hidden_thinking_label: str = "Thinking..."
    cwd: str = field(default_factory=os.getcwd)
    live_max_lines: int = 200  # a streaming block is redrawn from its last lines only


# -- ANSI output ----------------------------------------------------------------------------


def _make_console(width: int) -> Console:
    return Console(
        file=io.StringIO(),
        width=max(width, 10),
        force_terminal=True,
        highlight=False,
        emoji=False,
        markup=False,
        soft_wrap=False,
        legacy_windows=False,
    )


def _trim_line(line: list[Segment]) -> list[Segment]:
    # Rich pads lines to the full width; trailing unstyled blanks make copied text ugly and
    # wrap badly when the terminal narrows, so drop them (styled blanks, e.g. a background,
    # are part of the picture and stay).
    while line:
        segment = line[-1]
        style = segment.style
        visible_blank = style is not None and (style.bgcolor is not None or style.reverse or style.underline)
        if segment.control or visible_blank or segment.text.strip(" "):
            stripped = segment.text.rstrip(" ")
            if not visible_blank and stripped != segment.text and not segment.control:
                line[-1] = Segment(stripped, style)
            break
        line.pop()
    return line


def ansi_lines(renderable: RenderableType, width: int) -> list[str]:
    """Render ``renderable`` at ``width`` columns into lines of ANSI-styled text."""
    console = _make_console(width)
    options = console.options.update(width=max(width, 10))
    out: list[str] = []
    for line in console.render_lines(renderable, options, pad=False, new_lines=False):
        trimmed = _trim_line(list(line))
        buffer = io.StringIO()
        for segment in trimmed:
            if segment.control:
                continue
            if segment.style:
                buffer.write(segment.style.render(segment.text, color_system=console._color_system))
            else:
                buffer.write(segment.text)
        out.append(buffer.getvalue())
    while out and not out[-1].strip():
        out.pop()
    start = 0
    while start < len(out) and not out[start].strip():
        start += 1  # rich opens lists with a blank line; blocks are spaced by the caller
    return out[start:]


# -- markdown -------------------------------------------------------------------------------


class _LeftHeading(Heading):
    # Centred h1 headings look lost in a chat transcript; pi aligns every heading left.
    LEVEL_ALIGN: ClassVar[dict[str, Any]] = dict.fromkeys(("h1", "h2", "h3", "h4", "h5", "h6"), "left")


class _BorderedTable(TableElement):
    # rich draws markdown tables with rules only under the header; pi boxes every cell.
    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        table = Table(box=box.SQUARE, show_lines=True, style="markdown.table.border")
        if self.header is not None and self.header.row is not None:
            for column in self.header.row.cells:
                heading = column.content.copy()
                heading.stylize("markdown.table.header")
                table.add_column(heading)
        if self.body is not None:
            for row in self.body.rows:
                table.add_row(*(cell.content for cell in row.cells))
        yield table


_TASK_BOXES = {"[ ] ": "☐ ", "[x] ": "☑ ", "[X] ": "☑ "}


class _ChatMarkdown(Markdown):
    """rich's Markdown with pi's habits: a single line break stays a line break (models write
    file lists, steps and commit messages that way), tables are boxed, and task list items show
    check boxes."""

    elements: ClassVar[dict[str, type[MarkdownElement]]] = {
        **Markdown.elements,
        "heading_open": _LeftHeading,
        "table_open": _BorderedTable,
    }

    def __init__(self, markup: str, **kwargs: Any) -> None:
        super().__init__(markup, **kwargs)
        in_item = 0
        for token in self.parsed:
            if token.type == "list_item_open":
                in_item += 1
            elif token.type == "list_item_close":
                in_item -= 1
            if token.type != "inline" or not token.children:
                continue
            for child in token.children:
                if child.type == "softbreak":
                    child.type = "hardbreak"
            first = token.children[0]
            if in_item and first.type == "text" and first.content[:4] in _TASK_BOXES:
                first.content = _TASK_BOXES[first.content[:4]] + first.content[4:]


def render_markdown(text: str, *, style: str | Style = "none") -> RenderableType:
    """Markdown as the transcript shows it (code blocks highlighted, headings left-aligned)."""
    return _ChatMarkdown(text, code_theme="monokai", style=style, hyperlinks=False)


def render_thinking(text: str, options: RenderOptions) -> RenderableType:
    """A thinking block: dim italic markdown, or a one-line label when thinking is hidden."""
    if options.hide_thinking:
        return Text(options.hidden_thinking_label, style="italic dim")
    return render_markdown(text, style="italic dim")


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def stable_markdown_prefix(text: str) -> int:
    """The length of the longest prefix of ``text`` made of complete markdown blocks.

    Streaming text is committed to the scrollback block by block; a block is complete once a
    blank line outside a code fence ends it and an unindented line starts the next one (an
    indented line may continue a list item, so the split waits).
    """
    fence: str | None = None
    blank_end = 0  # where the latest blank line outside a fence ends
    previous_blank = False
    best = 0
    offset = 0
    for line in text.split("\n")[:-1]:  # the last piece may still be growing
        end = offset + len(line) + 1
        offset = end
        match = _FENCE.match(line)
        if fence is not None:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = None
            previous_blank = False
            continue
        blank = not line.strip()
        if not blank and previous_blank and blank_end and not line[:1].isspace():
            best = blank_end
        if match:
            fence = match.group(1)
        elif blank:
            blank_end = end
        previous_blank = blank
    return best


def markdown_tail(text: str, max_lines: int) -> str:
    """The last ``max_lines`` lines of ``text``, still valid markdown (a code fence that is open
    where the cut falls is reopened), so a long reply can be redrawn cheaply while it streams."""
    lines = text.split("\n")
    if len(lines) <= max_lines:
        return text
    cut = len(lines) - max_lines
    fence: str | None = None
    opener = ""
    for line in lines[:cut]:
        match = _FENCE.match(line)
        if match is None:
            continue
        if fence is None:
            fence, opener = match.group(1), line
        elif match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
            fence = None
    tail = lines[cut:]
    return "\n".join([opener, *tail] if fence is not None else tail)


# -- simple blocks --------------------------------------------------------------------------


def render_user(text: str) -> RenderableType:
    """A user message: its text on a shaded band, like pi's user message box."""
    return Padding(Text(text), (0, 1), style="on grey19", expand=True)


_NOTICE_STYLES = {"info": "dim", "warning": "yellow", "error": "red", "success": "green"}


def render_notice(message: str, level: str = "info") -> RenderableType:
    """A status line (``info``), ``Warning: …`` or ``Error: …``."""
    if level == "warning":
        message = f"Warning: {message}"
    elif level == "error":
        message = f"Error: {message}"
    return Text(message, style=_NOTICE_STYLES.get(level, "dim"))


def shorten_path(path: str) -> str:
    """``~`` for the home directory, as pi shows paths."""
    home = os.path.expanduser("~")
    if home and home != "/" and (path == home or path.startswith(home + os.sep)):
        return "~" + path[len(home) :]
    return path


# -- tools ----------------------------------------------------------------------------------


@dataclass
class ToolView:
    """The display state of one tool call, from its first delta to its result."""

    tool_call_id: str
    name: str
    args: Any = None
    started_at: float | None = None
    ended_at: float | None = None
    result_text: str | None = None
    details: Any = None
    is_error: bool = False
    partial: bool = True

    def public(self, expanded: bool) -> ToolCallView:
        """What a :class:`ToolRenderer` is given."""
        elapsed = None
        if self.started_at is not None:
            end = self.ended_at if self.ended_at is not None else time.monotonic()
            elapsed = end - self.started_at
        return ToolCallView(
            tool_call_id=self.tool_call_id,
            name=self.name,
            args=self.args,
            result_text=self.result_text,
            details=self.details,
            is_error=self.is_error,
            partial=self.partial,
            elapsed=elapsed,
            expanded=expanded,
        )

    def set_result(self, content: Iterable[Any], details: Any, *, is_error: bool, partial: bool) -> None:
        self.result_text = tool_result_text(content)
        self.details = details
        self.is_error = is_error
        self.partial = partial
        if not partial and self.ended_at is None:
            self.ended_at = time.monotonic()


def tool_result_text(content: Iterable[Any]) -> str:
    """The text of a tool result's content blocks; images become a placeholder line."""
    parts: list[str] = []
    for block in content:
        kind = field_of(block, "type")
        if kind == "text":
            parts.append(str(field_of(block, "text") or ""))
        elif kind == "image":
            parts.append(f"[image: {field_of(block, 'mime_type', 'mimeType') or 'image'}]")
    return "\n".join(parts)


def field_of(obj: Any, *names: str) -> Any:
    """The first of ``names`` that ``obj`` has, as a dict key or an attribute, else ``None``.

    Messages and tool arguments reach the screen as models or as JSON dicts; callers name both
    spellings (``"mime_type", "mimeType"``).
    """
    for name in names:
        if isinstance(obj, dict):
            if name in obj:
                return obj[name]
        elif hasattr(obj, name):
            return getattr(obj, name)
    return None


def _arg(args: Any, *names: str) -> Any:
    return field_of(args, *names) if isinstance(args, dict) else None


def _str_arg(args: Any, *names: str) -> str | None:
    value = _arg(args, *names)
    return value if isinstance(value, str) else None


def _preview(
    lines: Sequence[str], limit: int, *, expanded: bool, tail: bool, style: str = "grey62"
) -> list[Text]:
    if expanded or len(lines) <= limit:
        shown, hidden = list(lines), 0
    elif tail:
        shown, hidden = list(lines[-limit:]), len(lines) - limit
    else:
        shown, hidden = list(lines[:limit]), len(lines) - limit
    out = [Text(line.replace("\t", "   "), style=style) for line in shown]
    if hidden:
        where = "earlier" if tail else "more"
        hint = Text(f"... ({hidden} {where} lines, {EXPAND_HINT})", style="dim")
        out = [hint, *out] if tail else [*out, hint]
    return out


def _trim_blank_tail(lines: list[str]) -> list[str]:
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def _default_call(view: ToolCallView) -> RenderableType:
    """The default ``render_call``: the tool's name and what it works on."""
    args = view.args
    name = view.name
    title = Style(bold=True)
    accent = "cyan"
    header = Text()
    if name in ("read", "edit", "write"):
        path = _str_arg(args, "path", "file_path")
        header.append(name, style=title)
        header.append(" ")
        header.append(shorten_path(path) if path else "...", style=accent)
        if name == "read":
            offset, limit = _arg(args, "offset"), _arg(args, "limit")
            if offset is not None or limit is not None:
                start = offset if isinstance(offset, int) else 1
                end = f"-{start + limit - 1}" if isinstance(limit, int) else ""
                header.append(f":{start}{end}", style="yellow")
    elif name in ("grep", "find"):
        pattern = _str_arg(args, "pattern") or ""
        path = _str_arg(args, "path") or "."
        header.append(name, style=title)
        header.append(" ")
        header.append(f"/{pattern}/" if name == "grep" else pattern, style=accent)
        header.append(f" in {shorten_path(path)}", style="grey62")
        glob = _str_arg(args, "glob")
        if glob:
            header.append(f" ({glob})", style="grey62")
        limit = _arg(args, "limit")
        if limit is not None:
            header.append(f" limit {limit}" if name == "grep" else f" (limit {limit})", style="grey62")
    elif name == "ls":
        path = _str_arg(args, "path") or "."
        header.append("ls", style=title)
        header.append(" ")
        header.append(shorten_path(path), style=accent)
        limit = _arg(args, "limit")
        if limit is not None:
            header.append(f" (limit {limit})", style="grey62")
    else:
        header.append(name, style=title)
    return header


def render_diff(diff: str) -> RenderableType:
    """pi's edit diff (``+12 new``, ``-12 old``, `` 12 context``): coloured, with the changed
    words of a one-line replacement shown in reverse video."""
    lines = diff.split("\n")
    out: list[Text] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("-"):
            removed: list[str] = []
            while index < len(lines) and lines[index].startswith("-"):
                removed.append(lines[index])
                index += 1
            added: list[str] = []
            while index < len(lines) and lines[index].startswith("+"):
                added.append(lines[index])
                index += 1
            if len(removed) == 1 and len(added) == 1:
                old, new = _word_diff(removed[0], added[0])
                out += [old, new]
            else:
                out += [Text(text, style="red") for text in removed]
                out += [Text(text, style="green") for text in added]
            continue
        if line.startswith("+"):
            out.append(Text(line, style="green"))
        else:
            out.append(Text(line, style="dim"))
        index += 1
    return Group(*out)


def _word_diff(old: str, new: str) -> tuple[Text, Text]:
    old_words = re.findall(r"\s+|\w+|[^\w\s]", old[1:])
    new_words = re.findall(r"\s+|\w+|[^\w\s]", new[1:])
    old_text, new_text = Text("-", style="red"), Text("+", style="green")
    matcher = difflib.SequenceMatcher(a=old_words, b=new_words, autojunk=False)
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        a_part, b_part = "".join(old_words[a0:a1]), "".join(new_words[b0:b1])
        if tag == "equal":
            old_text.append(a_part, style="red")
            new_text.append(b_part, style="green")
        else:
            old_text.append(a_part, style="red reverse")
            new_text.append(b_part, style="green reverse")
    return old_text, new_text


def _highlighted(path: str | None, lines: list[str]) -> RenderableType | None:
    if not path or not lines:
        return None
    try:
        lexer = Syntax.guess_lexer(path, code="")
    except Exception:
        return None
    if lexer in ("default", "text"):
        return None
    return Syntax("\n".join(lines), lexer, theme="monokai", background_color="default", word_wrap=True)


def _default_result(view: ToolCallView) -> RenderableType | None:
    """The default ``render_result``: a preview of the output (the diff of an edit, the file of
    a read or write, the first lines of a listing, the arguments and output of other tools)."""
    parts: list[RenderableType] = []
    expanded = view.expanded
    name = view.name
    output = view.result_text
    if name == "edit" and not view.is_error:
        diff = field_of(view.details, "diff")
        if isinstance(diff, str) and diff:
            parts.append(render_diff(diff))
    elif name == "write" and not view.is_error:
        content = _str_arg(view.args, "content")
        if content:
            lines = _trim_blank_tail(content.split("\n"))
            parts += _content_preview(_str_arg(view.args, "path"), lines, expanded)
    elif name == "read" and not view.is_error and output is not None:
        lines = _trim_blank_tail(output.split("\n"))
        parts += _content_preview(_str_arg(view.args, "path", "file_path"), lines, expanded)
    elif name in ("grep", "find", "ls") and not view.is_error and output:
        lines = output.strip().split("\n")
        parts += _preview(lines, _LIST_PREVIEW_LINES, expanded=expanded, tail=False)
    elif not view.is_error:
        if view.args:
            arg_lines = json.dumps(view.args, indent=2, ensure_ascii=False).split("\n")
            parts += _preview(arg_lines, _GENERIC_PREVIEW_LINES, expanded=expanded, tail=False, style="dim")
        if output and output.strip():
            lines = output.strip("\n").split("\n")
            parts += _preview(lines, _GENERIC_PREVIEW_LINES, expanded=expanded, tail=False)
    if view.is_error and output:
        parts.append(Text(output.strip(), style="red"))
    return Group(*parts) if parts else None


DEFAULT_TOOL_RENDERER = ToolRenderer(tool="*", render_call=_default_call, render_result=_default_result)
"""How a tool without a renderer of its own is drawn (an ordinary :class:`ToolRenderer`)."""


def render_tool(
    view: ToolView,
    options: RenderOptions,
    renderer: ToolRenderer | None = None,
    on_error: Callable[[str, Exception], None] | None = None,
) -> RenderableType:
    """A tool call and its result as a compact panel: yellow while pending, then green or red.

    :param renderer: the tool's own renderer (a plugin's); its missing parts, and parts that
        raise, are drawn by :data:`DEFAULT_TOOL_RENDERER`.
    :param on_error: told ``(what, exception)`` when a renderer raises.
    """
    public = view.public(options.expand_tools)
    parts: list[RenderableType] = []
    for attribute in ("render_call", "render_result"):
        function = getattr(renderer, attribute, None) if renderer is not None else None
        default = getattr(DEFAULT_TOOL_RENDERER, attribute)
        try:
            part = (function or default)(public)
        except Exception as exc:
            if on_error is not None:
                on_error(f"{attribute} of the {view.name!r} tool renderer", exc)
            part = default(public)
        if part is not None:
            parts.append(part)
    if view.partial and view.result_text is None:
        border = "yellow"
    else:
        border = "red" if view.is_error else ("yellow" if view.partial else "green")
    return Panel(Group(*parts), box=box.ROUNDED, border_style=border, padding=(0, 1), expand=True)


def _content_preview(path: str | None, lines: list[str], expanded: bool) -> list[RenderableType]:
    shown = lines if expanded else lines[:_READ_PREVIEW_LINES]
    hidden = len(lines) - len(shown)
    out: list[RenderableType] = []
    highlighted = _highlighted(path, shown)
    if highlighted is not None:
        out.append(highlighted)
    else:
        out += [Text(line.replace("\t", "   "), style="grey62") for line in shown]
    if hidden:
        out.append(Text(f"... ({hidden} more lines, {EXPAND_HINT})", style="dim"))
    return out


# -- user bash (!cmd) -----------------------------------------------------------------------


@dataclass
class BashView:
    """The display state of a user ``!cmd`` while it runs and after."""

    command: str
    exclude_from_context: bool = False
    output: str = ""
    running: bool = True
    exit_code: int | None = None
    cancelled: bool = False
    full_output_path: str | None = None
    spinner: str = ""

    def append(self, chunk: str) -> None:
        self.output += chunk.replace("\r\n", "\n").replace("\r", "\n")


_ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


def render_bash(view: BashView, options: RenderOptions) -> RenderableType:
    """A user shell command: ``$ cmd``, the tail of its output and its exit status."""
    colour = "grey50" if view.exclude_from_context else "magenta"
    parts: list[RenderableType] = [Text(f"$ {view.command}", style=f"bold {colour}")]
    clean = _ANSI_ESCAPE.sub("", view.output).rstrip("\n")
    if clean:
        lines = clean.split("\n")
        parts += _preview(lines, _USER_BASH_PREVIEW_LINES, expanded=options.expand_tools, tail=True)
    if view.running:
        parts.append(Text(f"{view.spinner} Running... (esc to cancel)".strip(), style="dim"))
    elif view.cancelled:
        parts.append(Text("(cancelled)", style="yellow"))
    elif view.exit_code not in (0, None):
        parts.append(Text(f"(exit {view.exit_code})", style="red"))
    if view.full_output_path:
        parts.append(Text(f"Output truncated. Full output: {view.full_output_path}", style="yellow"))
    return Panel(Group(*parts), box=box.ROUNDED, border_style=colour, padding=(0, 1), expand=True)
