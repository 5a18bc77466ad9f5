"""How the interactive screen draws a ``bash`` call: ``$ command``, then the tail of its output.

Imported on the first call drawn (rich is not needed by a one-shot run).
"""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from pi_host.hookspecs import ToolCallView

__all__ = ["render_bash_call", "render_bash_result"]

PREVIEW_LINES = 5  # the tail pi shows of a collapsed command output
EXPAND_HINT = "ctrl+o to expand"


def render_bash_call(view: ToolCallView) -> RenderableType:
    args = view.args if isinstance(view.args, dict) else {}
    command = args.get("command")
    header = Text(f"$ {command if isinstance(command, str) and command else '...'}", style="bold")
    timeout = args.get("timeout")
    if timeout:
        header.append(f" (timeout {timeout}s)", style="dim")
    return header


def render_bash_result(view: ToolCallView) -> RenderableType | None:
    parts: list[RenderableType] = []
    output = view.result_text
    if output and output.strip():
        lines = output.strip("\n").split("\n")
        hidden = 0 if view.expanded else max(len(lines) - PREVIEW_LINES, 0)
        if hidden:
            parts.append(Text(f"... ({hidden} earlier lines, {EXPAND_HINT})", style="dim"))
        parts += [Text(line.replace("\t", "   "), style="grey62") for line in lines[hidden:]]
    note = _truncation_note(view.details)
    if note is not None:
        parts.append(note)
    if view.elapsed is not None:
        parts.append(Text(f"{'Elapsed' if view.partial else 'Took'} {view.elapsed:.1f}s", style="dim"))
    return Group(*parts) if parts else None


def _truncation_note(details: Any) -> Text | None:
    if not isinstance(details, dict):
        return None
    notes: list[str] = []
    if details.get("fullOutputPath"):
        notes.append(f"Full output: {details['fullOutputPath']}")
    truncation = details.get("truncation")
    if isinstance(truncation, dict) and truncation.get("truncated"):
        shown, total = truncation.get("outputLines"), truncation.get("totalLines")
        if truncation.get("truncatedBy") == "lines" and shown is not None:
            notes.append(f"Truncated: showing {shown} of {total} lines")
        else:
            notes.append("Truncated")
    return Text(f"[{'. '.join(notes)}]", style="yellow") if notes else None
