"""A small per-session cache that keeps resuming cheap: settings at compactions, entry ids.

Resolving a session's thinking level and model means finding the last ``thinking_level_change``
and the last ``model_change`` or assistant message on the path to the leaf. pi records the
thinking level once, at the root, so in a long session that walk would cross the whole file,
defeating a resume that reads only the branch since the last compaction. The settings in force
at a compaction depend only on the entries above it, which an append-only file never changes, so
they are worked out once and kept here, keyed by the compaction's id and a checksum of its line.

The first append after a resume must pick an entry id no line of the file uses, which means
knowing the ids of lines the resume never read. They are gathered once by a pattern search and
kept here too, with the file offset they cover and a checksum of the bytes before it; an
append-only file can only add ids after that offset.

The cache is an optimisation: a missing, stale or unreadable cache file only costs the walk.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._context import ModelRef

__all__ = ["ResolvedSettings", "ResumeCache"]

logger = logging.getLogger("pi_host.session")

_FORMAT = 1
_KEEP = 64


@dataclass(frozen=True, slots=True)
class ResolvedSettings:
    """The thinking level and model resolved at some entry of a session."""

    thinking_level: str | None  # None: no thinking_level_change above
    model: ModelRef | None


class ResumeCache:
    """The resume cache of one session, stored as ``<directory>/<session id>.json``.

    The file's ``checkpoints`` key (its name since format 1) maps compaction keys to the
    settings in force there; ``ids`` holds the harvested entry ids.
    """

    def __init__(self, directory: Path, session_id: str) -> None:
        self._path = directory / f"{session_id}.json"
        self._data: dict[str, Any] | None = None

        self._ids: dict[str, Any] | None = None

    def _load(self) -> dict[str, Any]:
        if self._data is None:
            data: dict[str, Any] = {}
            ids: dict[str, Any] = {}
            try:
                loaded = json.loads(self._path.read_text("utf-8"))
                if isinstance(loaded, dict) and loaded.get("format") == _FORMAT:
                    checkpoints = loaded.get("checkpoints")
                    if isinstance(checkpoints, dict):
                        data = checkpoints
                    if isinstance(loaded.get("ids"), dict):
                        ids = loaded["ids"]
            except (OSError, ValueError):
                pass
            self._data = data
            self._ids = ids
        return self._data

    def get_ids(self) -> tuple[int, int, set[bytes]] | None:
        """The cached entry ids: (offset they cover up to, checksum of the 256 bytes before
        that offset, ids), if any."""
        self._load()
        record = self._ids or {}
        end, crc, text = record.get("end"), record.get("crc"), record.get("ids")
        if not (isinstance(end, int) and isinstance(crc, int) and isinstance(text, str)):
            return None
        return end, crc, set(text.encode("utf-8").split(b"\n")) if text else set()

    def put_ids(self, end: int, crc: int, ids: set[bytes]) -> None:
        """Record the ids of the lines before offset ``end`` and save the cache."""
        self._load()
        self._ids = {"end": end, "crc": crc, "ids": b"\n".join(ids).decode("utf-8", errors="replace")}
        self._save()

    def get(self, key: str) -> ResolvedSettings | None:
        """The settings recorded for compaction ``key``, if any."""
        record = self._load().get(key)
        if not isinstance(record, dict):
            return None
        thinking = record.get("thinkingLevel")
        model = record.get("model")
        if thinking is not None and not isinstance(thinking, str):
            return None
        if model is not None:
            if not (isinstance(model, list) and len(model) == 2 and all(isinstance(p, str) for p in model)):
                return None
            return ResolvedSettings(thinking, ModelRef(model[0], model[1]))
        return ResolvedSettings(thinking, None)

    def put(self, records: dict[str, ResolvedSettings]) -> None:
        """Record settings for compactions and save the cache file (errors only logged)."""
        data = self._load()
        for key, settings in records.items():
            data.pop(key, None)
            data[key] = {
                "thinkingLevel": settings.thinking_level,
                "model": [settings.model.provider, settings.model.model_id] if settings.model else None,
            }
        while len(data) > _KEEP:
            del data[next(iter(data))]
        self._save()

    def _save(self) -> None:
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=self._path.parent, prefix=".tmp-", suffix=".json")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump({"format": _FORMAT, "checkpoints": self._data, "ids": self._ids}, f)
                os.replace(temp, self._path)
            except BaseException:
                os.unlink(temp)
                raise
        except OSError as error:
            logger.debug("could not save the session resume cache to %s: %s", self._path, error)
