"""The ``grep`` tool: search file contents, ripgrep when installed, pure Python otherwise.

Both backends produce the same matches in the same order (depth first, names in byte order,
then line order; ripgrep runs with ``--sort path``), so the model sees the same output
whichever ran. pi leaves ripgrep's order to its threads; a fixed order makes results
repeatable and lets the match limit cut at the same place every time.
"""

from __future__ import annotations

import codecs
import json
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio

from pi_host import ToolCallContext, ToolResult, truncate_line

from ._definitions import GREP_DEFAULT_LIMIT, GrepBackend, GrepParams
from ._errors import ToolError, raise_if_aborted
from ._external import find_rg, inside_git_repository, spawn
from ._ignore import Override
from ._paths import resolve_search_path
from ._regex import GrepPatternError, compile_line_regex
from ._text import int_argument
from ._truncate import GREP_MAX_LINE_LENGTH, capped_listing
from ._walk import IgnoreFiles, WalkAborted, walk

__all__ = ["grep"]


@dataclass(frozen=True, slots=True)
class _Hit:
    path: str
    line_number: int
    # The matching line as found (with its line break), or None when it is not valid UTF-8.
    text: str | None


@dataclass(frozen=True, slots=True)
class _Search:
    pattern: str
    search_path: str
    is_directory: bool
    glob: str | None
    ignore_case: bool
    literal: bool
    limit: int
    cwd: str


# -- the pure-Python backend ----------------------------------------------------------------

_BLOCK = 64 * 1024  # ripgrep's read buffer: it gives up on a file at the block holding a NUL
_CHUNK = 16 * _BLOCK


class _FileSearcher:
    """Searches files chunk by chunk: each chunk holds whole lines and is searched as one text
    (RE2 matches never cross a line break), so the work is linear in the file's size however
    long its lines are, and an abort is seen between chunks."""

    def __init__(self, search: _Search, aborted: Callable[[], bool]) -> None:
        self.regex = compile_line_regex(
            search.pattern, literal=search.literal, ignore_case=search.ignore_case
        )
        self.aborted = aborted

    def search(self, path: str, explicit: bool, want: int, hits: list[_Hit]) -> None:
        """Append up to ``want`` hits of ``path`` to ``hits``."""
        try:
            # O_NONBLOCK: a FIFO that took the place of a listed file must not block the walk.
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
        except OSError:
            return
        with open(fd, "rb", buffering=0) as handle:
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    return
                head = handle.read(_CHUNK)
            except OSError:
                return
            if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
                # ripgrep transcodes UTF-16 files (BOM-marked) before searching.
                text = (head + handle.read()).decode("utf-16", "replace")
                self._search_chunk(path, text.encode("utf-8", "surrogatepass"), 1, want, hits)
                return
            self._search_stream(path, handle, head, explicit, want, hits)

    def _search_stream(
        self, path: str, handle: Any, head: bytes, explicit: bool, want: int, hits: list[_Hit]
    ) -> None:
        pending = bytearray()  # the line begun in earlier blocks and not yet ended
        pending_offset = 0  # absolute offset of pending[0]
        line_number = 1
        first = True
        block = head
        while True:
            if self.aborted():
                raise WalkAborted
            block_offset = pending_offset + len(pending)
            final = len(block) == 0
            if not explicit and (nul := block.find(b"\0")) != -1:
                # Lines wholly inside the 64 KiB blocks before the NUL's block count.
                keep = (block_offset + nul) // _BLOCK * _BLOCK - pending_offset
                pending += block
                current = bytes(pending[: pending.rfind(b"\n", 0, max(keep, 0)) + 1]) if keep > 0 else b""
                final = True
            elif final:
                current = bytes(pending)
            else:
                cut = block.rfind(b"\n")
                if cut == -1:
                    pending += block  # amortised: a long line costs its length, not its square
                    block = handle.read(_CHUNK)
                    continue
                current = bytes(pending) + block[: cut + 1]
                pending = bytearray(block[cut + 1 :])
            if first and current.startswith(codecs.BOM_UTF8):
                current = current[len(codecs.BOM_UTF8) :]
            first = False
            self._search_chunk(path, current, line_number, want, hits)
            if final or len(hits) >= want:
                return
            line_number += current.count(b"\n")
            pending_offset = block_offset + cut + 1
            block = handle.read(_CHUNK)

    def _search_chunk(self, path: str, chunk: bytes, first_line: int, want: int, hits: list[_Hit]) -> None:
        size = len(chunk)
        if not size:
            return
        # A chunk ending in a break has no line after it to match.
        last_start = size - 1 if chunk.endswith(b"\n") else size
        position = 0
        line_number = first_line
        counted_to = 0
        while len(hits) < want and position <= last_start:
            match = self.regex.search(chunk, position)
            if match is None:
                return
            found = match.start()
            previous_break = chunk.rfind(b"\n", position, found)
            start = previous_break + 1 if previous_break != -1 else position
            if start > last_start:
                return
            end = chunk.find(b"\n", found)
            if end == -1:
                end = size
            line_number += chunk.count(b"\n", counted_to, start)
            counted_to = start
            raw = chunk[start:end]
            try:
                text: str | None = raw.decode("utf-8")
            except UnicodeDecodeError:
                text = None
            hits.append(_Hit(path, line_number, text))
            position = end + 1


def _python_search(search: _Search, aborted: Callable[[], bool]) -> tuple[list[_Hit], bool]:
    searcher = _FileSearcher(search, aborted)
    hits: list[_Hit] = []
    if not search.is_directory:
        searcher.search(search.search_path, True, search.limit, hits)
        return hits, len(hits) >= search.limit
    overrides = Override(search.cwd, ["!.git", *([search.glob] if search.glob else [])])
    files = IgnoreFiles(custom=(".rgignore",))
    for entry in walk(search.search_path, files=files, overrides=overrides, aborted=aborted):
        if not entry.is_file:
            continue
        searcher.search(entry.path, False, search.limit, hits)
        if len(hits) >= search.limit:
            return hits, True
    return hits, False


# -- the ripgrep backend --------------------------------------------------------------------


class _RipgrepFailed(Exception):
    pass


async def _ripgrep_search(rg: str, search: _Search) -> tuple[list[_Hit], bool]:
    args = [
        rg,
        "--json",
        "--line-number",
        "--color=never",
        "--hidden",
        "--no-config",
        "--sort",
        "path",
        "--glob",
        "!.git",
    ]
    if not inside_git_repository(search.search_path):
        # .gitignore counts outside repositories too; inside one, ripgrep's own rule keeps a
        # nested repository (a submodule) free of the outer repository's ignores, as git does.
        args.append("--no-require-git")
    if search.ignore_case:
        args.append("--ignore-case")
    if search.literal:
        args.append("--fixed-strings")
    if search.glob:
        args += ["--glob", search.glob]
    args += ["--", search.pattern, search.search_path]

    hits: list[_Hit] = []
    stderr = bytearray()
    finished = False  # ripgrep reached its summary (it searched everything it could)
    limit_reached = False
    async with spawn(args, cwd=search.cwd) as process:
        assert process.stdout is not None and process.stderr is not None
        stdout, stderr_stream = process.stdout, process.stderr

        async def drain_stderr() -> None:
            async for chunk in stderr_stream:
                stderr.extend(chunk)

        async with anyio.create_task_group() as group:
            group.start_soon(drain_stderr)
            pending = bytearray()
            async for chunk in stdout:
                # Only the new chunk is scanned for a break, so one huge line (ripgrep writes a
                # match as one JSON line) costs its length, not its length squared.
                scanned = len(pending)
                pending += chunk
                cut = pending.rfind(b"\n", scanned)
                if cut == -1:
                    continue
                lines = bytes(pending[:cut]).split(b"\n")
                del pending[: cut + 1]
                for line in lines:
                    event = _parse_event(line)
                    if event is None:
                        continue
                    kind = event.get("type")
                    if kind == "summary":
                        finished = True
                    elif kind == "match":
                        hit = _hit_from_event(event)
                        if hit is not None:
                            hits.append(hit)
                        if len(hits) >= search.limit:
                            limit_reached = True
                            break
                if limit_reached:
                    break
            if limit_reached:
                process.kill()
            # stderr reaches EOF once the process is gone; the drain task then ends by itself.
            await process.wait()
    code = process.returncode
    if not limit_reached and code not in (0, 1) and not finished:
        message = stderr.decode("utf-8", "replace").strip()
        raise _RipgrepFailed(message or f"ripgrep exited with code {code}")
    return hits, limit_reached


def _parse_event(line: bytes) -> dict[str, Any] | None:
    if not line.strip():
        return None
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


def _hit_from_event(event: dict[str, Any]) -> _Hit | None:
    data = event.get("data") or {}
    path = (data.get("path") or {}).get("text")
    line_number = data.get("line_number")
    if not isinstance(path, str) or not isinstance(line_number, int):
        return None
    text = (data.get("lines") or {}).get("text")
    return _Hit(path, line_number, text if isinstance(text, str) else None)


# -- formatting, shared by both backends (pi's output) --------------------------------------


def _normalized_lines(path: str, wanted_up_to: int) -> tuple[dict[int, str], int | None]:
    """Lines 1..``wanted_up_to`` of ``path`` (CRLF and CR read as LF) and, when the file ends
    before that, its line count."""
    lines: dict[int, str] = {}
    number = 0
    ended_with_break = True
    with open(path, encoding="utf-8", errors="replace", newline=None) as handle:
        for number, line in enumerate(handle, 1):
            ended_with_break = line.endswith("\n")
            lines[number] = line[:-1] if ended_with_break else line
            if number >= wanted_up_to:
                return lines, None
    # pi splits the text on "\n": a trailing break leaves one more, empty, line.
    total = number + 1 if ended_with_break else number
    if ended_with_break:
        lines[total] = ""
    return lines, total


class _Formatter:
    def __init__(self, search_path: str, is_directory: bool, context: int) -> None:
        self.search_path = search_path
        self.is_directory = is_directory
        self.context = context
        self.lines_truncated = False
        self._file_cache: dict[str, tuple[dict[int, str], int | None] | None] = {}

    def display_path(self, path: str) -> str:
        if self.is_directory:
            relative = os.path.relpath(path, self.search_path) if path != self.search_path else ""
            if relative and not relative.startswith(".."):
                return relative.replace(os.sep, "/")
        return os.path.basename(path)

    def _truncate(self, text: str) -> str:
        result, cut = truncate_line(text, GREP_MAX_LINE_LENGTH)
        if cut:
            self.lines_truncated = True
        return result

    def format(self, hits: list[_Hit]) -> list[str]:
        out: list[str] = []
        wanted: dict[str, int] = {}
        for hit in hits:
            wanted[hit.path] = max(wanted.get(hit.path, 0), hit.line_number + self.context)
        for hit in hits:
            shown = self.display_path(hit.path)
            if self.context == 0 and hit.text is not None:
                text = hit.text.replace("\r\n", "\n").replace("\r", "")
                if text.endswith("\n"):
                    text = text[:-1]
                out.append(f"{shown}:{hit.line_number}: {self._truncate(text)}")
            else:
                out.extend(self._block(hit, shown, wanted[hit.path]))
        return out

    def _block(self, hit: _Hit, shown: str, wanted_up_to: int) -> list[str]:
        if hit.path not in self._file_cache:
            try:
                self._file_cache[hit.path] = _normalized_lines(hit.path, wanted_up_to)
            except OSError:
                self._file_cache[hit.path] = None
        cached = self._file_cache[hit.path]
        if cached is None:
            return [f"{shown}:{hit.line_number}: (unable to read file)"]
        lines, total = cached
        number = hit.line_number
        start = max(1, number - self.context) if self.context > 0 else number
        end = number + self.context if self.context > 0 else number
        if total is not None:
            end = min(total, end)
        block: list[str] = []
        for current in range(start, end + 1):
            text = self._truncate(lines.get(current, "").replace("\r", ""))
            if current == number:
                block.append(f"{shown}:{current}: {text}")
            else:
                block.append(f"{shown}-{current}- {text}")
        return block


async def grep(params: GrepParams, ctx: ToolCallContext, *, backend: GrepBackend) -> ToolResult:
    """Run ``grep`` (see :func:`~pi_tools_fs.create_grep_tool`)."""
    signal = ctx.signal
    raise_if_aborted(signal)
    search_path, mode = resolve_search_path(params.path, ctx.cwd)
    is_directory = stat.S_ISDIR(mode)
    if not is_directory and not stat.S_ISREG(mode):
        # A FIFO, a terminal or /dev/zero: reading it can block or never end.
        raise ToolError(f"Not a regular file or directory: {search_path}")
    context = max(0, int_argument(params.context, 0))
    limit = max(1, int_argument(params.limit, GREP_DEFAULT_LIMIT))
    search = _Search(
        pattern=params.pattern,
        search_path=search_path,
        is_directory=is_directory,
        glob=params.glob or None,
        ignore_case=bool(params.ignore_case),
        literal=bool(params.literal),
        limit=limit,
        cwd=ctx.cwd,
    )
    rg = find_rg() if backend != "python" else None
    if backend == "ripgrep" and rg is None:
        raise ToolError("ripgrep (rg) is not available")

    with signal.scope():
        if rg is not None:
            try:
                hits, limit_reached = await _ripgrep_search(rg, search)
            except _RipgrepFailed as exc:
                raise ToolError(str(exc)) from None
        else:
            try:
                hits, limit_reached = await anyio.to_thread.run_sync(
                    _python_search, search, lambda: signal.aborted
                )
            except WalkAborted:
                hits, limit_reached = [], False
            except GrepPatternError as exc:
                raise ToolError(str(exc)) from None
    raise_if_aborted(signal)
    if not hits:
        return ToolResult.text("No matches found")

    formatter = _Formatter(search_path, is_directory, context)
    lines = await anyio.to_thread.run_sync(formatter.format, hits)
    hint = f"{limit} matches limit reached. Use limit={limit * 2} for more, or refine pattern"
    cut = f"Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines"
    return capped_listing(
        lines,
        (hint, "matchLimitReached", limit) if limit_reached else None,
        lines_cut=(cut, "linesTruncated", True) if formatter.lines_truncated else None,
    )
