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
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio

from pi_host import ToolCallContext, ToolResult, truncate_line

from ._definitions import GREP_DEFAULT_LIMIT, GrepBackend, GrepParams
from ._errors import ToolError, raise_if_aborted
from ._external import find_rg, spawn
from ._ignore import Override
from ._paths import resolve_to_cwd
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
# Constructs whose meaning depends on text beyond one line: a whole-chunk pre-search could
# miss a line match that uses them, so files are searched line by line straight away.
_LINE_SENSITIVE = re.compile(r"\\[AZzn]|\(\?<?[=!]")
_NAMED_GROUP = re.compile(r"\(\?<(?![=!])")


class GrepPatternError(ValueError):
    """The pattern is not a valid regular expression."""


def _compile(pattern: str, literal: bool, ignore_case: bool) -> re.Pattern[str]:
    source = re.escape(pattern) if literal else _NAMED_GROUP.sub("(?P<", pattern.replace("\\z", "\\Z"))
    try:
        return re.compile(source, re.MULTILINE | (re.IGNORECASE if ignore_case else 0))
    except re.error as exc:
        raise GrepPatternError(f"regex parse error:\n    {pattern}\nerror: {exc}") from None


class _FileSearcher:
    def __init__(self, search: _Search) -> None:
        self.regex = _compile(search.pattern, search.literal, search.ignore_case)
        self.prefilter = search.literal or not _LINE_SENSITIVE.search(search.pattern)
        self.literal_bytes = (
            search.pattern.encode("utf-8") if search.literal and not search.ignore_case else None
        )

    def search(self, path: str, explicit: bool, want: int, hits: list[_Hit]) -> None:
        """Append up to ``want`` hits of ``path`` to ``hits``."""
        try:
            handle = open(path, "rb")  # noqa: SIM115 - closed below, read in chunks
        except OSError:
            return
        with handle:
            head = handle.read(_CHUNK)
            if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
                # ripgrep transcodes UTF-16 files (BOM-marked) before searching.
                text = (head + handle.read()).decode("utf-16", "replace")
                self._search_text(path, text, want, hits)
                return
            self._search_stream(path, handle, head, explicit, want, hits)

    def _search_text(self, path: str, text: str, want: int, hits: list[_Hit]) -> None:
        if self.prefilter and not self.regex.search(text):
            return
        for number, line in enumerate(text.split("\n"), 1):
            if len(hits) >= want:
                return
            if self.regex.search(line):
                hits.append(_Hit(path, number, line))

    def _search_stream(
        self, path: str, handle: Any, head: bytes, explicit: bool, want: int, hits: list[_Hit]
    ) -> None:
        data = head
        offset = 0  # absolute offset of data[0]
        line_number = 1
        first = True
        while data:
            more = handle.read(_CHUNK)
            if more:
                cut = data.rfind(b"\n")
                if cut == -1:
                    data += more
                    continue
                current, data_next = data[: cut + 1], data[cut + 1 :] + more
            else:
                current, data_next = data, b""
            stop = False
            if not explicit:
                nul = current.find(b"\0")
                if nul != -1:
                    # Lines wholly inside the 64 KiB blocks before the NUL's block count.
                    limit = (offset + nul) // _BLOCK * _BLOCK - offset
                    current = current[: current.rfind(b"\n", 0, max(limit, 0)) + 1] if limit > 0 else b""
                    stop = True
            if first and current.startswith(codecs.BOM_UTF8):
                current = current[len(codecs.BOM_UTF8) :]
                offset += len(codecs.BOM_UTF8)
            first = False
            self._search_chunk(path, current, line_number, want, hits)
            if stop or len(hits) >= want:
                return
            line_number += current.count(b"\n")
            offset += len(current)
            data = data_next

    def _search_chunk(self, path: str, chunk: bytes, first_line: int, want: int, hits: list[_Hit]) -> None:
        if not chunk:
            return
        if self.literal_bytes is not None:
            if self.literal_bytes not in chunk:
                return
        elif self.prefilter and not self.regex.search(chunk.decode("utf-8", "replace")):
            return
        lines = chunk.split(b"\n")
        if chunk.endswith(b"\n"):
            lines.pop()
        for index, raw in enumerate(lines):
            if len(hits) >= want:
                return
            try:
                text: str | None = raw.decode("utf-8")
                candidate = text
            except UnicodeDecodeError:
                text = None
                candidate = raw.decode("utf-8", "replace")
            assert candidate is not None
            if self.regex.search(candidate):
                hits.append(_Hit(path, first_line + index, text))


def _python_search(search: _Search, aborted: Callable[[], bool]) -> tuple[list[_Hit], bool]:
    searcher = _FileSearcher(search)
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
        "--no-require-git",
        "--sort",
        "path",
        "--glob",
        "!.git",
    ]
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
            pending = b""
            async for chunk in stdout:
                pending += chunk
                *lines, pending = pending.split(b"\n")
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
    search_path = resolve_to_cwd(params.path or ".", ctx.cwd)
    try:
        is_directory = stat.S_ISDIR(os.stat(search_path).st_mode)
    except (OSError, ValueError):
        raise ToolError(f"Path not found: {search_path}") from None
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
