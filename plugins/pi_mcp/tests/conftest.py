"""Fixtures for pi-mcp: real MCP servers (tests/servers/demo.py) over stdio and HTTP."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SERVER = Path(__file__).parent / "servers" / "demo.py"
GARBAGE = Path(__file__).parent / "servers" / "garbage.py"


def stdio_server(name: str = "demo", *args: str, **extra: Any) -> dict[str, Any]:
    """A ``.mcp.json`` entry for the demo server over stdio."""
    return {"command": sys.executable, "args": [str(SERVER), "--name", name, *args], **extra}


def garbage_server(name: str = "junk", *args: str) -> dict[str, Any]:
    """A ``.mcp.json`` entry for servers/garbage.py: non-JSON on stdout, never an answer."""
    return {"command": sys.executable, "args": [str(GARBAGE), "--name", name, *args]}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for our purpose; /proc tells them apart on Linux.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return True


def children_of(pid: int) -> list[int]:
    """Live child processes of *pid* (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(") ", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


class Demo:
    """The helpers, as a fixture (test modules cannot import this conftest by name)."""

    server = SERVER
    stdio = staticmethod(stdio_server)
    garbage = staticmethod(garbage_server)
    pid_alive = staticmethod(pid_alive)
    children_of = staticmethod(children_of)
    free_port = staticmethod(free_port)


@pytest.fixture(scope="session")
def demo() -> Demo:
    return Demo()


def _serve(kind: str, name: str, path: str, *args: str) -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "--name", name, f"--{kind}", str(port), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the {kind} MCP server did not start") from None
                time.sleep(0.1)  # polling for the port to open, not standing in for a result
        yield f"http://127.0.0.1:{port}{path}"
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(scope="session")
def http_server() -> Iterator[str]:
    """The demo server over streamable HTTP on 127.0.0.1, for the whole test session."""
    yield from _serve("http", "remote", "/mcp")


@pytest.fixture
def growing_http_server() -> Iterator[str]:
    """The demo server over streamable HTTP with ``--grow`` (its tools change), for one test."""
    yield from _serve("http", "growing", "/mcp", "--grow")


@pytest.fixture(scope="session")
def sse_server() -> Iterator[str]:
    """The demo server over SSE on 127.0.0.1."""
    yield from _serve("sse", "legacy", "/sse")
