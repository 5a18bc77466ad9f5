"""``isolation: worktree`` on a real git repository: changes land on the child's branch, an
unchanged worktree is removed with its branch; worktree changes of one repository take turns
across event loops and threads."""

from __future__ import annotations

import os
import subprocess
import threading
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio
import anyio.to_thread
import pi_subagents
import pytest
from pi_subagents import _worktree
from pi_subagents._worktree import Worktree, create_worktree

from pi_host.testing import HostFactory, Request, reply, tool_call

WORKER = "---\nname: worker\ndescription: Works alone.\ntools: Write\nisolation: worktree\n---\nWork.\n"


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def _repo(path: Path) -> None:
    _git(path, "init", "-q", "-b", "main")
    _git(path, "config", "user.email", "test@example.invalid")
    _git(path, "config", "user.name", "Test")
    (path / "README.md").write_text("hello\n")
    _git(path, "add", "-A")
    _git(path, "commit", "-q", "-m", "initial")


@pytest.mark.parametrize("writes", [True, False], ids=["changed", "unchanged"])
async def test_worktree_child_leaves_its_changes_on_a_branch(make_host: HostFactory, writes: bool) -> None:
    def respond(request: Request) -> Any:
        texts = request.user_texts
        if texts and texts[0] == "make notes":
            if writes and not request.tool_results:
                return reply(tool_calls=[tool_call("write", path="notes.txt", content="from the child\n")])
            return reply("wrote notes" if writes else "nothing to change")
        if not request.tool_results:
            return reply(
                tool_calls=[
                    tool_call("task", description="notes", prompt="make notes", subagent_type="worker")
                ]
            )
        return reply("done")

    host = make_host(pi_subagents, load=["tools_fs"], respond=respond, tools=["task", "write"])
    _repo(host.cwd)
    agents = host.agent_dir / "agents"
    agents.mkdir()
    (agents / "worker.md").write_text(WORKER)
    with anyio.fail_after(60):
        outcome = await host.run("go")
    outcome.assert_ok()
    start = next(e for e in host.events if isinstance(e, pi_subagents.SubagentStartEvent))
    result = outcome.tool_results[0]
    text = outcome.result_text()
    # The parent's checkout is untouched either way.
    assert not (host.cwd / "notes.txt").exists()
    assert _git(host.cwd, "status", "--porcelain") == ""
    worktree = Path(start.cwd)
    assert worktree != host.cwd
    if writes:
        branch = result.details["branch"]
        assert f"Changes are on branch {branch}" in text
        assert _git(host.cwd, "show", f"{branch}:notes.txt") == "from the child"
        assert (worktree / "notes.txt").read_text() == "from the child\n"
    else:
        assert "its worktree was removed" in text
        assert "branch" not in result.details
        assert not worktree.exists()
        assert "subagent/" not in _git(host.cwd, "branch", "--list")
    await host.close()


async def test_worktree_outside_a_repository_is_a_clear_error(make_host: HostFactory) -> None:
    host = make_host(
        pi_subagents,
        load=["tools_fs"],
        replies=[tool_call("task", description="x", prompt="y", subagent_type="worker"), "ok"],
        tools=["task", "write"],
    )
    agents = host.agent_dir / "agents"
    agents.mkdir()
    (agents / "worker.md").write_text(WORKER)
    outcome = await host.run("go")
    assert "isolation: worktree needs a git repository" in outcome.result_text()
    await host.close()


async def test_parallel_worktree_children_each_get_a_branch(make_host: HostFactory) -> None:
    def respond(request: Request) -> Any:
        texts = request.user_texts
        if texts and texts[0].startswith("write "):
            name = texts[0].removeprefix("write ")
            if not request.tool_results:
                return reply(tool_calls=[tool_call("write", path=f"{name}.txt", content=f"{name}\n")])
            return reply(f"wrote {name}")
        if not request.tool_results:
            return reply(
                tool_calls=[
                    tool_call("task", description=name, prompt=f"write {name}", subagent_type="worker")
                    for name in ("one", "two", "three")
                ]
            )
        return reply("done")

    host = make_host(pi_subagents, load=["tools_fs"], respond=respond, tools=["task", "write"])
    _repo(host.cwd)
    agents = host.agent_dir / "agents"
    agents.mkdir()
    (agents / "worker.md").write_text(WORKER)
    with anyio.fail_after(60):
        outcome = await host.run("go")
    outcome.assert_ok()
    branches = [result.details["branch"] for result in outcome.tool_results]
    assert len(set(branches)) == 3
    for name, branch in zip(("one", "two", "three"), branches, strict=True):
        assert _git(host.cwd, "show", f"{branch}:{name}.txt") == name
    await host.close()


def _agent_branches(repo: Path) -> list[str]:
    return [line for line in _git(repo, "branch", "--list", "subagent/*").splitlines() if line]


async def _make_and_finish(repo: Path, agent: str, count: int) -> None:
    """``count`` worktrees made at once (contending for the repository's lock), then removed."""
    made: list[Worktree] = []

    async def one(index: int) -> None:
        made.append(await create_worktree(str(repo), f"{agent}{index}"))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            for index in range(count):
                group.start_soon(one, index)
        assert len(made) == count
        for worktree in made:
            assert Path(worktree.path).is_dir()
            assert await worktree.finish() is None


def _in_threads(*targets: Any) -> list[BaseException]:
    """Run each ``target`` in a thread of its own, all at once; what they raised."""
    errors: list[BaseException] = []

    def run(target: Any) -> None:
        try:
            target()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(target,)) for target in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
        assert not thread.is_alive()
    return errors


def test_two_event_loops_make_worktrees_of_one_repository_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An anyio lock shared by the loops deadlocked here: the holder's release could not wake
    # the other loop's waiter.
    monkeypatch.setenv("PI_HOST_DIR", str(tmp_path / "agent"))
    repo = tmp_path / "repo"
    repo.mkdir()
    _repo(repo)
    errors = _in_threads(
        *(partial(anyio.run, _make_and_finish, repo, name, 4) for name in ("first", "second", "third"))
    )
    assert errors == []
    assert _agent_branches(repo) == []
    assert len(_git(repo, "worktree", "list").splitlines()) == 1


def test_one_repository_lock_serves_one_event_loop_after_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Loops in turn, each contending within itself (the anyio lock managed this much too).
    monkeypatch.setenv("PI_HOST_DIR", str(tmp_path / "agent"))
    repo = tmp_path / "repo"
    repo.mkdir()
    _repo(repo)
    for name in ("first", "second"):
        anyio.run(_make_and_finish, repo, name, 3)
    assert _agent_branches(repo) == []


async def test_a_linked_worktree_shares_its_repository_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A nested child works in a worktree: its own children's worktrees belong to the same
    # repository and take turns with its siblings'.
    monkeypatch.setenv("PI_HOST_DIR", str(tmp_path / "agent"))
    repo = tmp_path / "repo"
    repo.mkdir()
    _repo(repo)
    outer = await create_worktree(str(repo), "outer")
    inner = await create_worktree(outer.path, "inner")
    assert inner.common_dir == outer.common_dir == os.path.realpath(repo / ".git")
    assert _git(repo, "rev-parse", inner.branch) == _git(repo, "rev-parse", "HEAD")
    assert await inner.finish() is None
    assert await outer.finish() is None
    assert _agent_branches(repo) == []


async def test_a_worktree_cancelled_while_waiting_for_the_lock_is_not_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_HOST_DIR", str(tmp_path / "agent"))
    repo = tmp_path / "repo"
    repo.mkdir()
    _repo(repo)
    key = os.path.realpath(repo / ".git")
    held = _worktree._repo_lock(key)
    arrived = threading.Event()

    class Signalling:
        """The repository's lock, telling the test when a worker thread is about to wait."""

        def __init__(self, lock: threading.Lock) -> None:
            self.lock = lock

        def __enter__(self) -> None:
            arrived.set()
            self.lock.acquire()

        def __exit__(
            self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
        ) -> None:
            self.lock.release()

    monkeypatch.setattr(_worktree, "_repo_lock", lambda key: Signalling(held))
    made: list[Worktree] = []
    scope = anyio.CancelScope()

    async def make() -> None:
        with scope:
            made.append(await create_worktree(str(repo), "late"))

    assert held.acquire(blocking=False)
    async with anyio.create_task_group() as group:
        group.start_soon(make)
        try:
            # The event loop goes on while the worker thread waits.
            assert await anyio.to_thread.run_sync(partial(arrived.wait, 30))
            scope.cancel()
        finally:
            held.release()
    assert scope.cancelled_caught
    assert made == []
    assert _agent_branches(repo) == []
    assert len(_git(repo, "worktree", "list").splitlines()) == 1
    # The cancelled waiter left the lock free: the next change takes it.
    assert held.acquire(blocking=False)
    held.release()
    worktree = await create_worktree(str(repo), "next")
    assert await worktree.finish() is None
