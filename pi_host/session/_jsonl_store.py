"""The default store: pi's JSONL session files, one per session, in per-project directories."""

from __future__ import annotations

import builtins
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ._backend import SessionStore, StoredSession, split_new_lines
from ._paths import default_session_dir, session_file_name, validate_session_id

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: one writer per session file, as in pi
    fcntl = None  # type: ignore[assignment]

__all__ = ["JsonlStore"]


class JsonlStore(SessionStore):
    """Sessions as pi's files under ``root`` (``<root>/--<cwd>--/<timestamp>_<id>.jsonl``).

    The files are the ones the session manager writes by default, byte for byte; a session
    is found by the id at the end of its file name, in ``root`` or one directory below.
    Appends hold an exclusive ``flock`` on the file while they check which ids it has and
    write, so concurrent writers neither lose nor duplicate lines.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self._root = Path(os.path.abspath(root))
        self._paths: dict[str, Path] = {}
        # file -> (bytes read, ids seen): appends read only what was added since
        self._seen: dict[Path, tuple[int, set[str]]] = {}

    @property
    def uri(self) -> str:
        return self._root.as_uri()

    @property
    def root(self) -> Path:
        """The directory the session files are under."""
        return self._root

    def _find(self, session_id: str) -> Path | None:
        validate_session_id(session_id)
        cached = self._paths.get(session_id)
        if cached is not None and cached.exists():
            return cached
        for pattern in (f"*_{session_id}.jsonl", f"*/*_{session_id}.jsonl"):
            for path in sorted(self._root.glob(pattern)):
                self._paths[session_id] = path
                return path
        return None

    def append(self, session_id: str, lines: Sequence[str]) -> None:
        if not lines:
            return
        path = self._find(session_id)
        # Check the batch before touching the disk: a refused batch leaves no file behind.
        header, _ = split_new_lines(session_id, lines, exists=path is not None, known=set())
        if path is None:
            assert header is not None
            obj = json.loads(header)
            cwd = obj.get("cwd") if isinstance(obj.get("cwd"), str) else ""
            # the directory the session manager uses for that project, under this root
            directory = self._root / default_session_dir(cwd).name if cwd else self._root
            path = directory / session_file_name(str(obj.get("timestamp") or "0"), session_id)
            directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o644)
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            size, known, ends_with_newline = self._scan(path, fd)
            header, new = split_new_lines(session_id, lines, exists=size > 0, known=known)
            out = [header] if header is not None else []
            out.extend(line for _, line in new)
            if not out:
                return
            data = ("\n".join(out) + "\n").encode("utf-8", "surrogatepass")
            if not ends_with_newline:
                data = b"\n" + data  # never continue a torn line
            view = memoryview(data)
            written = 0
            while written < len(data):
                written += os.write(fd, view[written:])
            known.update(entry_id for entry_id, _ in new if entry_id is not None)
            self._seen[path] = (size + len(data), known)
            self._paths[session_id] = path
        finally:
            os.close(fd)  # releases the lock

    def _scan(self, path: Path, fd: int) -> tuple[int, set[str], bool]:
        """The file's size, the ids in it, and whether it ends with a newline."""
        size = os.fstat(fd).st_size
        start, known = self._seen.get(path, (0, set()))
        if start > size:  # the file was replaced or cut: read it again
            start, known = 0, set()
        ends_with_newline = True
        if size > start:
            data = os.pread(fd, size - start, start)
            ends_with_newline = data.endswith(b"\n")
            for raw in data.splitlines():
                _collect_id(raw, known)
        elif size:
            ends_with_newline = os.pread(fd, 1, size - 1) == b"\n"
        return size, known, ends_with_newline

    def load(self, session_id: str) -> builtins.list[str] | None:
        path = self._find(session_id)
        if path is None:
            return None
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        lines = [raw.decode("utf-8", "surrogateescape") for raw in data.split(b"\n")]
        return [line.rstrip("\r") for line in lines if line.strip()] or None

    def list(self) -> builtins.list[StoredSession]:
        found: builtins.list[StoredSession] = []
        files = [*self._root.glob("*.jsonl"), *self._root.glob("*/*.jsonl")]
        for path in files:
            info = _describe(path)
            if info is not None:
                found.append(info)
        found.sort(key=lambda info: info.modified, reverse=True)
        return found

    def delete(self, session_id: str) -> bool:
        path = self._find(session_id)
        if path is None:
            return False
        path.unlink(missing_ok=True)
        self._paths.pop(session_id, None)
        self._seen.pop(path, None)
        return True


def _collect_id(raw: bytes, known: set[str]) -> None:
    if not raw.strip():
        return
    try:
        obj: Any = json.loads(raw)
    except ValueError:
        return
    if isinstance(obj, dict) and obj.get("type") != "session" and isinstance(obj.get("id"), str):
        known.add(obj["id"])


def _describe(path: Path) -> StoredSession | None:
    try:
        with open(path, "rb") as f:
            first = f.readline()
            rest = sum(1 for raw in f if raw.strip())
        modified = path.stat().st_mtime
    except OSError:
        return None
    try:
        obj: Any = json.loads(first)
    except ValueError:
        return None
    if not isinstance(obj, dict) or obj.get("type") != "session" or not isinstance(obj.get("id"), str):
        return None
    return StoredSession(
        id=obj["id"],
        cwd=obj.get("cwd") if isinstance(obj.get("cwd"), str) else "",
        timestamp=obj.get("timestamp") if isinstance(obj.get("timestamp"), str) else "",
        entries=rest,
        modified=modified,
        location=str(path),
        parent_session=obj.get("parentSession") if isinstance(obj.get("parentSession"), str) else None,
    )
