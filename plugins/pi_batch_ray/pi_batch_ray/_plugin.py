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

    A cluster address is checked here (a TCP connection, within seconds), so a wrong one is
    reported before the batch starts; Ray itself is imported and started in the executor's
    first ``map``.
    """
    if name != "ray":
        return None
    import os

    from ._executor import RayExecutor, probe_address  # they import no Ray

    target = address or os.environ.get("RAY_ADDRESS") or None
    if target is not None:
        probe_address(target)
    return RayExecutor(address)
