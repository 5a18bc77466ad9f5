"""The ``find`` tool: files by glob pattern, fd when installed, pure Python otherwise.

fd matches the glob against each entry's name, or against its absolute path when the pattern
holds a ``/`` (``**/`` is then implied in front); lowercase patterns match case-insensitively
(fd's smart case). Results are relative to the search directory, directories end in ``/``,
and both backends return them in the same order (depth first, names in byte order).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from typing import Any

import anyio

from pi_host import ToolCallContext, ToolResult

from ._definitions import FIND_DEFAULT_LIMIT, FindBackend, FindParams
from ._errors import ToolError, raise_if_aborted
from ._external import FdBinary, find_fd, inside_git_repository, spawn
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

    fd = find_fd() if backend != "python" else None
    if backend == "fd" and fd is None:
        raise ToolError("fd is not available")
    if (
        backend == "auto"
        and fd is not None
        and not fd.no_require_git
        and not inside_git_repository(search_path)
    ):
        # fd before 9 ignores .gitignore outside repositories; Python does not.
        fd = None

    with signal.scope():
        if fd is not None:
            found = await _fd_find(fd, search_path, pattern, full_path, ctx.cwd)
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
