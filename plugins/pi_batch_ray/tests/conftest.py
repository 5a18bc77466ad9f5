"""One real local Ray instance per test module: ``ray.init`` with 2 CPUs, shut down afterwards.

Starting Ray is most of these tests' time (seconds), so a module shares one instance. The
``pi-host batch`` subprocesses join it with ``--address`` as a second driver, the way a
coordinator joins a cluster. Token authentication is on (Ray's default for a new local
instance) with a token of the test's own in ``RAY_AUTH_TOKEN``, so nothing is written to
``~/.ray`` and the subprocesses can join.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from pi_batch_ray._executor import import_ray

# One token for the whole test run: Ray keeps the first token a process loads, so a second
# module's instance with a token of its own would refuse this process's client.
_TOKEN = uuid.uuid4().hex


@dataclass(frozen=True)
class RayInstance:
    """The running instance: its GCS ``address`` (for ``--address``) and how long it took to start."""

    ray: Any
    address: str
    startup_seconds: float


@pytest.fixture(scope="module")
def ray_instance() -> Iterator[RayInstance]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_AUTH_MODE", "token")
        patch.setenv("RAY_AUTH_TOKEN", _TOKEN)
        ray = import_ray()
        started = time.monotonic()
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            logging_level=logging.WARNING,
            log_to_driver=False,
            # The in-process executor tests' agents at normal priority, as pi-host batch runs them.
            runtime_env={"env_vars": {"RAY_worker_niceness": "0"}},
        )
        try:
            seconds = time.monotonic() - started
            print(f"Ray {ray.__version__} started in {seconds:.1f} s")
            yield RayInstance(ray, ray.get_runtime_context().gcs_address, seconds)
        finally:
            ray.shutdown()
