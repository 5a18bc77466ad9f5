"""The built-in batch executor: ``local``, a pool of ``pi-host`` subprocesses on this machine.

An essential plugin (registered by module path, cannot be disabled). Its ``pi_batch_executor``
runs last, so a plugin may serve ``local`` differently.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pi_host.hookspecs import hookimpl

if TYPE_CHECKING:
    from pi_host.batch import BatchExecutor

__all__ = ["pi_batch_executor"]


@hookimpl(trylast=True)
def pi_batch_executor(name: str, address: str | None) -> BatchExecutor | None:
    """``local``: at most ``--concurrency`` subprocesses at once; ``--address`` is refused."""
    if name != "local":
        return None
    from pi_host.batch import BatchExecutorError, LocalExecutor

    if address is not None:
        raise BatchExecutorError(
            f"the local executor runs on this machine and takes no --address ({address!r}); "
            "leave --address out, or choose an executor that reaches a cluster (--executor ray)"
        )
    return LocalExecutor()
