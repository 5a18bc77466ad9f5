"""Session stores (issue 21): the conformance suite for the built-in JSONL and SQLite stores,
the session manager on a store, and choosing a store by URI through ``pi_session_store``."""

from __future__ import annotations

import functools
import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest

from pi_host import SessionStore, SessionStoreError, hookimpl
from pi_host.messages import AssistantMessage, TextContent, UserMessage
from pi_host.plugin import PluginManager
from pi_host.runtime._stores import open_session_store
from pi_host.session import JsonlStore, SessionManager, SqliteStore, builtin_store
from pi_host.testing import HostFactory, SessionStoreConformance, sample_session


class TestJsonlStore(SessionStoreConformance):
    @pytest.fixture(autouse=True)
    def _where(self, tmp_path: Path) -> None:
        self.root = tmp_path / "sessions"

    def store_factory(self) -> functools.partial[SessionStore]:
        return functools.partial(JsonlStore, self.root)


class TestSqliteStore(SessionStoreConformance):
    @pytest.fixture(autouse=True)
    def _where(self, tmp_path: Path) -> None:
        self.path = tmp_path / "db" / "sessions.db"

    def store_factory(self) -> functools.partial[SessionStore]:
        return functools.partial(SqliteStore, self.path)


def reply(text: str) -> AssistantMessage:
    return AssistantMessage(
        content=[TextContent(text=text)], provider="faux", model="m", api="x", timestamp=2
    )


def test_the_jsonl_store_writes_the_files_the_session_manager_writes(tmp_path: Path) -> None:
    """A session kept through the JSONL store is the file SessionManager.create writes,
    in the same directory, and opens as a file."""
    store = JsonlStore(tmp_path / "sessions")
    manager = SessionManager.create("/home/user/project", store=store)
    manager.append_message(UserMessage(content="hi", timestamp=1))
    manager.append_message(reply("hello"))
    (file,) = (tmp_path / "sessions").glob("*/*.jsonl")
    assert file.parent.name == "--home-user-project--"
    assert file.name.endswith(f"_{manager.session_id}.jsonl")
    assert file.read_text().splitlines() == store.load(manager.session_id)
    opened = SessionManager.open(file)
    assert [m.role for m in opened.build_session_context().messages] == ["user", "assistant"]


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_a_session_resumes_from_its_store_with_its_tree(tmp_path: Path, kind: str) -> None:
    store = builtin_store(f"sqlite:///{tmp_path}/s.db" if kind == "sqlite" else str(tmp_path / "files"))
    assert store is not None
    manager = SessionManager.create(tmp_path, store=store)
    first = manager.append_message(UserMessage(content="one", timestamp=1))
    manager.append_message(reply("first answer"))
    manager.append_label_change(first, "start")
    manager.branch(first)
    manager.append_message(reply("second answer"))
    manager.append_model_change("faux", "other")
    lines = store.load(manager.session_id)
    assert lines is not None and len(lines) == 6 and json.loads(lines[0])["type"] == "session"

    resumed = SessionManager.open_stored(store, manager.session_id)
    assert resumed.session_file is None and resumed.session_store is store
    assert resumed.leaf_id == manager.leaf_id
    assert resumed.get_label(first) == "start"
    context = resumed.build_session_context()
    assert [m.role for m in context.messages] == ["user", "assistant"]
    assert context.model is not None and context.model.model_id == "other"
    assert resumed.get_tree() == manager.get_tree()
    assert len(resumed.get_tree()[0].children) == 2  # the two replies
    resumed.append_message(UserMessage(content="more", timestamp=3))
    assert store.load(manager.session_id) == [*lines, resumed.get_leaf_entry().to_json()]  # type: ignore[union-attr]
    assert SessionManager.continue_recent_stored(store, tmp_path).session_id == manager.session_id


def test_a_new_session_reaches_the_store_with_its_first_reply(tmp_path: Path) -> None:
    """As with files, an abandoned prompt leaves nothing in the store."""
    store = SqliteStore(tmp_path / "s.db")
    manager = SessionManager.create(tmp_path, store=store)
    manager.append_message(UserMessage(content="hi", timestamp=1))
    assert store.list() == []
    manager.append_message(reply("hello"))
    assert [info.id for info in store.list()] == [manager.session_id]


def test_a_failed_append_is_retried_with_the_next_entry(tmp_path: Path) -> None:
    """A store that cannot be written (here: the database locked by another writer) never
    ends the turn; the next append writes every entry held back, once."""
    path = tmp_path / "s.db"
    store = SqliteStore(path)
    manager = SessionManager.create(tmp_path, store=store)
    manager.append_message(UserMessage(content="hi", timestamp=1))
    manager.append_message(reply("hello"))
    blocker = sqlite3.connect(path, timeout=0, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    store._db.execute("PRAGMA busy_timeout = 0")  # fail at once instead of waiting 30 s
    manager.append_message(UserMessage(content="held back", timestamp=3))
    assert manager.write_error is not None and "locked" in str(manager.write_error)
    blocker.execute("ROLLBACK")
    manager.append_message(reply("saved"))
    assert manager.write_error is None
    lines = store.load(manager.session_id)
    assert lines is not None
    assert [json.loads(line)["message"]["role"] for line in lines[1:]] == [
        "user",
        "assistant",
        "user",
        "assistant",
    ]


def test_an_old_format_session_in_a_store_names_the_remedy(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    session_id, lines = sample_session()
    store.append(session_id, [lines[0].replace('"version":3', '"version":2'), *lines[1:]])
    with pytest.raises(SessionStoreError, match=r"version 2.*pi-host sessions import"):
        SessionManager.open_stored(store, session_id)
    with pytest.raises(SessionStoreError, match="has no session 'nope'"):
        SessionManager.open_stored(store, "nope")


def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("my notes\n" * 100)
    with pytest.raises(SessionStoreError, match="cannot be used as a session database"):
        SqliteStore(path)
    assert path.read_text() == "my notes\n" * 100


@pytest.mark.parametrize(
    ("uri", "kind"),
    [
        ("sqlite:///rel/s.db", SqliteStore),
        ("jsonl:", JsonlStore),
        ("jsonl:dir", JsonlStore),
        ("dir", JsonlStore),
    ],
)
def test_builtin_uris(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, uri: str, kind: type) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PI_HOST_DIR", str(tmp_path / "agent"))
    store = open_session_store(uri, _manager())
    assert isinstance(store, kind)
    if uri == "jsonl:":
        assert isinstance(store, JsonlStore) and store.root == tmp_path / "agent" / "sessions"
    if uri.startswith("sqlite"):
        assert (tmp_path / "rel" / "s.db").exists()


def _manager(*plugins: object) -> PluginManager:
    pm = PluginManager()
    pm.register(__import__("pi_host.builtins.stores", fromlist=["x"]), name="stores")
    for plugin in plugins:
        pm.register(plugin)
    return pm


def test_a_plugin_serves_its_scheme_and_unknown_schemes_name_the_remedy(tmp_path: Path) -> None:
    class MemoryPlugin:
        @hookimpl
        def pi_session_store(self, uri: str) -> SessionStore | None:
            return SqliteStore(tmp_path / "mem.db", uri=uri) if uri.startswith("mem:") else None

    class BrokenPlugin:
        @hookimpl
        def pi_session_store(self, uri: str) -> SessionStore | None:
            if uri.startswith("broken:"):
                raise RuntimeError("no server")
            return None

    pm = _manager(MemoryPlugin(), BrokenPlugin())
    assert open_session_store("mem:x", pm).uri == "mem:x"
    assert isinstance(open_session_store(f"sqlite:///{tmp_path}/a.db", pm), SqliteStore)
    with pytest.raises(SessionStoreError, match=r"postgresql: URIs .*install pi-store-postgres"):
        open_session_store("postgresql://localhost/db", pm)
    with pytest.raises(
        SessionStoreError, match="failed to open the session store 'broken:x': RuntimeError: no serv"
    ):
        open_session_store("broken:x", pm)
    with pytest.raises(SessionStoreError, match="names no database file"):
        open_session_store("sqlite://", pm)


def test_the_store_hook_goes_through_the_shared_loop(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``pi_session_store`` is a declared first-result hook: a plain pluggy call returns the
    store, a wrong result type is the reducer's rejection naming the plugin, and a plugin
    that blocks past the hook timeout is named while it blocks and fails the open."""
    store_db = tmp_path / "mem.db"

    class Wrong:
        @hookimpl
        def pi_session_store(self, uri: str) -> object:
            return 42 if uri.startswith("wrong:") else None

    class Slow:
        @hookimpl
        def pi_session_store(self, uri: str) -> SessionStore | None:
            if not uri.startswith("slow:"):
                return None
            # Blocks until the watchdog has named it (at most 30 s): a connect that hangs.
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not any(
                "has blocked pi-host" in record.getMessage() for record in caplog.records
            ):
                pass
            return SqliteStore(store_db, uri=uri)

    class Memory:
        @hookimpl
        def pi_session_store(self, uri: str) -> SessionStore | None:
            return SqliteStore(store_db, uri=uri) if uri.startswith("mem:") else None

    pm = _manager(Wrong(), Slow(), Memory())
    plain = pm.hook.pi_session_store(uri="mem:x")  # pluggy's firstresult: one store, not a list
    assert isinstance(plain, SqliteStore) and plain.uri == "mem:x"
    with pytest.raises(
        SessionStoreError,
        match=r"plugin \"[^\"]+\" failed to open the session store 'wrong:x': pi_session_store "
        r"returned int; expected SessionStore or None",
    ):
        open_session_store("wrong:x", pm)
    with pytest.raises(
        SessionStoreError, match=r"HookTimeout: plugin \"[^\"]+\" did not finish pi_session_store"
    ):
        open_session_store("slow:x", pm, timeout=0.2)
    assert any("in pi_session_store" in message for message in caplog.messages)


async def test_the_store_hook_is_not_awaited_through_the_dispatcher() -> None:
    from pi_host.errors import HookError
    from pi_host.plugin import Dispatcher

    with pytest.raises(HookError, match=r"synchronous hook; call it with PluginManager\.call_first\(\)"):
        await Dispatcher(_manager(), trace=False).call("pi_session_store", uri="x")


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_resuming_from_a_store_reads_back_to_the_last_compaction_only(tmp_path: Path, kind: str) -> None:
    """As from a file: the lines before the compaction are parsed only when something asks
    for the whole session. A damaged entry there is reported then, naming its line; before,
    every line of a stored session was parsed to resume it."""
    store: SessionStore = (
        JsonlStore(tmp_path / "files") if kind == "jsonl" else SqliteStore(tmp_path / "s.db")
    )
    manager = SessionManager.create("/home/user/project", store=store)
    first = manager.append_message(UserMessage(content="first", timestamp=1))
    manager.append_message(reply("one"))
    kept = manager.append_message(UserMessage(content="kept", timestamp=3))
    manager.append_message(reply("two"))
    manager.append_compaction("The story so far.", kept, tokens_before=1000)
    manager.append_message(UserMessage(content="after", timestamp=5))
    lines = store.load(manager.session_id)
    assert lines is not None
    # The first message's line becomes an entry pi-host cannot validate (valid JSON still).
    damaged = json.loads(lines[1])
    assert damaged["id"] == first
    damaged["message"] = {"role": "user", "content": 5}
    lines[1] = json.dumps(damaged, separators=(",", ":"))
    store.close()
    copy: SessionStore = (
        JsonlStore(tmp_path / "copy") if kind == "jsonl" else SqliteStore(tmp_path / "copy.db")
    )
    copy.append(manager.session_id, lines)

    resumed = SessionManager.open_stored(copy, manager.session_id)
    context = resumed.build_session_context()
    assert [m.role for m in context.messages] == ["compactionSummary", "user", "assistant", "user"]
    assert resumed.warnings == []  # the damaged line lies before the compaction: not read
    assert len(resumed.get_entries()) == len(lines) - 1
    (warning,) = resumed.warnings
    assert f"kept invalid message entry {first} as unknown" in str(warning)
    assert f"line 2 of session {manager.session_id} in {copy.uri}" in str(warning)
    copy.close()


class _GatedStore(SqliteStore):
    """An SQLite store whose appends wait for ``gate``, opened by a task of the event loop
    once an append has started: a store that blocks the loop waits in vain (10 s), and
    refuses the append then."""

    def __init__(self, path: Path, uri: str) -> None:
        super().__init__(path, uri=uri)
        self.started = threading.Event()
        self.gate = threading.Event()
        self.threads: list[int] = []

    def append(self, session_id: str, lines: Sequence[str]) -> None:
        self.threads.append(threading.get_ident())
        self.started.set()
        if not self.gate.wait(timeout=10):
            raise SessionStoreError("the event loop was blocked while the store wrote")
        super().append(session_id, lines)


async def test_store_appends_leave_the_event_loop_to_other_sessions(
    make_host: HostFactory, tmp_path: Path
) -> None:
    """Sessions of one process share one event loop; a store append (a PostgreSQL round
    trip and commit) used to run on it, so every session waited for every other's writes."""
    stores: list[_GatedStore] = []

    class GatedPlugin:
        @hookimpl
        def pi_session_store(self, uri: str) -> SessionStore | None:
            if not uri.startswith("gated:"):
                return None
            stores.append(_GatedStore(tmp_path / "gated.db", uri))
            return stores[-1]

    host = make_host(GatedPlugin(), replies=["hello"], session_options={"session_store": "gated:x"})
    opened: list[bool] = []

    async def another_session() -> None:
        # waits in a thread, so the loop is free; resumes only if the loop is not blocked
        await anyio.to_thread.run_sync(lambda: stores[-1].started.wait(10) if stores else None)
        opened.append(bool(stores))
        stores[-1].gate.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(another_session)
        (await host.run("hi")).assert_text("hello")
    await host.close()
    (store,) = stores
    assert opened == [True]
    assert store.threads and threading.get_ident() not in store.threads
    lines = store.load(store.list()[0].id)
    assert lines is not None
    entries = [json.loads(line) for line in lines[1:]]
    assert [entry["message"]["role"] for entry in entries if entry["type"] == "message"] == [
        "user",
        "assistant",
    ]


def test_background_writes_keep_the_order_and_retry_what_failed(tmp_path: Path) -> None:
    """Off the loop, a failed write still never ends the turn, and the next entry sends
    everything held back again, once and in order."""
    path = tmp_path / "s.db"
    store = SqliteStore(path)
    manager = SessionManager.create(tmp_path, store=store)
    manager.write_in_background()
    manager.append_message(UserMessage(content="hi", timestamp=1))
    manager.append_message(reply("hello"))
    assert manager.wait_for_writes(timeout=10)
    blocker = sqlite3.connect(path, timeout=0, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    store._db.execute("PRAGMA busy_timeout = 0")  # fail at once instead of waiting 30 s
    manager.append_message(UserMessage(content="held back", timestamp=3))
    assert manager.wait_for_writes(timeout=10)
    assert manager.write_error is not None and "locked" in str(manager.write_error)
    blocker.execute("ROLLBACK")
    for number in range(20):
        manager.append_message(reply(f"saved {number}"))
    assert manager.wait_for_writes(timeout=10)
    assert manager.write_error is None
    lines = store.load(manager.session_id)
    assert lines is not None
    texts = [json.loads(line)["message"]["content"] for line in lines[1:]]
    assert [t if isinstance(t, str) else t[0]["text"] for t in texts] == [
        "hi",
        "hello",
        "held back",
        *(f"saved {number}" for number in range(20)),
    ]
    # switching to another session finishes the writes of the one left
    manager.append_message(UserMessage(content="last words", timestamp=4))
    first = manager.session_id
    manager.new_session()
    lines = store.load(first)
    assert lines is not None and "last words" in lines[-1]


def test_a_session_branched_in_a_store_names_its_source_by_store_uri_and_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fork in a store records ``parentSession`` as ``<store URI>#<id>`` (a file records its
    path), with the SQLite URI made absolute; the listing reports it."""
    monkeypatch.chdir(tmp_path)
    store = builtin_store("sqlite:///s.db")  # relative to the working directory
    assert store is not None and store.uri == f"sqlite:///{tmp_path / 's.db'}"
    manager = SessionManager.create(tmp_path, store=store)
    source = manager.session_id
    first = manager.append_message(UserMessage(content="one", timestamp=1))
    manager.append_message(reply("answer"))
    assert manager.session_reference == f"{store.uri}#{source}"
    manager.create_branched_session(manager.leaf_id or first)
    assert manager.session_id != source
    assert manager.header.parent_session == f"{store.uri}#{source}"
    listed = {info.id: info for info in store.list()}
    assert listed[manager.session_id].parent_session == f"{store.uri}#{source}"
    assert listed[source].parent_session is None
