"""Export of a session file (``pi-host --export in.jsonl [out.html]``, ``/export [file]``).

HTML: one self-contained page: the active branch as a conversation (user, assistant, thinking,
tool calls and results), then the whole entry tree with labels. No scripts, no external assets.
As pi's, the page goes into the working directory by default, named
``pi-host-session-<session file name>.html``.

JSONL (``/export file.jsonl``): the current branch alone, as a session file of its own.
"""

from __future__ import annotations

import html
import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pi_host.messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from pi_host.session._jsjson import js_dumps

if TYPE_CHECKING:
    from pi_host.session import SessionManager

__all__ = ["default_export_name", "export_html", "export_jsonl", "render_session_html", "run_export"]

_STYLE = """
body{font:15px/1.5 system-ui,sans-serif;max-width:960px;margin:2em auto;padding:0 1em;
color:#1d1d1f;background:#fafafa}
h1{font-size:1.3em} .meta{color:#666;font-size:.85em}
.msg{border-radius:8px;padding:.6em 1em;margin:.8em 0;background:#fff;border:1px solid #ddd}
.user{border-left:4px solid #2d6cdf} .assistant{border-left:4px solid #3a9a5b}
.tool{border-left:4px solid #b07d18;font-size:.9em} .error{border-left:4px solid #c0392b}
.summary{border-left:4px solid #8e44ad}
.role{font-weight:600;font-size:.8em;color:#555;text-transform:uppercase}
.thinking{color:#777;font-style:italic;white-space:pre-wrap} pre{white-space:pre-wrap;word-break:break-word;
background:#f3f3f3;padding:.5em;border-radius:6px;margin:.3em 0} .text{white-space:pre-wrap}
ul.tree{list-style:none;padding-left:1.2em;font-size:.85em} .leaf{font-weight:700} .label{color:#8e44ad}
"""


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


def _blocks(content: str | Iterable[Any]) -> str:
    if isinstance(content, str):
        return f'<div class="text">{_esc(content)}</div>'
    parts = []
    for block in content:
        if isinstance(block, TextContent):
            parts.append(f'<div class="text">{_esc(block.text)}</div>')
        elif isinstance(block, ThinkingContent):
            parts.append(f'<div class="thinking">{_esc(block.thinking)}</div>')
        elif isinstance(block, ToolCall):
            args = json.dumps(block.arguments, indent=2, ensure_ascii=False)
            parts.append(f"<div>&#9656; <b>{_esc(block.name)}</b><pre>{_esc(args)}</pre></div>")
        elif isinstance(block, ImageContent):
            parts.append(
                f'<img alt="image" style="max-width:100%" '
                f'src="data:{_esc(block.mime_type)};base64,{block.data}">'
            )
    return "".join(parts)


def _card(css: str, role: str, body: str) -> str:
    return f'<div class="msg {css}"><div class="role">{role}</div>{body}</div>'


def _message_html(message: AgentMessage) -> str:
    if isinstance(message, UserMessage):
        return _card("user", "user", _blocks(message.content))
    if isinstance(message, AssistantMessage):
        css = "error" if message.stop_reason in ("error", "aborted") else "assistant"
        error = f"<pre>{_esc(message.error_message)}</pre>" if message.error_message else ""
        role = f"assistant &middot; {_esc(message.provider)}/{_esc(message.model)}"
        return _card(css, role, _blocks(message.content) + error)
    if isinstance(message, ToolResultMessage):
        text = "\n".join(b.text for b in message.content if isinstance(b, TextContent))
        css = "error" if message.is_error else "tool"
        return _card(css, f"{_esc(message.tool_name)} result", f"<pre>{_esc(text)}</pre>")
    if isinstance(message, BashExecutionMessage):
        return _card(
            "tool", f"!{_esc(message.command)}", f"<pre>{_esc(message.output or '(no output)')}</pre>"
        )
    if isinstance(message, CustomMessage):
        return _card("summary", _esc(message.custom_type), _blocks(message.content))
    if isinstance(message, BranchSummaryMessage | CompactionSummaryMessage):
        kind = "branch summary" if isinstance(message, BranchSummaryMessage) else "compaction summary"
        return _card("summary", kind, f'<div class="text">{_esc(message.summary)}</div>')
    return ""


def _entry_title(entry: Any) -> str:
    message = getattr(entry, "message", None)
    if message is not None:
        text = ""
        content = getattr(message, "content", "")
        if isinstance(content, str):
            text = content
        else:
            text = " ".join(getattr(b, "text", "") or getattr(b, "name", "") for b in content)
        return f"{getattr(message, 'role', 'message')}: {text[:80]}"
    return str(entry.type)


def render_session_html(path: str | os.PathLike[str]) -> str:
    """Render the session file at ``path`` as one HTML page."""
    from pi_host.session import SessionManager

    manager = SessionManager.open(path)
    context = manager.build_session_context()
    leaf = manager.leaf_id
    tree_items: list[str] = []

    def walk(nodes: Iterable[Any]) -> None:
        tree_items.append('<ul class="tree">')
        for node in nodes:
            css = ' class="leaf"' if node.entry.id == leaf else ""
            label = f' <span class="label">[{_esc(node.label)}]</span>' if node.label else ""
            tree_items.append(f"<li{css}>{_esc(node.entry.id)} {_esc(_entry_title(node.entry))}{label}")
            if node.children:
                walk(node.children)
            tree_items.append("</li>")
        tree_items.append("</ul>")

    walk(manager.get_tree())
    header = manager.header
    name = manager.session_name or header.id
    body = "".join(_message_html(message) for message in context.messages)
    return (
        '<!doctype html><html><head><meta charset="utf-8">'
        f"<title>{_esc(name)}</title><style>{_STYLE}</style></head><body>"
        f'<h1>{_esc(name)}</h1><div class="meta">{_esc(header.cwd)} &middot; {_esc(header.timestamp)}</div>'
        f"{body}<h2>Session tree</h2>{''.join(tree_items)}</body></html>"
    )


def default_export_name(session_file: str | os.PathLike[str]) -> str:
    """pi's default export file name, with pi-host's name for pi's: ``pi-host-session-<stem>.html``."""
    return f"pi-host-session-{Path(session_file).stem}.html"


def export_html(session_file: str | os.PathLike[str], output: str | os.PathLike[str] | None = None) -> Path:
    """Write the HTML export to ``output``, by default :func:`default_export_name` in the
    working directory (as pi does); returns the path written, as given."""
    target = Path(output) if output else Path(default_export_name(session_file))
    target.write_text(render_session_html(session_file), encoding="utf-8")
    return target


def export_jsonl(manager: SessionManager, output: str | os.PathLike[str]) -> Path:
    """Write the current branch of ``manager``'s session to ``output`` as a session file of
    its own: a new header, then the branch's entries each chained to the one before (pi's
    ``/export file.jsonl``). Missing folders are made; returns the absolute path written."""
    from pi_host.session import SessionHeader

    target = Path(output).resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    source = manager.header
    header = SessionHeader(id=source.id, cwd=source.cwd)
    lines = [header.to_json()]
    previous: str | None = None
    for entry in manager.get_branch():
        data = entry.to_json_dict()
        data["parentId"] = previous
        lines.append(js_dumps(data))
        previous = entry.id
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target


def run_export(session_file: str, output: str | None) -> int:
    """``--export``: write the page and print its path."""
    from pi_host.session import SessionFileError, check_session_file

    if not os.path.exists(session_file):
        print(f"Error: Session file not found: {session_file}", file=sys.stderr)
        return 1
    try:
        # Exporting only reads: a file that is not a session is refused before it is opened
        # (opening would start a new session in an empty one).
        checked = check_session_file(session_file)
        if checked is not None and checked.stat().st_size <= 64 * 1024 and not checked.read_bytes().strip():
            raise SessionFileError(checked, "is empty: there is no session to export")
        target = export_html(session_file, output)
    except SessionFileError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"Error: could not export {session_file}: {exc}", file=sys.stderr)
        return 1
    print(f"Exported to: {target}")
    return 0
