"""A broken stdio "MCP server" that writes garbage on stdout and never answers.

``python garbage.py [--name NAME] [--at-exit]``: three non-JSON lines at once, or
(``--at-exit``) only when stdin closes, that is after the client has given up waiting for
it; the name only marks the process. Standard library
only, so its lines do not wait seconds for the SDK's imports on a loaded machine.
"""

from __future__ import annotations

import sys


def garbage() -> None:
    for _ in range(3):
        sys.stdout.write("garbage instead of JSON-RPC\n")
    sys.stdout.flush()


def main() -> None:
    at_exit = "--at-exit" in sys.argv[1:]
    if not at_exit:
        garbage()
    sys.stdin.read()  # until the client closes the pipe
    if at_exit:
        garbage()


if __name__ == "__main__":
    main()
