"""Session listings for resume pickers, reading as little of each file as possible.

pi reads every file whole to list it. Here a listing reads the header, the lines up to the
first user message, the last ``session_info`` line (found by a byte search from the end) and
the last few lines (for the time of last activity), and counts message lines with a byte
search. The text of all messages, which pi gathers for searching, is read only on request
(:meth:`SessionInfo.read_all_messages_text`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ._entries import SessionHeader, iso_to_ms
from ._index import ROLE, TYPE, FileIndex, read_header
from ._paths import sessions_root

__all__ = [
    "SessionInfo",
    "find_most_recent_session",
    "list_all_sessions",
    "list_sessions",
    "read_session_info",
]

_BLOCK = 1024 * 1024
_MESSAGE_LINE = b'\n{"type":"message",'
_PI_LINE = b'{"type":"'
_PI_MESSAGE_LINE = b'{"type":"message"'


@dataclass(slots=True)
class SessionInfo:
    """What a resume picker shows about one session file.

    :ivar first_message: the text of the first user message, ``"(no messages)"`` if none.
    :ivar modified: the time of the last user or assistant message (else the header's time,
        else the file's modification time).
    """

    path: Path
    id: str
    cwd: str
    name: str | None
    parent_session_path: str | None
    created: datetime
    modified: datetime
    message_count: int
    first_message: str

    def read_all_messages_text(self) -> str:
        """The text of every user and assistant message, joined by spaces (reads the file)."""
        texts = []
        for message in _messages(self.path):
            text = _message_text(message)
            if text:
                texts.append(text)
        return " ".join(texts)


def _to_datetime(millis: int) -> datetime:
    return datetime.fromtimestamp(millis / 1000, tz=UTC)


def _message_text(message: dict[str, Any]) -> str:
    if message.get("role") not in ("user", "assistant"):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            block["text"]
            for block in content
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
        )
    return ""


def _messages(path: Path) -> Iterator[dict[str, Any]]:
    with open(path, "rb") as f:
        for raw in f:
            if raw.startswith(_PI_LINE) and not raw.startswith(_PI_MESSAGE_LINE):
                continue
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            if (
                isinstance(obj, dict)
                and obj.get("type") == "message"
                and isinstance(obj.get("message"), dict)
            ):
                yield obj["message"]


def _count(f: Any, needle: bytes, start: int) -> int:
    total = 0
    f.seek(start)
    tail = b"\n"  # the header's line end precedes the first entry line
    while True:
        block = f.read(_BLOCK)
        if not block:
            return total
        data = tail + block
        total += data.count(needle)
        # A needle straddling the boundary starts in these bytes; one wholly inside them
        # cannot exist (they are one byte shorter), so nothing is counted twice.
        tail = data[-(len(needle) - 1) :]


def _first_user_text(f: Any, start: int) -> str:
    f.seek(start)
    for raw in f:
        if (raw.startswith(_PI_LINE) and not raw.startswith(_PI_MESSAGE_LINE)) or not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(obj, dict) or obj.get("type") != "message":
            continue
        message = obj.get("message")
        if isinstance(message, dict) and message.get("role") == "user":
            text = _message_text(message)
            if text:
                return text
    return ""


def read_session_info(path: str | os.PathLike[str]) -> SessionInfo | None:
    """Describe one session file cheaply; None if it is not a readable session file."""
    file = Path(path)
    try:
        with open(file, "rb") as f:
            stat = os.fstat(f.fileno())
            found = read_header(f, lambda message, offset: None)
            if found is None:
                return None
            header, start = found
            first = _first_user_text(f, start)
            count = _count(f, _MESSAGE_LINE, start)
        index = FileIndex(file, start, stat.st_size, lambda message, offset: None)
        name_entry = index.last_of_type("session_info")
        name = getattr(name_entry, "name", None)
        modified = _last_activity(index, header, stat.st_mtime)
    except OSError:
        return None
    return SessionInfo(
        path=file,
        id=header.id,
        cwd=header.cwd,
        name=(name or "").strip() or None,
        parent_session_path=header.parent_session,
        created=_to_datetime(iso_to_ms(header.timestamp)),
        modified=modified,
        message_count=count,
        first_message=first or "(no messages)",
    )


def _last_activity(index: FileIndex, header: SessionHeader, mtime: float) -> datetime:
    with index.reading():
        for slot in index.slots_from_end():
            if slot[TYPE] != "message" or slot[ROLE] not in ("user", "assistant", None):
                continue
            entry = index.parse_slot(slot)
            message = getattr(entry, "message", None)
            if message is None or message.role not in ("user", "assistant"):
                continue
            if message.timestamp > 0:
                return _to_datetime(message.timestamp)
    millis = iso_to_ms(header.timestamp)
    return _to_datetime(millis) if millis else datetime.fromtimestamp(mtime, tz=UTC)


def list_sessions(
    directory: str | os.PathLike[str], on_progress: Callable[[int, int], None] | None = None
) -> list[SessionInfo]:
    """The sessions in one directory, most recently active first.

    :param on_progress: called with (files read, files in total) after each file.
    """
    return _sorted(_read_many(_session_files(Path(directory)), on_progress))


def list_all_sessions(
    base: str | os.PathLike[str] | None = None, on_progress: Callable[[int, int], None] | None = None
) -> list[SessionInfo]:
    """The sessions of every project under ``<agent dir>/sessions``, most recent first."""
    root = sessions_root(base)
    files: list[Path] = []
    try:
        directories = sorted(p for p in root.iterdir() if p.is_dir())
    except OSError:
        return []
    for directory in directories:
        files.extend(_session_files(directory))
    return _sorted(_read_many(files, on_progress))


def _session_files(directory: Path) -> list[Path]:
    try:
        return sorted(p for p in directory.iterdir() if p.name.endswith(".jsonl") and p.is_file())
    except OSError:
        return []


def _read_many(files: list[Path], on_progress: Callable[[int, int], None] | None) -> list[SessionInfo]:
    infos = []
    for done, file in enumerate(files, 1):
        info = read_session_info(file)
        if info is not None:
            infos.append(info)
        if on_progress is not None:
            on_progress(done, len(files))
    return infos


def _sorted(infos: list[SessionInfo]) -> list[SessionInfo]:
    return sorted(infos, key=lambda info: info.modified, reverse=True)


def find_most_recent_session(directory: str | os.PathLike[str]) -> Path | None:
    """The most recently modified ``.jsonl`` file in ``directory`` that starts with a session
    header (pi's rule for ``--continue``), or None."""
    best: tuple[float, Path] | None = None
    for file in _session_files(Path(directory)):
        try:
            with open(file, "rb") as f:
                if read_header(f, lambda message, offset: None) is None:
                    continue
                mtime = os.fstat(f.fileno()).st_mtime
        except OSError:
            continue
        if best is None or mtime > best[0]:
            best = (mtime, file)
    return best[1] if best else None
