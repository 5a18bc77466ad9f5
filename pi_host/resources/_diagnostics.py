"""Problems found while loading resources, reported instead of raised.

The models live in :mod:`._diagnostic_models`, imported by the first problem reported: a
start-up whose resources load cleanly creates neither class.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from ._diagnostic_models import ResourceCollision, ResourceDiagnostic

__all__ = ["ResourceCollision", "ResourceDiagnostic", "collision_diagnostic", "diagnostic"]


def diagnostic(
    type: Literal["warning", "error"], message: str, path: str | os.PathLike[str]
) -> ResourceDiagnostic:
    """A warning or error about ``path``."""
    from ._diagnostic_models import ResourceDiagnostic

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
    from ._diagnostic_models import ResourceCollision, ResourceDiagnostic

    return ResourceDiagnostic(
        type="collision",
        message=f'name "{shown_as or name}" collision',
        path=loser_path,
        collision=ResourceCollision(
            resource_type=resource_type, name=name, winner_path=winner_path, loser_path=loser_path
        ),
    )


def __getattr__(name: str) -> Any:
    if name in ("ResourceCollision", "ResourceDiagnostic"):
        return getattr(importlib.import_module(f"{__package__}._diagnostic_models"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
