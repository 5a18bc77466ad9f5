"""The footer under the editor: where you are, what it cost, how full the context is, which model.

Line 1: the working directory (``~`` for home), the git branch and the session name.
Line 2: ``↑input ↓output Rcache-read Wcache-write $cost context%/window (auto)`` on the left and
``model • thinking level`` on the right, as pi's footer shows them.
Line 3 (only when plugins set any): plugin statuses, sorted by key.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.cells import cell_len

__all__ = ["GitBranch", "UsageTotals", "footer_lines", "format_tokens"]

Fragments = list[tuple[str, str]]


def format_tokens(count: int) -> str:
    """``999``, ``1.2k``, ``45k``, ``1.5M``, ``12M``: pi's compact token counts."""
    if count < 1000:
        return str(count)
    if count < 10_000:
        return f"{count / 1000:.1f}k"
    if count < 1_000_000:
        return f"{round(count / 1000)}k"
    if count < 10_000_000:
        return f"{count / 1_000_000:.1f}M"
    return f"{round(count / 1_000_000)}M"


@dataclass
class UsageTotals:
    """Token and cost totals over the session: its replies, and what tools spent for it (sub-agents)."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: float = 0.0

    def add_message(self, message: Any) -> None:
        """Count a reply's usage, or what a tool spent for its result (a sub-agent's)."""
        from pi_host.messages import message_usage

        usage = message_usage(message)
        if usage is None:
            return
        self.input += usage.input
        self.output += usage.output
        self.cache_read += usage.cache_read
        self.cache_write += usage.cache_write
        self.cost += float(usage.cost.total)

    @classmethod
    def of(cls, messages: Iterable[Any]) -> UsageTotals:
        totals = cls()
        for message in messages:
            totals.add_message(message)
        return totals


class GitBranch:
    """The current git branch of a directory, read from ``.git/HEAD`` and cached for a second."""

    def __init__(self, cwd: str) -> None:
        self._cwd = cwd
        self._value: str | None = None
        self._read_at = -1.0

    def get(self) -> str | None:
        now = time.monotonic()
        if now - self._read_at > 1.0:
            self._read_at = now
            self._value = self._read()
        return self._value

    def _read(self) -> str | None:
        directory = Path(self._cwd).resolve()
        for candidate in (directory, *directory.parents):
            git = candidate / ".git"
            try:
                if git.is_file():  # a worktree or submodule: "gitdir: <path>"
                    pointer = git.read_text().strip()
                    if not pointer.startswith("gitdir:"):
                        return None
                    git = (candidate / pointer[len("gitdir:") :].strip()).resolve()
                head = (git / "HEAD").read_text().strip()
            except OSError:
                continue
            if head.startswith("ref: refs/heads/"):
                return head[len("ref: refs/heads/") :]
            return "detached" if head else None
        return None


def _truncate(text: str, width: int, ellipsis: str = "...") -> str:
    if cell_len(text) <= width:
        return text
    out = ""
    for char in text:
        if cell_len(out + char + ellipsis) > width:
            break
        out += char
    return out + ellipsis if width >= cell_len(ellipsis) else out


def _sanitize(text: str) -> str:
    return " ".join(text.replace("\r", " ").replace("\n", " ").replace("\t", " ").split())


def footer_lines(
    width: int,
    *,
    cwd: str,
    git_branch: str | None,
    session_name: str | None,
    totals: UsageTotals,
    context_tokens_percent: float | None,
    context_window: int,
    auto_compaction: bool,
    model_id: str | None,
    provider: str | None,
    reasoning: bool,
    thinking_level: str,
    show_provider: bool = False,
    statuses: Mapping[str, str] | None = None,
) -> list[Fragments]:
    """The footer's lines as prompt_toolkit style fragments."""
    home = os.path.expanduser("~")
    location = cwd
    if home and home != "/" and (cwd == home or cwd.startswith(home + os.sep)):
        location = "~" + cwd[len(home) :]
    if git_branch:
        location += f" ({git_branch})"
    if session_name:
        location += f" • {session_name}"
    lines: list[Fragments] = [[("class:footer", _truncate(location, width))]]

    stats: list[str] = []
    if totals.input:
        stats.append(f"↑{format_tokens(totals.input)}")
    if totals.output:
        stats.append(f"↓{format_tokens(totals.output)}")
    if totals.cache_read:
        stats.append(f"R{format_tokens(totals.cache_read)}")
    if totals.cache_write:
        stats.append(f"W{format_tokens(totals.cache_write)}")
    if totals.cost:
        stats.append(f"${totals.cost:.3f}")
    auto = " (auto)" if auto_compaction else ""
    percent = context_tokens_percent
    window = format_tokens(context_window)
    context = f"?/{window}{auto}" if percent is None else f"{percent:.1f}%/{window}{auto}"
    left = " ".join(stats)
    context_style = "class:footer"
    if percent is not None and percent > 90:
        context_style = "class:footer.context-high"
    elif percent is not None and percent > 70:
        context_style = "class:footer.context-warn"

    right = model_id or "no-model"
    if reasoning:
        right += " • thinking off" if thinking_level == "off" else f" • {thinking_level}"
    left_width = cell_len(left) + (1 if left else 0) + cell_len(context)
    if show_provider and provider and left_width + 2 + cell_len(f"({provider}) {right}") <= width:
        right = f"({provider}) {right}"
    stats_line: Fragments = []
    if left:
        stats_line.append(("class:footer", left + " "))
    stats_line.append((context_style, context))
    room = width - left_width
    if room >= 2 + cell_len(right):
        stats_line.append(("class:footer", " " * (room - cell_len(right)) + right))
    elif room > 2:
        shortened = _truncate(right, room - 2, "")
        stats_line.append(("class:footer", " " * (room - cell_len(shortened)) + shortened))
    lines.append(stats_line)

    if statuses:
        text = " ".join(_sanitize(statuses[key]) for key in sorted(statuses))
        lines.append([("class:footer.status", _truncate(text, width))])
    return lines
