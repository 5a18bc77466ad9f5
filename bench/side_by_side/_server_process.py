"""The fake model server's own process: JSON commands on stdin, JSON answers on stdout.

Run by :class:`._server.BenchServer`. The server gets a process (and a GIL) of its own so
that the runner's threads, which read and parse the agents' output, never delay a reply: with
both in one process, every event line the runner parsed held up the next model response.

The first line written is ``{"base_url": ...}``. Then, one command per line:
``{"op": "script", "steps": [...]}`` queues replies (``AnthropicServer.render`` steps) and
answers ``{}``; ``{"op": "settle"}`` answers ``{"received": n}``, the number of requests
since the previous settle. The process ends when stdin closes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.fakeservers import AnthropicServer


def _answer(payload: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(payload) + "\n")
    sys.stdout.flush()


def main() -> None:
    with AnthropicServer() as server:
        _answer({"base_url": server.base_url})
        for line in sys.stdin:
            command = json.loads(line)
            if command["op"] == "script":
                server.enqueue(*command["steps"])
                _answer({})
            elif command["op"] == "settle":
                received = len(server.requests)
                server.requests.clear()
                _answer({"received": received})
            else:
                _answer({"error": f"unknown op {command['op']!r}"})


if __name__ == "__main__":
    main()
