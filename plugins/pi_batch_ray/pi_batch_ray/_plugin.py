"""The hook: ``--executor ray`` returns a :class:`RayExecutor` for ``--address``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pi_host import hookimpl

if TYPE_CHECKING:
    from pi_host import BatchExecutor

__all__ = ["pi_batch_executor"]


@hookimpl
def pi_batch_executor(name: str, address: str | None) -> BatchExecutor | None:
    """A :class:`RayExecutor` for ``ray``; None for any other name.

    Nothing connects here: Ray is imported and started in the executor's first ``map``.
    """
    if name != "ray":
        return None
    from ._executor import RayExecutor  # imports no Ray

    return RayExecutor(address)
