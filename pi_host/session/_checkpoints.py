"""A small cache of the settings in force at each compaction of a session.

Resolving a session's thinking level and model means finding the last ``thinking_level_change``
and the last ``model_change`` or assistant message on the path to the leaf. pi records the
thinking level once, at the root, so in a long session that walk would cross the whole file,
defeating a resume that reads only the branch since the last compaction. The settings in force
at a compaction depend only on the entries above it, which an append-only file never changes, so
they are worked out once and kept here, keyed by the compaction's id and a checksum of its line.

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

__all__ = ["CheckpointCache", "Settings"]

logger = logging.getLogger("pi_host.session")

_FORMAT = 1
_KEEP = 64


@dataclass(frozen=True, slots=True)
class Settings:
    """The thinking level and model resolved at some entry of a session."""

    thinking_level: str | None  # None: no thinking_level_change above
    model: ModelRef | None


class CheckpointCache:
    """Checkpoints of one session, stored as ``<directory>/<session id>.json``."""

    def __init__(self, directory: Path, session_id: str) -> None:
        self._path = directory / f"{session_id}.json"
        self._data: dict[str, Any] | None = None

    def _load(self) -> dict[str, Any]:
        if self._data is None:
            data: dict[str, Any] = {}
            try:
                loaded = json.loads(self._path.read_text("utf-8"))
                if isinstance(loaded, dict) and loaded.get("format") == _FORMAT:
                    checkpoints = loaded.get("checkpoints")
                    if isinstance(checkpoints, dict):
                        data = checkpoints
            except (OSError, ValueError):
                pass
            self._data = data
        return self._data

    def get(self, key: str) -> Settings | None:
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
            return Settings(thinking, ModelRef(model[0], model[1]))
        return Settings(thinking, None)

    def put(self, records: dict[str, Settings]) -> None:
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
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=self._path.parent, prefix=".tmp-", suffix=".json")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump({"format": _FORMAT, "checkpoints": data}, f)
                os.replace(temp, self._path)
            except BaseException:
                os.unlink(temp)
                raise
        except OSError as error:
            logger.debug("could not save session checkpoints to %s: %s", self._path, error)
