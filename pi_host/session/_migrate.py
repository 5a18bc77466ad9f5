"""Bring session files of format versions 1 and 2 to version 3, as pi does on load.

Migration works on the parsed JSON objects in file order (header first) and changes them in
place, so that writing them back with the JavaScript-compatible encoder gives the bytes pi's
own migration writes (new keys land at the end of an object, as in JavaScript).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from ._entries import CURRENT_SESSION_VERSION

__all__ = ["migrate_entries", "new_entry_id", "session_version"]


def new_entry_id(taken: Callable[[str], bool]) -> str:
    """An 8-hex-digit entry id not yet ``taken`` (pi's rule), or a full UUID after 100 clashes."""
    for _ in range(100):
        candidate = uuid.uuid4().hex[:8]
        if not taken(candidate):
            return candidate
    return str(uuid.uuid4())


def session_version(entries: list[dict[str, Any]]) -> int:
    """The format version of a file's objects: the header's ``version``, 1 when absent."""
    for entry in entries:
        if entry.get("type") == "session":
            version = entry.get("version")
            return version if isinstance(version, int) else 1
    return 1


def migrate_entries(entries: list[dict[str, Any]]) -> bool:
    """Migrate a file's objects (header included, in file order) to the current version.

    Version 1 files are linear: each entry gets an 8-hex-digit ``id`` and the previous entry's
    id as ``parentId``, and a compaction's ``firstKeptEntryIndex`` (an index into the file's
    lines) becomes ``firstKeptEntryId``. Version 2 files call the custom message role
    ``hookMessage``; version 3 calls it ``custom``.

    :returns: whether anything was changed (the file then needs rewriting).
    """
    version = session_version(entries)
    if version >= CURRENT_SESSION_VERSION:
        return False
    if version < 2:
        _v1_to_v2(entries)
    _v2_to_v3(entries)
    return True


def _v1_to_v2(entries: list[dict[str, Any]]) -> None:
    ids: set[str] = set()
    previous: str | None = None
    for entry in entries:
        if entry.get("type") == "session":
            entry["version"] = 2
            continue
        entry["id"] = new_entry_id(ids.__contains__)
        ids.add(entry["id"])
        entry["parentId"] = previous
        previous = entry["id"]
        if entry.get("type") == "compaction":
            index = entry.get("firstKeptEntryIndex")
            if isinstance(index, int | float) and not isinstance(index, bool):
                # As in pi, an index pointing at a later line finds no id yet and is dropped.
                in_range = float(index).is_integer() and 0 <= index < len(entries)
                target = entries[int(index)] if in_range else None
                if target is not None and target.get("type") != "session" and "id" in target:
                    entry["firstKeptEntryId"] = target["id"]
                del entry["firstKeptEntryIndex"]


def _v2_to_v3(entries: list[dict[str, Any]]) -> None:
    for entry in entries:
        if entry.get("type") == "session":
            entry["version"] = 3
        elif entry.get("type") == "message":
            message = entry.get("message")
            if isinstance(message, dict) and message.get("role") == "hookMessage":
                message["role"] = "custom"
