"""The conformance suite every :class:`~pi_host.SessionStore` must pass.

Use it from your store's tests either as plain checks::

    from pi_host.testing import check_session_store

    def test_my_store_conforms(tmp_path):
        check_session_store(functools.partial(MyStore, tmp_path / "db"))

or by subclassing :class:`SessionStoreConformance` (one pytest test per property).

A store is given as a *factory*: a picklable callable with no arguments that opens the store
(a module-level function or a ``functools.partial`` of the store class), because the
concurrency check opens it again in other processes.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pi_host.session import SessionStore

__all__ = [
    "SessionStoreConformance",
    "StoreFactory",
    "check_concurrent_writers",
    "check_crash_mid_tool",
    "check_idempotent_append",
    "check_list_and_delete",
    "check_refuses_malformed",
    "check_resume_like_a_file",
    "check_round_trip",
    "check_session_store",
    "sample_session",
]

StoreFactory = Callable[[], SessionStore]
"""Opens the store under test (picklable: it is called in other processes too)."""

# Lines a store must keep byte for byte: non-ASCII, escapes, JSON's own line separators
# written raw, and key orders JSON parsers would not keep.
_AWKWARD_TEXTS = ["plain", "é ☃ 😀", 'quotes " and \\ backslash', "line\u2028separator", "tab\tand\u0001"]


def sample_session(cwd: str = "/home/user/project", session_id: str | None = None) -> tuple[str, list[str]]:
    """A session id and its lines (header first), as pi writes them, with awkward text."""
    session_id = session_id or str(uuid.uuid4())
    header = (
        f'{{"type":"session","version":3,"id":"{session_id}","timestamp":"2026-01-02T03:04:05.678Z",'
        f'"cwd":{json.dumps(cwd)}}}'
    )
    lines = [header]
    parent: str | None = None
    for number, text in enumerate(_AWKWARD_TEXTS):
        entry_id = f"{number:08x}"
        body = json.dumps(text, ensure_ascii=False).replace("\\u2028", "\u2028")
        lines.append(
            f'{{"type":"message","id":"{entry_id}","parentId":{json.dumps(parent)},'
            f'"timestamp":"2026-01-02T03:04:0{number}.000Z","message":{{"role":"user","content":{body},'
            f'"timestamp":{1767322000000 + number}}}}}'
        )
        parent = entry_id
    lines.append(
        f'{{"type":"custom","customType":"z","data":{{"b":1,"a":[1.0,2e3,null]}},"id":"custom01",'
        f'"parentId":"{parent}","timestamp":"2026-01-02T03:05:00.000Z"}}'
    )
    return session_id, lines


def _fail(message: str) -> None:
    raise AssertionError(message)


def _opened(factory: StoreFactory) -> SessionStore:
    store = factory()
    if not isinstance(store, SessionStore):
        _fail(f"the factory returned {type(store).__name__}, not a pi_host.SessionStore")
    return store


def check_round_trip(factory: StoreFactory) -> None:
    """Lines appended in several batches load back exactly, header first; a new store
    instance (another process, later) sees the same."""
    store = _opened(factory)
    try:
        session_id, lines = sample_session()
        if store.load(session_id) is not None:
            _fail("load() of a session never appended must return None")
        store.append(session_id, lines[:2])
        store.append(session_id, lines[2:4])
        for line in lines[4:]:
            store.append(session_id, [line])
        got = store.load(session_id)
        if got != lines:
            _fail(f"load() did not return the appended lines byte for byte:\nwant {lines}\ngot  {got}")
        store.append(session_id, [])
    finally:
        store.close()
    again = _opened(factory)
    try:
        if again.load(session_id) != lines:
            _fail("a newly opened store does not load what an earlier one appended")
    finally:
        again.close()


def check_idempotent_append(factory: StoreFactory) -> None:
    """Appending lines again (a retry) stores nothing twice: not the header, not an entry
    whose id the session holds, not a duplicate within one batch."""
    store = _opened(factory)
    try:
        session_id, lines = sample_session()
        store.append(session_id, lines[:3])
        store.append(session_id, lines[:3])  # the whole first batch again, header included
        store.append(session_id, [lines[2], lines[3], lines[3], *lines[4:]])
        got = store.load(session_id)
        if got != lines:
            _fail(f"appending again duplicated or lost lines:\nwant {lines}\ngot  {got}")
    finally:
        store.close()


def check_list_and_delete(factory: StoreFactory) -> None:
    """list() reports every session with its cwd, timestamp and entry count; delete()
    removes one session and nothing else."""
    store = _opened(factory)
    try:
        first, first_lines = sample_session("/home/user/one")
        second, second_lines = sample_session("/home/user/two")
        store.append(first, first_lines)
        store.append(second, second_lines)
        listed = {info.id: info for info in store.list()}
        for session_id, cwd, lines in (
            (first, "/home/user/one", first_lines),
            (second, "/home/user/two", second_lines),
        ):
            info = listed.get(session_id)
            if info is None:
                _fail(f"list() does not report session {session_id}")
                return
            if info.cwd != cwd or info.timestamp != "2026-01-02T03:04:05.678Z":
                _fail(f"list() reports {info.cwd!r} / {info.timestamp!r} for session {session_id}")
            if info.entries != len(lines) - 1:
                _fail(f"list() counts {info.entries} entries for a session of {len(lines) - 1}")
        if store.delete(first) is not True:
            _fail("delete() of a stored session must return True")
        if store.delete(first) is not False:
            _fail("delete() of a session no longer stored must return False")
        if store.load(first) is not None:
            _fail("a deleted session still loads")
        if store.load(second) != second_lines:
            _fail("delete() of one session changed another")
        if first in {info.id for info in store.list()}:
            _fail("list() still reports a deleted session")
        store.append(first, first_lines[:2])  # the id may be used again
        if store.load(first) != first_lines[:2]:
            _fail("a session appended again after delete() does not load as new")
    finally:
        store.close()


def check_refuses_malformed(factory: StoreFactory) -> None:
    """A batch with a line that is not a JSON object, or a new session without its header,
    is refused with :class:`~pi_host.SessionStoreError`, and nothing of it is stored."""
    from pi_host.session import SessionStoreError

    store = _opened(factory)
    try:
        session_id, lines = sample_session()
        for batch, what in (
            (lines[1:3], "a new session whose first line is not its header"),
            ([lines[0], "{not json"], "a line that is not JSON"),
        ):
            try:
                store.append(session_id, batch)
            except SessionStoreError:
                pass
            else:
                _fail(f"append() accepted {what}")
            if store.load(session_id) is not None:
                _fail(f"append() stored part of a refused batch ({what})")
        store.append(session_id, lines[:2])
        try:
            store.append(session_id, [lines[2], "[1, 2]"])
        except SessionStoreError:
            pass
        else:
            _fail("append() accepted a line that is not a JSON object")
        if store.load(session_id) != lines[:2]:
            _fail("append() stored part of a refused batch")
    finally:
        store.close()


def _writer(
    factory: StoreFactory, session_id: str, header: str, writer: int, count: int, barrier: Any
) -> None:
    store = factory()
    try:
        barrier.wait()
        for number in range(count):
            line = (
                f'{{"type":"custom","customType":"conformance","data":{{"writer":{writer},"n":{number}}},'
                f'"id":"w{writer:02d}n{number:05d}","parentId":null,"timestamp":"2026-01-02T03:04:05.678Z"}}'
            )
            store.append(session_id, [header, line])
            if number % 50 == 0:
                store.append(session_id, [line])  # a retry racing the others
    finally:
        store.close()


def check_concurrent_writers(factory: StoreFactory, *, processes: int = 8, entries: int = 200) -> None:
    """``processes`` processes, started together, each append ``entries`` entries to one
    session (each append carrying the header too, as a first append would): the session
    then holds the header once, first, and every entry exactly once, each writer's in order."""
    session_id, lines = sample_session()
    header = lines[0]
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(processes)
    workers = [
        context.Process(target=_writer, args=(factory, session_id, header, writer, entries, barrier))
        for writer in range(processes)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=600)
    failed = [worker.exitcode for worker in workers if worker.exitcode != 0]
    for worker in workers:
        if worker.is_alive():
            worker.kill()
    if failed:
        _fail(f"{len(failed)} of {processes} writer processes failed (exit codes {failed})")
    store = _opened(factory)
    try:
        got = store.load(session_id)
    finally:
        store.close()
    if not got or got[0] != header:
        _fail("after concurrent appends the session does not start with its header")
        return
    ids = [json.loads(line)["id"] for line in got[1:]]
    if len(ids) != len(set(ids)):
        _fail(f"concurrent appends duplicated {len(ids) - len(set(ids))} entries")
    want = processes * entries
    if len(ids) != want:
        _fail(f"concurrent appends kept {len(ids)} of {want} entries")
    for writer in range(processes):
        mine = [entry_id for entry_id in ids if entry_id.startswith(f"w{writer:02d}")]
        if mine != sorted(mine):
            _fail(f"writer {writer}'s entries are out of the order it appended them in")


def check_resume_like_a_file(factory: StoreFactory) -> None:
    """A session a session manager kept in the store resumes from it exactly as a file of the
    same lines resumes: the same context (the compaction's summary, what it kept, what came
    after), model, thinking level, leaf, name, labels, entries and tree, and no warnings.

    The session has what a resume reads lazily, back to the last compaction: settings and a
    label recorded before it, a branch, and entries after it.
    """
    from pi_host.messages import AssistantMessage, TextContent, UserMessage
    from pi_host.session import SessionManager

    def reply(text: str) -> AssistantMessage:
        return AssistantMessage(
            content=[TextContent(text=text)], provider="anthropic", model="claude-a", api="anthropic-messages"
        )

    store = _opened(factory)
    try:
        manager = SessionManager.create("/home/user/project", store=store)
        manager.append_model_change("anthropic", "claude-a")
        manager.append_thinking_level_change("high")
        ids = []
        for number in range(12):
            ids.append(
                manager.append_message(UserMessage(content=f"question {number} {_AWKWARD_TEXTS[number % 5]}"))
            )
            ids.append(manager.append_message(reply(f"answer {number}")))
        manager.append_label_change(ids[3], "the start")
        manager.append_session_info("a resumable session")
        manager.branch(ids[19])  # leave the last two turns on a branch of their own
        manager.append_message(UserMessage(content="on the branch"))
        manager.append_compaction("What happened so far.", ids[15], tokens_before=12_345)
        manager.append_message(reply("after the compaction"))
        session_id = manager.session_id
        lines = store.load(session_id)
        resumed = SessionManager.open_stored(store, session_id)
        got = _resume_view(resumed, ids[3])
    finally:
        store.close()
    if not lines:
        raise AssertionError("load() returned nothing for a session a session manager appended to")
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / f"2026-01-02T03-04-05-678Z_{session_id}.jsonl"
        file.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        want = _resume_view(SessionManager.open(file, cache_dir=False), ids[3])
    for key, value in want.items():
        if got[key] != value:
            _fail(
                f"resumed from the store, the session's {key} differs from its file's:"
                f"\nwant {value}\ngot  {got[key]}"
            )


def _resume_view(manager: Any, labelled: str) -> dict[str, Any]:
    """What a resumed session manager answers, in comparable form (the context first: that
    is what a resume reads; the rest reads the whole session)."""
    context = manager.build_session_context()

    def tree(nodes: list[Any]) -> list[Any]:
        return [(node.entry.id, node.label, tree(node.children)) for node in nodes]

    return {
        "context messages": [message.model_dump(mode="json") for message in context.messages],
        "model": context.model,
        "thinking level": context.thinking_level,
        "leaf": manager.leaf_id,
        "name": manager.session_name,
        "label": manager.get_label(labelled),
        "entries": [entry.to_json() for entry in manager.get_entries()],
        "tree": tree(manager.get_tree()),
        "warnings": [str(warning) for warning in manager.warnings],
    }


def check_session_store(factory: StoreFactory, *, processes: int = 8, entries: int = 200) -> None:
    """Every check of the suite, in order (see the ``check_*`` functions)."""
    check_round_trip(factory)
    check_idempotent_append(factory)
    check_list_and_delete(factory)
    check_refuses_malformed(factory)
    check_resume_like_a_file(factory)
    check_concurrent_writers(factory, processes=processes, entries=entries)


class SessionStoreConformance:
    """The suite as test methods: subclass it in a test module (the name must start with
    ``Test``) and implement :meth:`store_factory`::

        class TestMyStore(SessionStoreConformance):
            def store_factory(self):
                return functools.partial(MyStore, self.path)

            @pytest.fixture(autouse=True)
            def _where(self, tmp_path):
                self.path = tmp_path / "db"
    """

    processes = 8
    entries = 200

    def store_factory(self) -> StoreFactory:
        """A picklable callable that opens the store under test (a fresh, empty one per test)."""
        raise NotImplementedError("implement store_factory() to return a factory of your store")

    def test_round_trip(self) -> None:
        check_round_trip(self.store_factory())

    def test_idempotent_append(self) -> None:
        check_idempotent_append(self.store_factory())

    def test_list_and_delete(self) -> None:
        check_list_and_delete(self.store_factory())

    def test_refuses_malformed(self) -> None:
        check_refuses_malformed(self.store_factory())

    def test_resume_like_a_file(self) -> None:
        check_resume_like_a_file(self.store_factory())

    def test_concurrent_writers(self) -> None:
        check_concurrent_writers(self.store_factory(), processes=self.processes, entries=self.entries)


def check_crash_mid_tool(uri: str, work: str | os.PathLike[str], *, open_store: StoreFactory) -> None:
    """SIGKILL a real ``pi-host --session-store URI`` process while its bash tool runs, then
    continue the session from the store: the reply that asked for the tool is there, the
    dangling call does not block the next prompt, and the repaired session holds
    user, assistant, user, assistant.

    :param uri: the store's URI, as ``--session-store`` takes it (its plugin installed).
    :param work: an empty directory for the project and the agent directory.
    :param open_store: opens the same store in this process, to read what was saved.
    """
    import signal
    import subprocess

    if not hasattr(signal, "SIGKILL"):
        return  # pragma: no cover - Windows
    base = Path(work)
    project = base / "project"
    project.mkdir(parents=True, exist_ok=True)
    executable = shutil.which("pi-host") or str(Path(sys.executable).parent / "pi-host")

    def env(script: list[dict[str, Any]], name: str) -> dict[str, str]:
        path = base / name
        path.write_text(json.dumps(script))
        out = {k: v for k, v in os.environ.items() if not k.startswith("PI_HOST")}
        out.update(PI_HOST_DIR=str(base / "agent"), PI_HOST_FAUX_SCRIPT=str(path))
        return out

    sleeping = [
        {
            "text": "Sleeping.",
            "toolCalls": [{"name": "bash", "arguments": {"command": "sleep 30"}, "id": "c1"}],
        }
    ]
    process = subprocess.Popen(
        [executable, "--session-store", uri, "--provider", "faux", "--mode", "json", "sleep please"],
        cwd=project,
        env=env(sleeping, "first.json"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # the kill reaches the tool's `sleep` too
    )
    try:
        assert process.stdout is not None
        for raw in iter(process.stdout.readline, b""):
            if raw.strip() and json.loads(raw).get("type") == "tool_execution_start":
                os.killpg(process.pid, signal.SIGKILL)
                break
        else:
            stderr = process.stderr.read().decode() if process.stderr else ""
            _fail(f"pi-host ended before its tool started; stderr:\n{stderr}")
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()

    from pi_host.session import SessionManager

    def roles() -> list[str]:
        store = _opened(open_store)
        try:
            (info,) = [info for info in store.list() if info.cwd == str(project)]
            manager = SessionManager.open_stored(store, info.id)
            return [message.role for message in manager.build_session_context().messages]
        finally:
            store.close()

    if roles() != ["user", "assistant"]:
        _fail(
            f"after the kill the store holds {roles()}, not the prompt and the reply that asked for the tool"
        )
    done = subprocess.run(
        [executable, "--session-store", uri, "--provider", "faux", "-c", "-p", "go on"],
        cwd=project,
        env=env([{"text": "after the crash"}], "second.json"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0 or done.stdout != "after the crash\n":
        _fail(f"continuing after the crash failed ({done.returncode}): {done.stdout!r}\n{done.stderr}")
    if roles() != ["user", "assistant", "user", "assistant"]:
        _fail(f"the resumed session holds {roles()}")
