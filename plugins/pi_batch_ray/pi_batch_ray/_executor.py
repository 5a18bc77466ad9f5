"""The Ray executor: each attempt a Ray task, at most ``concurrency`` in flight."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import re
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pi_host import BatchExecutor, BatchExecutorError, BatchResult

if TYPE_CHECKING:
    from types import ModuleType

    from pi_host import BatchAttempt, BatchRun

__all__ = [
    "CANCEL_GRACE_S",
    "PROBE_TIMEOUT_S",
    "RayExecutor",
    "forwarded_environ",
    "import_ray",
    "probe_address",
]

CANCEL_GRACE_S = 15.0
"""How long cancelled attempts may take to end (``run_batch_task`` gives its process 5 s after
SIGTERM) before their workers are killed (``ray.cancel(force=True)``)."""

PROBE_TIMEOUT_S = 5.0
"""How long the cluster address may take to accept a TCP connection before the batch gives up."""

_HOST_PORT = re.compile(r"(?:ray://)?(?P<host>\[[^\]]+\]|[^:/]+):(?P<port>\d+)")
# What the agents on a cluster need from the coordinator's environment: pi-host's own
# settings and the providers' keys. The rest (PATH, HOME, the virtualenv) is the node's.
_FORWARDED = re.compile(r"PI_HOST_\w+|\w+_API_KEY|\w+_TOKEN")


def import_ray() -> ModuleType:
    """Import Ray with its ``uv run`` integration off unless the user turned it on.

    When the driver runs under ``uv run``, Ray (2.43 and later) uploads the current folder and
    starts every worker with ``uv run`` in a copy of it, which breaks workers in a uv
    workspace and ships the user's folder to the cluster. pi-host's workers need only
    pi-host installed; ``RAY_ENABLE_UV_RUN_RUNTIME_ENV=1`` turns Ray's behaviour back on.
    Ray reads the variable once, at import.
    """
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    import ray

    return ray


def forwarded_environ(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables a cluster's workers get from the coordinator: ``PI_HOST_*``, ``*_API_KEY``
    and ``*_TOKEN`` (Ray's own ``RAY_*`` excepted)."""
    source = os.environ if environ is None else environ
    return {
        name: value
        for name, value in source.items()
        if _FORWARDED.fullmatch(name) and not name.startswith("RAY_")
    }


class RayExecutor(BatchExecutor):
    """Runs each attempt as a Ray task (:func:`pi_batch_ray._worker.run_attempt`).

    :param address: a cluster to join (``HOST:PORT`` of the head's GCS, ``ray://HOST:10001``
        for Ray Client, ``auto`` for the cluster ``ray start`` runs on this machine). ``None``
        joins ``RAY_ADDRESS`` when it is set, and otherwise starts a local Ray instance with a
        CPU for each of ``--concurrency`` tasks (at least one per core).
    :param cpus_per_task: the CPUs each task holds on its node (Ray's ``num_cpus``); a node
        runs at most its CPUs / ``cpus_per_task`` agents at once.

    When Ray is already initialised in this process (a program that called ``ray.init``),
    that connection is used and left open. Otherwise the first :meth:`map` connects (or
    starts the local instance), and :meth:`aclose` disconnects (and stops it).
    """

    def __init__(self, address: str | None = None, *, cpus_per_task: float = 1.0) -> None:
        self.address = address
        self.cpus_per_task = cpus_per_task
        self._ray: ModuleType | None = None
        self._owner: _Owner | None = None
        self._remote: Any = None

    async def map(
        self, attempts: Sequence[BatchAttempt], run: BatchRun, *, concurrency: int
    ) -> AsyncIterator[BatchResult]:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, not {concurrency}")
        ray = await self._connect(concurrency)
        remote = self._remote_function(ray)
        run_json = run.model_dump(mode="json")
        waiting = iter(attempts)
        # Each Ray result as an asyncio future: ray.ObjectRef.future() is a
        # concurrent.futures.Future that Ray completes from its own thread.
        running: dict[asyncio.Future[Any], tuple[Any, BatchAttempt, float]] = {}
        try:
            while True:
                while len(running) < concurrency:
                    attempt = next(waiting, None)
                    if attempt is None:
                        break
                    ref = remote.remote(attempt.model_dump(mode="json"), run_json)
                    running[asyncio.wrap_future(ref.future())] = (ref, attempt, time.monotonic())
                if not running:
                    return
                done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for future in done:
                    _, attempt, started = running.pop(future)
                    yield _result(future, attempt, started)
        finally:
            if running:
                import anyio

                # The coordinator closes this iterator on Ctrl+C from a cancelled scope; the
                # tasks must be gone before the close returns.
                with anyio.CancelScope(shield=True):
                    await _cancel(ray, running)

    async def aclose(self) -> None:
        """Disconnect from the cluster (stopping the local instance) if :meth:`map` connected."""
        owner, self._owner = self._owner, None
        if owner is not None:
            import anyio

            with anyio.CancelScope(shield=True):
                await asyncio.wrap_future(owner.stop())

    async def _connect(self, concurrency: int) -> ModuleType:
        if self._ray is not None and self._ray.is_initialized():
            return self._ray
        import anyio

        ray = await anyio.to_thread.run_sync(import_ray)
        self._ray = ray
        if not ray.is_initialized():
            self._owner = _Owner(ray, lambda: self._init(ray, concurrency))
            await asyncio.wrap_future(self._owner.start_ray())
        return ray

    def _init(self, ray: ModuleType, concurrency: int) -> None:
        address = self.address or os.environ.get("RAY_ADDRESS") or None
        # Ray's log lines (its start, token authentication, "SIGTERM handler is not set")
        # would cut through the progress bar; the tasks' output is in each attempt's .stderr
        # file, Ray's in its session's logs.
        quiet: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": False}
        if address is None:
            cpus = max(os.cpu_count() or 1, int(concurrency * self.cpus_per_task + 0.999))
            # "local": a new instance even when `ray start` runs on this machine (--address auto).
            # Its workers inherit this environment; only the niceness needs saying.
            job = {"env_vars": _niceness()}
            ray.init(address="local", num_cpus=cpus, include_dashboard=False, runtime_env=job, **quiet)
            return
        probe_address(address)
        try:
            job = {"env_vars": {**forwarded_environ(), **_niceness()}}
            ray.init(address=address, runtime_env=job, **quiet)
        except (ConnectionError, ValueError, RuntimeError) as exc:
            raise BatchExecutorError(
                f"cannot join the Ray cluster at {address!r}: {exc}. Check that `ray status "
                f"--address {address}` works from this machine (the head's GCS address, or "
                "ray://HOST:10001 for Ray Client), or leave --address out for a local instance"
            ) from exc

    def _remote_function(self, ray: ModuleType) -> Any:
        if self._remote is None:
            from ._worker import run_attempt

            # No Ray-level retries: the coordinator retries infrastructure failures itself and
            # numbers the attempts.
            self._remote = ray.remote(num_cpus=self.cpus_per_task, max_retries=0)(run_attempt)
        return self._remote


def _niceness() -> dict[str, str]:
    """Ray runs its workers at niceness 15 (``worker_niceness``), and each task's ``pi-host``
    would inherit it: on a busy node the agents, which are the work, would get the CPU last
    (half the local pool's tasks/min on a loaded machine). They run at 0, as with the local
    pool, unless ``RAY_worker_niceness`` says otherwise."""
    return {"RAY_worker_niceness": os.environ.get("RAY_worker_niceness", "0")}  # noqa: SIM112 - Ray spells it so


class _Owner(threading.Thread):
    """The thread that calls ``ray.init`` and, at the end, ``ray.shutdown``, alive in between.

    Ray starts a local instance's processes (GCS, raylet) with ``PR_SET_PDEATHSIG``, which
    Linux fires when the *thread* that started them exits: started from a pool thread, the
    instance is killed as soon as the pool retires that thread, and the batch hangs.
    """

    def __init__(self, ray: ModuleType, init: Callable[[], None]) -> None:
        super().__init__(name="pi-batch-ray", daemon=True)
        self._ray = ray
        self._init = init
        self._ray_started: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._ray_stopped: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._stop_asked = threading.Event()

    def start_ray(self) -> concurrent.futures.Future[None]:
        # Running futures cannot be cancelled: a batch cancelled while Ray starts still gets
        # its shutdown once `ray.init` returns.
        self._ray_started.set_running_or_notify_cancel()
        self._ray_stopped.set_running_or_notify_cancel()
        self.start()
        return self._ray_started

    def stop(self) -> concurrent.futures.Future[None]:
        """Shut Ray down (once ``ray.init`` has returned, if it is still running)."""
        self._stop_asked.set()
        return self._ray_stopped

    def run(self) -> None:
        try:
            self._init()
        except BaseException as exc:
            self._ray_started.set_exception(exc)
            self._ray_stopped.set_result(None)
            return
        self._ray_started.set_result(None)
        self._stop_asked.wait()
        try:
            self._ray.shutdown()
        except BaseException as exc:
            self._ray_stopped.set_exception(exc)
        else:
            self._ray_stopped.set_result(None)


def probe_address(address: str) -> None:
    """Fail at once for a cluster address nothing listens on (:class:`pi_host.BatchExecutorError`).

    ``ray.init`` retries an unreachable GCS for over a minute, logging each try, before it
    raises; a batch should say what is wrong in seconds.
    """
    match = _HOST_PORT.fullmatch(address)
    if match is None:  # "auto", a bare host for Ray Client's default port ...: Ray decides
        return
    host, port = match["host"].strip("[]"), int(match["port"])
    try:
        socket.create_connection((host, port), timeout=PROBE_TIMEOUT_S).close()
    except OSError as exc:
        raise BatchExecutorError(
            f"nothing answers at the Ray cluster address {address!r} ({exc.strerror or exc}); "
            "start the head with `ray start --head` and pass the address it prints (HOST:6379, "
            "or ray://HOST:10001 for Ray Client), or leave --address out for a local instance"
        ) from exc


def _result(future: asyncio.Future[Any], attempt: BatchAttempt, started: float) -> BatchResult:
    error = future.exception()
    if error is None:
        return BatchResult.model_validate(future.result())
    return _infrastructure_failure(attempt, started, _describe(error))


def _describe(error: BaseException) -> str:
    """One line: the task's own exception for a RayTaskError, Ray's first line otherwise."""
    cause = getattr(error, "cause", None)
    if isinstance(cause, BaseException):
        return f"the Ray task raised {type(cause).__name__}: {cause}"
    first = (str(error).strip().splitlines() or [""])[0]
    return f"Ray could not run the task ({type(error).__name__}): {first}"


def _infrastructure_failure(attempt: BatchAttempt, started: float, error: str) -> BatchResult:
    return BatchResult.failed(
        attempt, error, infrastructure=True, seconds=round(time.monotonic() - started, 3)
    )


async def _cancel(
    ray: ModuleType, running: dict[asyncio.Future[Any], tuple[Any, BatchAttempt, float]]
) -> None:
    """Cancel the running tasks and wait until each has ended.

    A plain ``ray.cancel`` raises KeyboardInterrupt in the task, and ``run_batch_task`` returns
    only once its ``pi-host`` process is gone; a task that does not end within
    :data:`CANCEL_GRACE_S` has its worker killed.
    """
    for ref, _, _ in running.values():
        ray.cancel(ref, force=False)
    _, left = await asyncio.wait(running, timeout=CANCEL_GRACE_S)
    if not left:
        return
    for future in left:
        ray.cancel(running[future][0], force=True)
    await asyncio.wait(left, timeout=CANCEL_GRACE_S)
