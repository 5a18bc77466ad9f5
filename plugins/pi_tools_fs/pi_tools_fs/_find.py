"""The ``find`` tool: files by glob pattern, with fd, else ``rg --files``, else pure Python.

fd matches the glob against each entry's name, or against its absolute path when the pattern
holds a ``/`` (``**/`` is then implied in front); lowercase patterns match case-insensitively
(fd's smart case). Results are relative to the search directory, directories end in ``/``,
and every backend returns them in the same order (depth first, names in byte order).

Without fd, ripgrep lists the files (it ships with pi-tools-fs) and the glob is matched here,
against each file and each directory above it. Three differences from fd remain: symbolic
links are not listed, a directory holding no listed file (an empty one, or one whose files are
all ignored) is not found, and ripgrep reads ``.rgignore`` files where fd reads ``.fdignore``.
"""

from __future__ import annotations

import itertools
import os
import stat
from collections.abc import Callable
from typing import Any

import anyio

from pi_host import ToolCallContext, ToolResult

from ._definitions import FIND_DEFAULT_LIMIT, FindBackend, FindParams
from ._errors import ToolError, raise_if_aborted
from ._external import FdBinary, find_fd, find_rg, inside_git_repository, spawn
from ._glob import GlobError, compile_glob
from ._ignore import Override
from ._paths import resolve_to_cwd
from ._text import int_argument
from ._truncate import capped_listing
from ._walk import IgnoreFiles, WalkAborted, walk

__all__ = ["find"]


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


def _match_listed(
    names: list[str], search_path: str, pattern: str, full_path: bool, case_insensitive: bool, limit: int
) -> list[str]:
    """The files in ripgrep's list ``names``, and the directories above them, that ``pattern``
    matches as fd matches its walk, in fd's order. Written as bulk comprehensions: a per-name
    loop would cost more than ripgrep's whole walk."""
    match = compile_glob(pattern, literal_separator=True, case_insensitive=case_insensitive).match
    root = search_path.rstrip("/") + "/"
    last = pattern.rpartition("/")[2]
    # A path matches only if its name matches the pattern's last segment (when that segment
    # is one whole name): names repeat (index.ts, __init__.py …), so each distinct one is
    # tried once, and only the paths whose name passes are tried whole.
    by_name = not full_path or (last and "**" not in last and "{" not in pattern)
    name_match = (
        compile_glob(last, literal_separator=True, case_insensitive=case_insensitive).match
        if full_path and by_name
        else match
    )
    subjects = [name.rpartition("/")[2] for name in names]
    if by_name:
        passing = {subject for subject in set(subjects) if name_match(subject)}
        results = list(itertools.compress(names, map(passing.__contains__, subjects)))
    else:
        results = names
    if full_path:
        results = [name for name in results if match(root + name)]
    directories: set[str] = set()
    for parent in {name.rpartition("/")[0] for name in names}:
        while parent and parent not in directories:
            directories.add(parent)
            parent = parent.rpartition("/")[0]
    for directory in directories:
        if match(root + directory if full_path else directory.rpartition("/")[2]):
            results.append(directory + "/")
    results.sort(key=_walk_order)
    return results[:limit]


async def _rg_files(rg: str, search_path: str) -> list[str]:
    """Every file ``rg --files`` lists below ``search_path``, relative to it."""
    args = [rg, "--files", "--hidden", "--no-config", "--glob", "!.git", "--null"]
    if not inside_git_repository(search_path):
        args.append("--no-require-git")
    global_ignore = _fd_global_ignore()
    if os.path.isfile(global_ignore):
        args += ["--ignore-file", global_ignore]
    stdout = bytearray()
    stderr = bytearray()
    async with spawn(args, cwd=search_path) as process:
        assert process.stdout is not None and process.stderr is not None
        out_stream, err_stream = process.stdout, process.stderr

        async def drain(stream: Any, sink: bytearray) -> None:
            async for chunk in stream:
                sink.extend(chunk)

        async with anyio.create_task_group() as group:
            group.start_soon(drain, out_stream, stdout)
            group.start_soon(drain, err_stream, stderr)
        await process.wait()
    # ripgrep exits 1 when it lists nothing, and 2 when some directory was unreadable.
    if process.returncode not in (0, 1) and not stdout:
        message = stderr.decode("utf-8", "replace").strip()
        raise ToolError(message or f"ripgrep exited with code {process.returncode}")
    names = stdout.decode("utf-8", "surrogateescape").split("\0")
    names.pop()  # the text ends with a separator (or is empty)
    return names


async def find(params: FindParams, ctx: ToolCallContext, *, backend: FindBackend) -> ToolResult:
    """Run ``find`` (see :func:`~pi_tools_fs.create_find_tool`)."""
    signal = ctx.signal
    raise_if_aborted(signal)
    search_path = resolve_to_cwd(params.path or ".", ctx.cwd)
    try:
        mode = os.stat(search_path).st_mode
    except (OSError, ValueError):
        raise ToolError(f"Path not found: {search_path}") from None
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

    fd = find_fd() if backend in ("auto", "fd") else None
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
            names = await _rg_files(rg, search_path)
            found = await anyio.to_thread.run_sync(
                _match_listed, names, search_path, pattern, full_path, case_insensitive, limit
            )
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
