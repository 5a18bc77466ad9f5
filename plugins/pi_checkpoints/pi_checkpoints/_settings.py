"""The plugin's ``checkpoints`` section of ``settings.json``."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

__all__ = ["CheckpointSettings"]


class CheckpointSettings(BaseModel):
    """``"checkpoints": {...}`` in ``settings.json``.

    :ivar enabled: record checkpoints at all.
    :ivar git_snapshots: in a git work tree, snapshot the tracked and untracked-but-not-ignored
        files once per turn (so ``bash``'s changes can be restored); off: only the files that
        ``edit``, ``write`` and declaring tools change.
    :ivar git_snapshot_max_files: a repository whose index holds more files than this gets no
        snapshots (each costs about as much as ``git status``, every turn that writes): only
        the files of ``edit``, ``write`` and declaring tools are kept there.
    :ivar max_file_bytes: a file larger than this is not kept (an untracked one is left out
        of snapshots; an edited one is noted, and restoring it is refused).
    :ivar max_store_bytes: the size cap of the checkpoint store (blobs and snapshot objects,
        under ``<agent dir>/checkpoints``); the oldest content is pruned beyond it.
    :ivar max_age_days: content older than this is pruned.
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    enabled: bool = True
    git_snapshots: bool = True
    git_snapshot_max_files: int = Field(default=100_000, ge=0)
    max_file_bytes: int = Field(default=10 << 20, ge=0)
    max_store_bytes: int = Field(default=2 << 30, ge=0)
    max_age_days: float = Field(default=30, gt=0)
