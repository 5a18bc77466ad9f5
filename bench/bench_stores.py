"""Session stores: appends per second and resume time per store.

Run with ``uv run python bench/bench_stores.py [--sizes 1000,100000] [--postgres URI]``; the
default run is short (1,000 entries). Many concurrent in-process sessions are measured by
``bench/bench_concurrent_sessions.py``.

- *appends/s*: a session manager on the store appends ``size`` messages (user and assistant in
  turn); each append is one store write (a file append, a transaction), as in a real session.
- *resume*: opening that session again and building the context the model is sent
  (``SessionManager.open_stored`` + ``build_session_context``); for pi's files also the
  session manager's own lazy file path (``SessionManager.open``), which is the default.
"""

from __future__ import annotations

import argparse
import gc
import json
import tempfile
import time
from pathlib import Path

from pi_host.messages import AssistantMessage, TextContent, UserMessage
from pi_host.session import JsonlStore, SessionManager, SessionStore, SqliteStore


def _rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _fill(manager: SessionManager, size: int) -> float:
    start = time.perf_counter()
    for number in range(size):
        if number % 2 == 0:
            manager.append_message(UserMessage(content=f"question {number} " + "x" * 80, timestamp=number))
        else:
            manager.append_message(
                AssistantMessage(
                    content=[TextContent(text=f"answer {number} " + "y" * 200)],
                    provider="faux",
                    model="faux-1",
                    api="faux",
                    timestamp=number,
                )
            )
    return time.perf_counter() - start


def _bench_store(name: str, store: SessionStore, size: int, cwd: str) -> dict[str, object]:
    manager = SessionManager.create(cwd, store=store)
    seconds = _fill(manager, size)
    session_id = manager.session_id
    gc.collect()
    start = time.perf_counter()
    resumed = SessionManager.open_stored(store, session_id)
    messages = len(resumed.build_session_context().messages)
    resume = time.perf_counter() - start
    assert messages == size, (messages, size)
    row: dict[str, object] = {
        "store": name,
        "entries": size,
        "appends_per_s": round(size / seconds),
        "resume_ms": round(resume * 1000, 1),
    }
    if isinstance(store, JsonlStore):
        (file,) = store.root.glob(f"*/*_{session_id}.jsonl")
        start = time.perf_counter()
        lazy = SessionManager.open(file, cache_dir=False)
        lazy.build_session_context()
        row["resume_file_path_ms"] = round((time.perf_counter() - start) * 1000, 1)
    store.close()
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000", help="comma-separated entry counts (default 1000)")
    parser.add_argument("--postgres", help="a postgresql:// URI of an empty database to include")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for size in sizes:
            stores: list[tuple[str, SessionStore]] = [
                ("jsonl", JsonlStore(work / f"files-{size}")),
                ("sqlite", SqliteStore(work / f"sessions-{size}.db")),
            ]
            if args.postgres:
                from pi_store_postgres import PostgresStore

                stores.append(("postgres", PostgresStore(args.postgres)))
            for name, store in stores:
                print(json.dumps(_bench_store(name, store, size, str(work))), flush=True)


if __name__ == "__main__":
    main()
