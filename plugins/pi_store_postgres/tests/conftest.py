"""A real PostgreSQL server for the tests: ``initdb`` in a temporary directory, started on
127.0.0.1 on a free port, stopped at the end of the session.

PostgreSQL refuses to run as root, so as root the server runs as ``nobody`` (through
``runuser``). ``scripts/test.sh`` installs the distribution's PostgreSQL packages in CI when
``initdb`` is missing; elsewhere a missing server skips these tests, in CI it fails them.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest


def _find(program: str) -> str | None:
    found = shutil.which(program)
    if found:
        return found
    # Debian and Ubuntu keep the server binaries out of PATH.
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{program}"), reverse=True)
    return candidates[0] if candidates else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass(frozen=True)
class PostgresServer:
    """A running server: ``uri(db)`` connects to database ``db`` as superuser ``postgres``."""

    port: int

    def uri(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A fresh, empty database; returns its URI."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.uri(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.uri(name)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    initdb, pg_ctl = _find("initdb"), _find("pg_ctl")
    if initdb is None or pg_ctl is None:
        if os.environ.get("CI") == "true":
            pytest.fail("initdb/pg_ctl not found: scripts/test.sh installs PostgreSQL in CI")
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) are not installed")
    as_root = os.geteuid() == 0
    base = Path(tempfile.mkdtemp(prefix="pi-pg-"))
    data, sockets = base / "data", base / "sock"
    sockets.mkdir()
    prefix: list[str] = []
    if as_root:
        import pwd

        user = pwd.getpwnam("nobody")
        base.chmod(0o755)
        for path in (base, sockets):
            os.chown(path, user.pw_uid, user.pw_gid)
        prefix = ["runuser", "-u", "nobody", "--"]
    env = {**os.environ, "LC_ALL": "C", "TZ": "UTC"}
    subprocess.run(
        [*prefix, initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"],
        check=True,
        capture_output=True,
        env=env,
        cwd=base,
    )
    port = _free_port()
    options = f"-h 127.0.0.1 -p {port} -k {sockets} -c fsync=off -c max_connections=100"
    log = base / "server.log"
    started = subprocess.run(
        [*prefix, pg_ctl, "-D", str(data), "-l", str(log), "-o", options, "-w", "-t", "60", "start"],
        capture_output=True,
        text=True,
        env=env,
        cwd=base,
    )
    if started.returncode != 0:
        detail = log.read_text() if log.exists() else started.stderr
        pytest.fail(f"PostgreSQL did not start:\n{started.stdout}{started.stderr}\n{detail}")
    try:
        yield PostgresServer(port)
    finally:
        subprocess.run(
            [*prefix, pg_ctl, "-D", str(data), "-m", "fast", "-w", "stop"],
            capture_output=True,
            env=env,
            cwd=base,
        )
        shutil.rmtree(base, ignore_errors=True)
