"""The ``find`` tool: files by glob pattern, with fd, else ``rg --files``, else pure Python.

fd matches the glob against each entry's name, or against its absolute path when the pattern
holds a ``/`` (``**/`` is then implied in front); lowercase patterns match case-insensitively
(fd's smart case). Results are relative to the search directory, directories end in ``/``,
and every backend returns them in the same order (depth first, names in byte order).

Without fd, ripgrep lists the files (it ships with pi-tools-fs) and the glob is matched here,
against each file and each directory above it. When the pattern's name part has plain
characters, an extra ignore file first keeps ripgrep to the files whose name, or whose
directory's name, could match (a superset: the glob still decides here), so ripgrep does the
filtering and the ignore rules stay ripgrep's. Three differences from fd remain: symbolic
links are not listed, a directory holding no listed file (an empty one, or one whose files are
all ignored) is not found, and ripgrep reads ``.rgignore`` files where fd reads ``.fdignore``.
"""

from __future__ import annotations

import contextlib
import itertools
import operator
import os
import stat
import tempfile
from collections.abc import Callable
from typing import Any, TypeVar

import anyio

from pi_host import ToolCallContext, ToolResult

from ._definitions import FIND_DEFAULT_LIMIT, FindBackend, FindParams
from ._errors import ToolError, raise_if_aborted
from ._external import FdBinary, collect, find_fd, find_rg, inside_git_repository, spawn
from ._glob import GlobError, compile_glob, name_superset
from ._ignore import Override
from ._paths import resolve_search_path
from ._text import int_argument
from ._truncate import capped_listing
from ._walk import IgnoreFiles, WalkAborted, walk

__all__ = ["find", "rg_files_command"]

_T = TypeVar("_T")


def _fd_global_ignore() -> str:
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(config, "fd", "ignore")


def _sort_key(relative: str) -> tuple[bytes, ...]:
    return tuple(part.encode("utf-8", "surrogateescape") for part in relative.rstrip("/").split("/"))


def _python_find(
    search_path: str,
    pattern: str,
    full_path: bool,
    case_insensitive: bool,
    limit: int,
    aborted: Callable[[], bool],
) -> list[str]:
    regex = compile_glob(pattern, literal_separator=True, case_insensitive=case_insensitive)
    files = IgnoreFiles(custom=(".fdignore",), explicit=(_fd_global_ignore(),))
    overrides = Override(search_path, ["!.git"])
    prefix = len(search_path.rstrip("/")) + 1
    results: list[str] = []
    for entry in walk(search_path, files=files, overrides=overrides, aborted=aborted):
        subject = entry.path if full_path else entry.name
        if regex.match(subject):
            results.append(entry.path[prefix:] + ("/" if entry.is_dir else ""))
            if len(results) >= limit:
                break
    return results


async def _fd_find(fd: FdBinary, search_path: str, pattern: str, full_path: bool, cwd: str) -> list[str]:
    args = [fd.path, "--glob", "--color=never", "--hidden", "--exclude", ".git"]
    if fd.no_require_git:
        args.append("--no-require-git")
    if full_path:
        args.append("--full-path")
    args += ["--", pattern, search_path]
    stdout = bytearray()
    stderr = bytearray()
    async with spawn(args, cwd=cwd) as process:
        assert process.stdout is not None and process.stderr is not None
        out_stream, err_stream = process.stdout, process.stderr

        async def drain(stream: Any, sink: bytearray) -> None:
            async for chunk in stream:
                sink.extend(chunk)

        async with anyio.create_task_group() as group:
            group.start_soon(drain, out_stream, stdout)
            group.start_soon(drain, err_stream, stderr)
        await process.wait()
    lines = stdout.decode("utf-8", "surrogateescape").split("\n")
    if process.returncode != 0 and not any(line.strip() for line in lines):
        message = stderr.decode("utf-8", "replace").strip()
        raise ToolError(message or f"fd exited with code {process.returncode}")
    results: list[str] = []
    for raw in lines:
        line = raw.rstrip("\r").strip()
        if not line:
            continue
        trailing_slash = line.endswith("/")
        if line.startswith(search_path.rstrip("/") + "/"):
            relative = line[len(search_path.rstrip("/")) + 1 :]
        else:
            relative = os.path.relpath(line, search_path)
        if trailing_slash and not relative.endswith("/"):
            relative += "/"
        results.append(relative.replace(os.sep, "/"))
    # fd reports in thread order; sorting gives the walk order the Python backend produces.
    results.sort(key=_sort_key)
    return results


def _walk_order(relative: str) -> bytes:
    # Component by component in byte order, a directory before its contents: the separator
    # becomes the lowest byte, which no name holds.
    return relative.rstrip("/").encode("utf-8", "surrogateescape").replace(b"/", b"\0")


# Stands for "/" in the fast path of _match_listed: it sorts below every character of a name,
# so plain string order is fd's walk order (see _walk_order).
_LOW = "\x01"


def _name_filter(pattern: str, full_path: bool, case_insensitive: bool) -> str | None:
    """A glob that every listed name matching ``pattern`` (a path's last segment, when that
    segment is one whole name) also matches, or ``None`` when no name filter applies."""
    last = pattern.rpartition("/")[2]
    if full_path and (not last or "**" in last or "{" in pattern):
        return None
    return name_superset(last, case_insensitive=case_insensitive)


class _Listing:
    """Matches ripgrep's NUL-separated file list as fd matches its walk: the files and the
    directories above them that ``pattern`` matches, the first ``limit`` in fd's order.

    Each chunk fed (the listing whole, or as it comes) is only split into names and sorted (a
    few bulk string operations). At the end the names are sorted into walk order (a merge of
    the sorted chunks), and matched a stretch at a time from the
    front until ``limit`` results are certain: a directory sorts just before the first file
    below it, so once a sorted stretch holds ``limit`` results nothing after it can come
    first. A common pattern's first results are decided by a fraction of the listing. The
    matching is written as bulk operations: a loop in Python over every name would cost more
    than ripgrep's walk.
    """

    #: The first stretch matched, at least; each next one is twice the one before.
    MIN_STRETCH = 256

    def __init__(self, search_path: str, pattern: str, full_path: bool, case_insensitive: bool) -> None:
        self.match = compile_glob(pattern, literal_separator=True, case_insensitive=case_insensitive).match
        self.full_path = full_path
        self.root = search_path.rstrip("/") + "/"
        last = pattern.rpartition("/")[2]
        # A path matches only if its name matches the pattern's last segment (when that
        # segment is one whole name): names repeat (index.ts, __init__.py …), so each
        # distinct one is tried once, and only the paths whose name passes are tried whole.
        self.by_name = not full_path or bool(last and "**" not in last and "{" not in pattern)
        self.name_match = (
            compile_glob(last, literal_separator=True, case_insensitive=case_insensitive).match
            if full_path and self.by_name
            else self.match
        )
        self.raw = bytearray()
        self.pending = b""
        # _LOW while every name so far is valid UTF-8 without it (code point order is then
        # byte order, and names sort as they are); "/" once one is not: then the names are
        # made again at the end from the raw listing, and sorted with _walk_order's key.
        self.sep = _LOW
        self.names: list[str] = []
        self.verdicts: dict[str, bool] = {}

    def feed(self, chunk: bytes) -> None:
        self.raw += chunk
        if self.sep != _LOW:
            return
        data = self.pending + chunk
        cut = data.rfind(b"\0") + 1
        self.pending = data[cut:]
        if not cut:
            return
        try:
            text = data[:cut].decode("utf-8")
        except UnicodeDecodeError:
            self.sep = "/"
            return
        if _LOW in text:
            self.sep = "/"
            return
        names = text.replace("/", _LOW).split("\0")
        names.pop()  # the text ends with a separator
        # Sorted chunk by chunk: the sort at the end then merges sorted runs.
        names.sort()
        self.names += names

    def _files(self, names: list[str]) -> list[str]:
        """The ``names`` (files) that the pattern matches."""
        sep = self.sep
        if self.by_name:
            subjects = list(map(operator.itemgetter(2), map(str.rpartition, names, itertools.repeat(sep))))
            verdicts = self.verdicts
            for subject in set(subjects).difference(verdicts):
                verdicts[subject] = self.name_match(subject) is not None
            names = list(itertools.compress(names, map(verdicts.__getitem__, subjects)))
        if self.full_path:
            names = [name for name in names if self.match(self.root + name.replace(sep, "/"))]
        return names

    def _directory_matches(self, directory: str) -> bool:
        sep = self.sep
        subject = self.root + directory.replace(sep, "/") if self.full_path else directory.rpartition(sep)[2]
        return self.match(subject) is not None

    def finish(self, limit: int) -> list[str]:
        """The first ``limit`` matches, in fd's order."""
        sep = self.sep
        if sep == "/":
            names = bytes(self.raw).decode("utf-8", "surrogateescape").split("\0")
            names.pop()  # the listing ends with a separator (or is empty)
            names.sort(key=_walk_order)
        else:
            names = self.names
            names.sort()
        results: list[str] = []
        directories: set[str] = set()
        done, size = 0, max(limit, self.MIN_STRETCH)
        while done < len(names) and len(results) < limit:
            stretch = names[done : done + size]
            done += len(stretch)
            size *= 2
            results += self._files(stretch)
            split = map(str.rpartition, stretch, itertools.repeat(sep))
            for parent in set(map(operator.itemgetter(0), split)):
                while parent and parent not in directories:
                    directories.add(parent)
                    if self._directory_matches(parent):
                        results.append(parent + sep)
                    parent = parent.rpartition(sep)[0]
        if sep == "/":
            results.sort(key=_walk_order)
            return results[:limit]
        results.sort()
        return [result.replace(sep, "/") for result in results[:limit]]


def _match_listed(
    listing: bytes, search_path: str, pattern: str, full_path: bool, case_insensitive: bool, limit: int
) -> list[str]:
    """:class:`_Listing` over a whole listing at once."""
    matcher = _Listing(search_path, pattern, full_path, case_insensitive)
    matcher.feed(listing)
    return matcher.finish(limit)


def _filter_rules(name_filter: str) -> str:
    """Ignore rules that keep only the files whose name matches ``name_filter`` and the files
    below a directory whose name does (they show which directories hold listed files)."""
    return f"*\n!*/\n!{name_filter}\n!**/{name_filter}/**\n"


def rg_files_command(rg: str, search_path: str, rules: str | None) -> list[str]:
    """The ``rg --files`` command line that lists ``search_path``'s files as fd would walk
    them, narrowed by the ignore file ``rules`` (a path) when given."""
    args = [rg, "--files", "--hidden", "--no-config", "--glob", "!.git", "--null"]
    if not inside_git_repository(search_path):
        args.append("--no-require-git")
    # Of several --ignore-file, the later wins: fd's own global ignore file outranks the name
    # filter, whose rules only ever leave out names that cannot match.
    if rules is not None:
        args += ["--ignore-file", rules]
    global_ignore = _fd_global_ignore()
    if os.path.isfile(global_ignore):
        args += ["--ignore-file", global_ignore]
    return args


async def _rg_files(rg: str, search_path: str, name_filter: str | None, then: Callable[[bytes], _T]) -> _T:
    """What ``then`` makes of the listing of ``rg --files`` below ``search_path``
    (NUL-separated, relative to it): every file, or with ``name_filter`` those that can match
    it by name or by a directory's name. ``then`` runs in a worker thread (see :func:`collect`).
    """
    with contextlib.ExitStack() as stack:
        rules = None
        if name_filter is not None:
            # Closed before ripgrep opens it (Windows refuses a file open elsewhere).
            descriptor, rules = tempfile.mkstemp(prefix="pi-find-", suffix=".ignore")
            stack.callback(os.unlink, rules)
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                handle.write(_filter_rules(name_filter))
        done = await collect(rg_files_command(rg, search_path, rules), search_path, then)
    # ripgrep exits 1 when it lists nothing, and 2 when some directory was unreadable.
    if done.returncode not in (0, 1) and not done.stdout:
        message = done.stderr.decode("utf-8", "replace").strip()
        raise ToolError(message or f"ripgrep exited with code {done.returncode}")
    return done.result


async def find(params: FindParams, ctx: ToolCallContext, *, backend: FindBackend) -> ToolResult:
    """Run ``find`` (see :func:`~pi_tools_fs.create_find_tool`)."""
    signal = ctx.signal
    raise_if_aborted(signal)
    search_path, mode = resolve_search_path(params.path, ctx.cwd)
    if not stat.S_ISDIR(mode):
        raise ToolError(f"Not a directory: {search_path}")
    limit = max(1, int_argument(params.limit, FIND_DEFAULT_LIMIT))

    pattern = params.pattern
    full_path = "/" in pattern
    if full_path and not (pattern.startswith(("/", "**/")) or pattern == "**"):
        pattern = "**/" + pattern
    case_insensitive = not any(ch.isupper() for ch in pattern)
    try:
        compile_glob(pattern, case_insensitive=case_insensitive)
    except GlobError as exc:
        raise ToolError(str(exc)) from None

    fd = await find_fd() if backend in ("auto", "fd") else None
    if backend == "fd" and fd is None:
        raise ToolError("fd is not available")
    if (
        backend == "auto"
        and fd is not None
        and not fd.no_require_git
        and not inside_git_repository(search_path)
    ):
        # fd before 9 ignores .gitignore outside repositories; the other backends do not.
        fd = None
    rg = find_rg() if fd is None and backend in ("auto", "ripgrep") else None
    if backend == "ripgrep" and rg is None:
        raise ToolError("ripgrep (rg) is not available")

    with signal.scope():
        if fd is not None:
            found = await _fd_find(fd, search_path, pattern, full_path, ctx.cwd)
        elif rg is not None:
            name_filter = _name_filter(pattern, full_path, case_insensitive)

            def match(listing: bytes) -> list[str]:
                return _match_listed(listing, search_path, pattern, full_path, case_insensitive, limit)

            found = await _rg_files(rg, search_path, name_filter, match)
        else:
            try:
                found = await anyio.to_thread.run_sync(
                    _python_find,
                    search_path,
                    pattern,
                    full_path,
                    case_insensitive,
                    limit,
                    lambda: signal.aborted,
                )
            except WalkAborted:
                found = []
    raise_if_aborted(signal)
    if not found:
        return ToolResult.text("No files found matching pattern")

    hint = f"{limit} results limit reached. Use limit={limit * 2} for more, or refine pattern"
    return capped_listing(found[:limit], (hint, "resultLimitReached", limit) if len(found) >= limit else None)
