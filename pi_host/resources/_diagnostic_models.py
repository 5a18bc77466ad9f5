"""The models of :mod:`._diagnostics`: created with the first problem a load reports."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["ResourceCollision", "ResourceDiagnostic"]


class ResourceCollision(BaseModel):
    """Two resources claimed one name; the first found wins (pi's precedence order)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    resource_type: Literal["skill", "prompt"]
    name: str
    winner_path: str
    loser_path: str


class ResourceDiagnostic(BaseModel):
    """A warning or error about one resource file, or a name collision between two.

    Loading never stops at a bad file: it is skipped (or loaded with a warning, as pi does for
    lenient skill validation) and described here, for the user interface to show.

    :ivar type: ``"warning"`` (loaded anyway or skipped), ``"error"`` (a configured path is
        missing) or ``"collision"``.
    :ivar message: what is wrong, in pi's words where pi has them.
    :ivar path: the file or directory concerned.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    type: Literal["warning", "error", "collision"]
    message: str
    path: str
    collision: ResourceCollision | None = None

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"
