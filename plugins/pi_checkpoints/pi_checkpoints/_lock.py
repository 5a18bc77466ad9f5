"""One restore at a time per project: a lock file under ``<agent dir>/checkpoints/locks``."""

from __future__ import annotations

import fcntl
import hashlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["project_lock"]


@contextmanager
def project_lock(
    store_root: Path, project_root: str, on_wait: Callable[[], None] | None = None
) -> Iterator[None]:
    """Hold the restore lock of ``project_root`` (an exclusive ``flock``; the kernel drops it
    when the process dies, so a crashed restore leaves no stale lock).

    :param on_wait: called once, before blocking, when another process holds the lock.
    """
    locks = store_root / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256(project_root.encode()).hexdigest()[:16]
    with open(locks / f"{key}.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait is not None:
                on_wait()
            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
