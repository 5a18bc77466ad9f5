"""The fake Anthropic Messages server both agents talk to, scripted run by run."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

__all__ = ["BenchServer"]

_PROCESS = Path(__file__).with_name("_server_process.py")


class BenchServer:
    """A :class:`~tests.fakeservers.AnthropicServer` on 127.0.0.1, scripted before every run.

    The server runs in a process of its own (``_server_process.py``), so that nothing the
    runner does while reading an agent's output can delay a model reply.

    The fake server answers requests from a queue, in order. A run that makes fewer requests
    than scripted (an agent that stopped early) would leave replies behind for the next run, so
    :meth:`settle` checks the count after each run and, on a mismatch, replaces the server with a
    fresh one (on a new port: ``on_restart`` rewrites the agents' ``models.json``).

    :param on_restart: called with the new base URL whenever the server is (re)started.
    """

    def __init__(self, on_restart: Callable[[str], None]) -> None:
        self._on_restart = on_restart
        self._process: subprocess.Popen[str] | None = None
        self._base_url = ""
        self._scripted = 0
        self._start()

    @property
    def base_url(self) -> str:
        return self._base_url

    def script(self, *steps: dict[str, Any]) -> None:
        """Queue the replies of the next run (``AnthropicServer.render`` step dicts)."""
        self._call({"op": "script", "steps": list(steps)})
        self._scripted += len(steps)

    def settle(self) -> str | None:
        """End a run: ``None`` if it made exactly the scripted requests, else what went wrong."""
        received = self._call({"op": "settle"})["received"]
        scripted = self._scripted
        self._scripted = 0
        if received == scripted:
            return None
        self.close()
        self._start()
        return f"the agent made {received} model requests, the workload scripted {scripted}"

    def close(self) -> None:
        if self._process is not None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            if self._process.stdout is not None:
                self._process.stdout.close()
            self._process = None

    def _start(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, str(_PROCESS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._base_url = self._read()["base_url"]
        self._scripted = 0
        self._on_restart(self._base_url)

    def _call(self, command: dict[str, Any]) -> dict[str, Any]:
        assert self._process is not None and self._process.stdin is not None
        self._process.stdin.write(json.dumps(command) + "\n")
        self._process.stdin.flush()
        answer = self._read()
        if "error" in answer:
            raise RuntimeError(f"the fake server refused {command['op']!r}: {answer['error']}")
        return answer

    def _read(self) -> dict[str, Any]:
        assert self._process is not None
        stdout: IO[str] | None = self._process.stdout
        assert stdout is not None
        line = stdout.readline()
        if not line:
            code = self._process.wait()
            raise RuntimeError(f"the fake server process exited (code {code}); its stderr is above")
        answer: dict[str, Any] = json.loads(line)
        return answer
