"""Line diffs for the ``edit`` tool's details, in pi's two formats.

``diff`` is pi's numbered display diff (``+12 new line``, `` 11 context``, ``...`` for skipped
runs); ``patch`` is a standard unified patch. Both are computed from the same line diff, a
Myers O(ND) diff that makes the same choices as the ``diff`` package pi uses (deletions before
insertions, greedy common runs), so a change renders the same in pi-host and pi.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Change", "diff_lines", "display_diff", "unified_patch"]


@dataclass(frozen=True, slots=True)
class Change:
    """A run of lines: common to both texts, only in the new text (added) or only in the old."""

    value: str
    count: int
    added: bool = False
    removed: bool = False


_LINE_BREAK = re.compile(r"(\n|\r\n)")


def _tokenize(text: str) -> list[str]:
    # Each token is one line with its line break; an empty trailing piece is not a line.
    parts = _LINE_BREAK.split(text)
    if parts and not parts[-1]:
        parts.pop()
    tokens: list[str] = []
    for index, part in enumerate(parts):
        if index % 2:
            tokens[-1] += part
        else:
            tokens.append(part)
    return [token for token in tokens if token]


@dataclass(slots=True)
class _Component:
    count: int
    added: bool
    removed: bool
    previous: _Component | None


@dataclass(slots=True)
class _Path:
    old_pos: int
    last: _Component | None


def _extend(path: _Path, added: bool, removed: bool, old_step: int) -> _Path:
    last = path.last
    if last is not None and last.added == added and last.removed == removed:
        component = _Component(last.count + 1, added, removed, last.previous)
    else:
        component = _Component(1, added, removed, last)
    return _Path(path.old_pos + old_step, component)


def _follow_diagonal(path: _Path, new: list[int], old: list[int], diagonal: int) -> int:
    old_pos = path.old_pos
    new_pos = old_pos - diagonal
    common = 0
    new_len, old_len = len(new), len(old)
    while new_pos + 1 < new_len and old_pos + 1 < old_len and old[old_pos + 1] == new[new_pos + 1]:
        new_pos += 1
        old_pos += 1
        common += 1
    if common:
        path.last = _Component(common, False, False, path.last)
    path.old_pos = old_pos
    return new_pos


def _build(last: _Component | None, new_tokens: list[str], old_tokens: list[str]) -> list[Change]:
    components: list[_Component] = []
    while last is not None:
        components.append(last)
        last = last.previous
    components.reverse()
    changes: list[Change] = []
    new_pos = old_pos = 0
    for component in components:
        if component.removed:
            value = "".join(old_tokens[old_pos : old_pos + component.count])
            old_pos += component.count
        else:
            value = "".join(new_tokens[new_pos : new_pos + component.count])
            new_pos += component.count
            if not component.added:
                old_pos += component.count
        changes.append(Change(value, component.count, component.added, component.removed))
    return changes


def diff_lines(old_text: str, new_text: str) -> list[Change]:
    """The line diff of two texts as a list of runs, in order."""
    old_tokens = _tokenize(old_text)
    new_tokens = _tokenize(new_text)
    # Compare small integers instead of strings in the inner loop.
    ids: dict[str, int] = {}
    old = [ids.setdefault(token, len(ids)) for token in old_tokens]
    new = [ids.setdefault(token, len(ids)) for token in new_tokens]
    new_len, old_len = len(new), len(old)

    best: dict[int, _Path | None] = {0: _Path(-1, None)}
    start = best[0]
    assert start is not None
    new_pos = _follow_diagonal(start, new, old, 0)
    if start.old_pos + 1 >= old_len and new_pos + 1 >= new_len:
        return _build(start.last, new_tokens, old_tokens)

    # Once a path reaches the right or bottom edge, diagonals beyond it cannot do better.
    min_diagonal = -(new_len + old_len + 1)
    max_diagonal = new_len + old_len + 1
    for edit_length in range(1, new_len + old_len + 1):
        diagonal = max(min_diagonal, -edit_length)
        while diagonal <= min(max_diagonal, edit_length):
            remove_path = best.get(diagonal - 1)
            add_path = best.get(diagonal + 1)
            if remove_path is not None:
                best[diagonal - 1] = None
            can_add = False
            if add_path is not None:
                add_new_pos = add_path.old_pos - diagonal
                can_add = 0 <= add_new_pos < new_len
            can_remove = remove_path is not None and remove_path.old_pos + 1 < old_len
            if not can_add and not can_remove:
                best[diagonal] = None
                diagonal += 2
                continue
            if not can_remove or (
                can_add
                and add_path is not None
                and remove_path is not None
                and remove_path.old_pos < add_path.old_pos
            ):
                assert add_path is not None
                base = _extend(add_path, True, False, 0)
            else:
                assert remove_path is not None
                base = _extend(remove_path, False, True, 1)
            new_pos = _follow_diagonal(base, new, old, diagonal)
            if base.old_pos + 1 >= old_len and new_pos + 1 >= new_len:
                return _build(base.last, new_tokens, old_tokens)
            best[diagonal] = base
            if base.old_pos + 1 >= old_len:
                max_diagonal = min(max_diagonal, diagonal - 1)
            if new_pos + 1 >= new_len:
                min_diagonal = max(min_diagonal, diagonal + 1)
            diagonal += 2
    raise AssertionError("unreachable: a diff exists within len(old) + len(new) edits")


def _split_run(value: str) -> list[str]:
    lines = value.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def display_diff(old_text: str, new_text: str, context_lines: int = 4) -> tuple[str, int | None]:
    """pi's numbered diff and the first changed line (1-based, in the new text).

    Lines are ``+N text`` / ``-N text`` / `` N text`` with N right-aligned to the widest line
    number; runs of unchanged lines longer than the context are shown as `` ...``.
    """
    changes = diff_lines(old_text, new_text)
    width = len(str(max(len(old_text.split("\n")), len(new_text.split("\n")))))
    blank = " " * width
    out: list[str] = []
    old_no = new_no = 1
    last_was_change = False
    first_changed: int | None = None

    def context(line: str) -> None:
        nonlocal old_no, new_no
        out.append(f" {str(old_no).rjust(width)} {line}")
        old_no += 1
        new_no += 1

    def skip(count: int) -> None:
        nonlocal old_no, new_no
        out.append(f" {blank} ...")
        old_no += count
        new_no += count

    for index, change in enumerate(changes):
        lines = _split_run(change.value)
        if change.added or change.removed:
            if first_changed is None:
                first_changed = new_no
            for line in lines:
                if change.added:
                    out.append(f"+{str(new_no).rjust(width)} {line}")
                    new_no += 1
                else:
                    out.append(f"-{str(old_no).rjust(width)} {line}")
                    old_no += 1
            last_was_change = True
            continue
        next_is_change = index + 1 < len(changes) and (changes[index + 1].added or changes[index + 1].removed)
        if last_was_change and next_is_change:
            if len(lines) <= context_lines * 2:
                for line in lines:
                    context(line)
            else:
                for line in lines[:context_lines]:
                    context(line)
                skip(len(lines) - 2 * context_lines)
                for line in lines[len(lines) - context_lines :]:
                    context(line)
        elif last_was_change:
            for line in lines[:context_lines]:
                context(line)
            if len(lines) > context_lines:
                skip(len(lines) - context_lines)
        elif next_is_change:
            skipped = max(0, len(lines) - context_lines)
            if skipped:
                skip(skipped)
            for line in lines[skipped:]:
                context(line)
        else:
            old_no += len(lines)
            new_no += len(lines)
        last_was_change = False
    return "\n".join(out), first_changed


def _run_lines(value: str) -> list[str]:
    # Lines of a run, each keeping its trailing newline (the last may lack one).
    lines = [line + "\n" for line in value.split("\n")]
    if value.endswith("\n"):
        lines.pop()
    else:
        lines[-1] = lines[-1][:-1]
    return lines


def unified_patch(path: str, old_text: str, new_text: str, context_lines: int = 4) -> str:
    """A unified patch (``--- path`` / ``+++ path`` headers, ``@@ -a,b +c,d @@`` hunks)."""
    changes = diff_lines(old_text, new_text)
    runs = [(change, _run_lines(change.value)) for change in changes]
    runs.append((Change("", 0), []))
    hunks: list[tuple[int, int, int, int, list[str]]] = []
    old_start = new_start = 0
    current: list[str] = []
    old_line = new_line = 1
    for index, (change, lines) in enumerate(runs):
        if change.added or change.removed:
            if not old_start:
                old_start, new_start = old_line, new_line
                if index > 0:
                    previous = runs[index - 1][1]
                    current = [" " + line for line in previous[-context_lines:]] if context_lines else []
                    old_start -= len(current)
                    new_start -= len(current)
            current.extend(("+" if change.added else "-") + line for line in lines)
            if change.added:
                new_line += len(lines)
            else:
                old_line += len(lines)
            continue
        if old_start:
            if len(lines) <= context_lines * 2 and index < len(runs) - 2:
                current.extend(" " + line for line in lines)
            else:
                shown = min(len(lines), context_lines)
                current.extend(" " + line for line in lines[:shown])
                old_count = old_line - old_start + shown
                new_count = new_line - new_start + shown
                hunks.append((old_start, old_count, new_start, new_count, current))
                old_start = new_start = 0
                current = []
        old_line += len(lines)
        new_line += len(lines)

    out = [f"--- {path}", f"+++ {path}"]
    for old_from, old_count, new_from, new_count, lines in hunks:
        # Unified diff quirk: an empty range starts one line earlier.
        if old_count == 0:
            old_from -= 1
        if new_count == 0:
            new_from -= 1
        out.append(f"@@ -{old_from},{old_count} +{new_from},{new_count} @@")
        for line in lines:
            if line.endswith("\n"):
                out.append(line[:-1])
            else:
                out.append(line)
                out.append("\\ No newline at end of file")
    return "\n".join(out) + "\n"
