"""``isolation: worktree`` on a real git repository: changes land on the child's branch, an
unchanged worktree is removed with its branch."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import anyio
import pi_subagents
import pytest

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
