"""Problems found while loading resources, reported instead of raised."""

from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["ResourceCollision", "ResourceDiagnostic", "collision_diagnostic", "diagnostic"]


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


def diagnostic(
    type: Literal["warning", "error"], message: str, path: str | os.PathLike[str]
) -> ResourceDiagnostic:
    """A warning or error about ``path``."""
    return ResourceDiagnostic(type=type, message=message, path=os.fspath(path))


def collision_diagnostic(
    resource_type: Literal["skill", "prompt"],
    name: str,
    winner_path: str,
    loser_path: str,
    *,
    shown_as: str | None = None,
) -> ResourceDiagnostic:
    """``loser_path`` also claims ``name``, which ``winner_path`` (found first) keeps.

    :param shown_as: the name as pi's message spells it (``"/review"`` for a prompt).
    """
    return ResourceDiagnostic(
        type="collision",
        message=f'name "{shown_as or name}" collision',
        path=loser_path,
        collision=ResourceCollision(
            resource_type=resource_type, name=name, winner_path=winner_path, loser_path=loser_path
        ),
    )
