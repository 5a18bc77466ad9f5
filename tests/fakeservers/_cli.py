"""``python -m tests.fakeservers.<format>``: run a fake server from a script file."""

from __future__ import annotations

import argparse
import json
import signal
import threading
from pathlib import Path

from ._server import FakeServer


def main(server_class: type[FakeServer], argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m tests.fakeservers.{server_class.__name__}")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0 picks a free one)")
    parser.add_argument("--script", type=Path, help="JSON file: a list of steps, one per request")
    parser.add_argument(
        "--repeat", action="store_true", help="serve the last step again when the script runs dry"
    )
    args = parser.parse_args(argv)
    steps = json.loads(args.script.read_text()) if args.script else []
    if not isinstance(steps, list):
        parser.error(f"{args.script}: expected a JSON list of steps")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with server_class(steps, port=args.port, repeat=args.repeat) as server:
        print(f"listening on {server.url}", flush=True)
        try:
            stop.wait()
        except KeyboardInterrupt:
            pass
    return 0
