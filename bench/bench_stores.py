"""Session stores: appends per second and resume time per store.

Run with ``uv run python bench/bench_stores.py [--sizes 1000,100000] [--postgres URI |
--start-postgres]``; the default run is short (1,000 entries, JSONL files and SQLite).
``--start-postgres`` runs a PostgreSQL server of its own for the run (``initdb`` in a
temporary directory, on 127.0.0.1, fsync on as in production; as root it runs as ``nobody``).
Many concurrent in-process sessions are measured by ``bench/bench_concurrent_sessions.py``.

- *appends/s*: a session manager on the store appends ``size`` messages (user and assistant in
  turn); each append is one store write (a file append, a transaction), as in a real session.
- *resume*: opening that session again and building the context the model is sent
  (``SessionManager.open_stored`` + ``build_session_context``); for pi's files also the
  session manager's own file path (``SessionManager.open``), which is the default.
- *resume, compacted*: the same for a session of the same size with a compaction 40 entries
  before its end (copied into the store in batches, not timed), the common shape of a long
  session: only the branch since the compaction is parsed, from a file or a store.
"""

from __future__ import annotations

import argparse
import gc
import glob
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pi_host.messages import AssistantMessage, TextContent, UserMessage
from pi_host.session import JsonlStore, SessionManager, SessionStore, SqliteStore

_BATCH = 1000


def _message(number: int) -> UserMessage | AssistantMessage:
    if number % 2 == 0:
        return UserMessage(content=f"question {number} " + "x" * 80, timestamp=number)
    return AssistantMessage(
        content=[TextContent(text=f"answer {number} " + "y" * 200)],
        provider="faux",
        model="faux-1",
        api="faux",
        timestamp=number,
    )


def _fill(manager: SessionManager, size: int, *, compact_at: int | None = None) -> float:
    start = time.perf_counter()
    ids: list[str] = []
    for number in range(size):
        if number == compact_at:
            manager.append_compaction("The story so far.", ids[-20], tokens_before=50_000)
        else:
            ids.append(manager.append_message(_message(number)))
    return time.perf_counter() - start


def _compacted_lines(work: Path, size: int) -> tuple[str, list[str]]:
    """A session of ``size`` entries with a compaction 40 before the end, as pi's lines."""
    manager = SessionManager.create(str(work), work / f"template-{size}", cache_dir=False)
    _fill(manager, size, compact_at=size - 40)
    file = manager.session_file
    assert file is not None
    return manager.session_id, file.read_text().splitlines()


def _timed_resume(store: SessionStore, session_id: str) -> tuple[float, int]:
    gc.collect()
    start = time.perf_counter()
    resumed = SessionManager.open_stored(store, session_id)
    messages = len(resumed.build_session_context().messages)
    return time.perf_counter() - start, messages


def _timed_file_resume(file: Path) -> float:
    gc.collect()
    start = time.perf_counter()
    SessionManager.open(file, cache_dir=False).build_session_context()
    return time.perf_counter() - start


def _bench_store(
    name: str, store: SessionStore, size: int, cwd: str, compacted: tuple[str, list[str]]
) -> dict[str, object]:
    manager = SessionManager.create(cwd, store=store)
    seconds = _fill(manager, size)
    resume, messages = _timed_resume(store, manager.session_id)
    assert messages == size, (messages, size)
    compacted_id, lines = compacted
    for start in range(0, len(lines), _BATCH):
        store.append(compacted_id, lines[start : start + _BATCH])
    resume_compacted, kept = _timed_resume(store, compacted_id)
    assert kept == 60, kept  # the summary, the 20 entries kept, the 39 after
    row: dict[str, object] = {
        "store": name,
        "entries": size,
        "appends_per_s": round(size / seconds),
        "resume_ms": round(resume * 1000, 1),
        "resume_compacted_ms": round(resume_compacted * 1000, 1),
    }
    if isinstance(store, JsonlStore):
        (file,) = store.root.glob(f"*/*_{manager.session_id}.jsonl")
        (compacted_file,) = store.root.glob(f"*/*_{compacted_id}.jsonl")
        row["resume_file_path_ms"] = round(_timed_file_resume(file) * 1000, 1)
        row["resume_compacted_file_path_ms"] = round(_timed_file_resume(compacted_file) * 1000, 1)
    store.close()
    return row


# -- a PostgreSQL server of the run's own (--start-postgres) ---------------------------------


def _find(program: str) -> str:
    found = shutil.which(program)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{program}"), reverse=True)
    if not candidates:
        raise SystemExit(f"--start-postgres needs PostgreSQL's {program}; install the server packages")
    return candidates[0]


@contextmanager
def _postgres_server() -> Iterator[str]:
    """A running server with one empty database; yields its URI."""
    initdb, pg_ctl = _find("initdb"), _find("pg_ctl")
    base = Path(tempfile.mkdtemp(prefix="pi-bench-pg-"))  # not below a private directory
    data, sockets = base / "data", base / "sock"
    sockets.mkdir(parents=True)
    prefix: list[str] = []
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        import pwd

        user = pwd.getpwnam("nobody")
        for path in (base, sockets):
            path.chmod(0o755)
            os.chown(path, user.pw_uid, user.pw_gid)
        prefix = ["runuser", "-u", "nobody", "--"]
    env = {**os.environ, "LC_ALL": "C", "TZ": "UTC"}
    subprocess.run(
        [*prefix, initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"],
        check=True,
        capture_output=True,
        env=env,
        cwd=base,
    )
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    options = f"-h 127.0.0.1 -p {port} -k {sockets}"
    subprocess.run(
        [*prefix, pg_ctl, "-D", str(data), "-l", str(base / "server.log"), "-o", options, "-w", "start"],
        check=True,
        capture_output=True,
        env=env,
        cwd=base,
    )
    try:
        import psycopg

        with psycopg.connect(f"postgresql://postgres@127.0.0.1:{port}/postgres", autocommit=True) as conn:
            conn.execute('CREATE DATABASE "bench"')
        yield f"postgresql://postgres@127.0.0.1:{port}/bench"
    finally:
        subprocess.run(
            [*prefix, pg_ctl, "-D", str(data), "-m", "fast", "-w", "stop"],
            capture_output=True,
            env=env,
            cwd=base,
        )


def _run(sizes: list[int], work: Path, postgres: str | None) -> None:
    for size in sizes:
        compacted = _compacted_lines(work, size)
        stores: list[tuple[str, SessionStore]] = [
            ("jsonl", JsonlStore(work / f"files-{size}")),
            ("sqlite", SqliteStore(work / f"sessions-{size}.db")),
        ]
        if postgres:
            from pi_store_postgres import PostgresStore

            stores.append(("postgres", PostgresStore(postgres)))
        for name, store in stores:
            print(json.dumps(_bench_store(name, store, size, str(work), compacted)), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000", help="comma-separated entry counts (default 1000)")
    parser.add_argument("--postgres", help="a postgresql:// URI of an empty database to include")
    parser.add_argument(
        "--start-postgres", action="store_true", help="run a PostgreSQL server of its own and include it"
    )
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if args.start_postgres:
            with _postgres_server() as uri:
                _run(sizes, work, uri)
        else:
            _run(sizes, work, args.postgres)


if __name__ == "__main__":
    main()
