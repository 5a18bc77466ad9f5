"""The fake Anthropic Messages server both agents talk to, scripted run by run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.fakeservers import AnthropicServer

__all__ = ["BenchServer"]


class BenchServer:
    """One :class:`~tests.fakeservers.AnthropicServer` on 127.0.0.1, scripted before every run.

    The fake server answers requests from a queue, in order. A run that makes fewer requests
    than scripted (an agent that stopped early) would leave replies behind for the next run, so
    :meth:`settle` checks the count after each run and, on a mismatch, replaces the server with a
    fresh one (on a new port: ``on_restart`` rewrites the agents' ``models.json``).

    :param on_restart: called with the new base URL whenever the server is (re)started.
    """

    def __init__(self, on_restart: Callable[[str], None]) -> None:
        self._on_restart = on_restart
        self._server: AnthropicServer | None = None
        self._scripted = 0
        self._start()

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return self._server.base_url

    def script(self, *steps: dict[str, Any]) -> None:
        """Queue the replies of the next run (``AnthropicServer.render`` step dicts)."""
        assert self._server is not None
        self._server.enqueue(*steps)
        self._scripted += len(steps)

    def settle(self) -> str | None:
        """End a run: ``None`` if it made exactly the scripted requests, else what went wrong."""
        assert self._server is not None
        received = len(self._server.requests)
        scripted = self._scripted
        self._server.requests.clear()
        self._scripted = 0
        if received == scripted:
            return None
        self._server.close()
        self._start()
        return f"the agent made {received} model requests, the workload scripted {scripted}"

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None

    def _start(self) -> None:
        self._server = AnthropicServer().start()
        self._on_restart(self._server.base_url)
