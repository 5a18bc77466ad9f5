"""Store writes off the event loop: one worker thread at a time per session, in order."""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable

__all__ = ["BackgroundWriter"]

logger = logging.getLogger("pi_host.session")


class BackgroundWriter:
    """Runs write jobs one after another, in the order submitted, on a thread of its own.

    A store's ``append`` is a blocking call (a PostgreSQL round trip and commit, an SQLite
    transaction); run on the event loop, every append of one session stalls every other
    session of the process. The thread is started when a job arrives and ends when none is
    left, so an idle session holds no thread, and it is not a daemon: an interpreter that
    exits waits for the writes already asked for, as it waits for a file's ``write``.
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._jobs: deque[Callable[[], None]] = deque()
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._running = False

    def submit(self, job: Callable[[], None]) -> None:
        """Run ``job`` after the jobs submitted before it. It must not raise: a job that does
        is logged and the next one runs."""
        with self._lock:
            self._jobs.append(job)
            if self._running:
                return
            self._running = True
        threading.Thread(target=self._work, name=self._name).start()

    def _work(self) -> None:
        while True:
            with self._lock:
                if not self._jobs:
                    self._running = False
                    self._idle.notify_all()
                    return
                job = self._jobs.popleft()
            try:
                job()
            except Exception:  # a job reports its own failures; this one broke that promise
                logger.exception("%s: a session write failed unexpectedly", self._name)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until every job submitted so far has run; returns whether they all did
        within ``timeout`` seconds."""
        with self._lock:
            return self._idle.wait_for(lambda: not self._running, timeout)

    @property
    def busy(self) -> bool:
        """Whether jobs are queued or running."""
        with self._lock:
            return self._running
