"""``isolation: worktree``: a child works in a fresh git worktree of the project, on a branch of its own.

The worktree is made from the project's ``HEAD`` (uncommitted changes of the parent are not in
it) under ``<agent dir>/worktrees/``. When the child is done, what it left uncommitted is
committed on its branch; a worktree whose branch gained nothing is removed with its branch,
one with changes is kept and its branch named in the ``task`` result.
"""

from __future__ import annotations

import os
import subprocess
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import anyio
import anyio.from_thread
import anyio.to_thread

from pi_host import agent_dir

__all__ = ["Worktree", "WorktreeError", "create_worktree"]

_IDENTITY = {
    "GIT_AUTHOR_NAME": "pi-subagents",
    "GIT_AUTHOR_EMAIL": "pi-subagents@localhost",
    "GIT_COMMITTER_NAME": "pi-subagents",
    "GIT_COMMITTER_EMAIL": "pi-subagents@localhost",
}


class WorktreeError(Exception):
    """The project is not a git repository, or git refused; the text names the command."""


# git guards a repository's worktree list, refs and config with lock files and fails (rather
# than waits) when another git holds one: children of one turn start together, and a
# `branch -D` racing another was seen to delete the ref yet fail to update `.git/config`. So
# changes to one repository's worktrees and branches take turns under one lock per repository
# (keyed by its common git directory, which all its worktrees share).
#
# The lock is a `threading.Lock`, not an anyio one: one process may run sessions in several
# event loops (a host embedding sessions, each in a thread of its own), and an anyio lock is
# neither thread-safe nor able to wake a waiter in another loop (two loops contending for one
# deadlocked). Waiting and git both happen in a worker thread, so no event loop blocks.
# Retrying on git's lock errors instead would also cover other processes, but git reports them
# only as text and an operation can fail half done (the `branch -D` above), so a retry is not
# safe in general; other processes changing the same repository's worktrees at the same
# moment remain possible and then fail with git's message.
_REPO_LOCKS: dict[str, threading.Lock] = {}
_REPO_LOCKS_GUARD = threading.Lock()


def _repo_lock(key: str) -> threading.Lock:
    with _REPO_LOCKS_GUARD:
        return _REPO_LOCKS.setdefault(key, threading.Lock())


def _run_git(cwd: str, args: Sequence[str], env: dict[str, str] | None = None) -> str:
    """Run git to its end, blocking (so: in a worker thread); its output, stripped.

    :raises WorktreeError: git cannot run, or exited with an error (its message included).
    """
    try:
        result = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, check=False, env={**os.environ, **(env or {})}
        )
    except OSError as exc:
        raise WorktreeError(f"isolation: worktree needs git, which cannot run: {exc}") from None
    if result.returncode != 0:
        message = result.stderr.decode(errors="replace").strip()
        raise WorktreeError(f"git {' '.join(args)} failed in {cwd}: {message}")
    return result.stdout.decode(errors="replace").strip()


async def _git(cwd: str, *args: str, env: dict[str, str] | None = None) -> str:
    # The thread is not abandoned when the caller is cancelled: git's commands here are short,
    # and one killed half way can leave a lock file or a half-made worktree behind.
    return await anyio.to_thread.run_sync(partial(_run_git, cwd, args, env))


def _run_locked(key: str, cwd: str, commands: Sequence[Sequence[str]]) -> None:
    """Run ``commands`` in turn under the lock of repository ``key`` (in a worker thread)."""
    with _repo_lock(key):
        # A caller cancelled while this thread waited for the lock changes nothing; `with`
        # releases the lock whatever happens.
        anyio.from_thread.check_cancelled()
        for args in commands:
            _run_git(cwd, args)


async def _change_repository(key: str, cwd: str, *commands: Sequence[str]) -> None:
    """Run ``commands`` (changes to the worktrees or branches of the repository whose common git
    directory is ``key``) in turn, after any other such change in this process, in any thread
    or event loop; once git has started, they run to their end even if the caller is cancelled.
    """
    await anyio.to_thread.run_sync(partial(_run_locked, key, cwd, commands))


@dataclass
class Worktree:
    """A child's worktree: where it works and the branch that holds its changes.

    :ivar common_dir: the repository's common git directory (what its lock is keyed by).
    """

    repo: str
    root: str
    path: str
    branch: str
    base: str
    common_dir: str

    async def finish(self) -> str | None:
        """Commit what the child left, then remove the worktree if its branch gained nothing.

        :returns: the branch holding the child's changes, ``None`` when there were none.
        """
        if await _git(self.path, "status", "--porcelain"):
            await _git(self.path, "add", "-A")
            await _git(
                self.path,
                "commit",
                "-q",
                "-m",
                f"Sub-agent changes ({self.branch})",
                env=None if await _has_identity(self.path) else _IDENTITY,
            )
        head = await _git(self.path, "rev-parse", "HEAD")
        if head != self.base:
            return self.branch
        await _change_repository(
            self.common_dir,
            self.repo,
            ("worktree", "remove", "--force", self.root),
            ("branch", "-D", self.branch),
        )
        return None


async def _has_identity(cwd: str) -> bool:
    try:
        return bool(await _git(cwd, "config", "user.email"))
    except WorktreeError:
        return False


async def create_worktree(cwd: str, agent: str) -> Worktree:
    """A new worktree of the repository ``cwd`` is in, on branch ``subagent/<agent>-<id>``.

    :raises WorktreeError: ``cwd`` is not in a git repository with a commit, or git failed.
    """
    try:
        repo = await _git(cwd, "rev-parse", "--show-toplevel")
        common, base = (await _git(repo, "rev-parse", "--git-common-dir", "HEAD")).splitlines()
    except WorktreeError as exc:
        raise WorktreeError(
            f"isolation: worktree needs a git repository with at least one commit at {cwd} ({exc})"
        ) from None
    # Relative to `repo` in the main worktree, absolute in a linked one (a nested child's).
    common_dir = os.path.realpath(os.path.join(repo, common))
    short = uuid.uuid4().hex[:8]
    branch = f"subagent/{agent}-{short}"
    path = agent_dir() / "worktrees" / f"{os.path.basename(repo)}-{agent}-{short}"
    path.parent.mkdir(parents=True, exist_ok=True)
    await _change_repository(common_dir, repo, ("worktree", "add", "-q", "-b", branch, str(path), base))
    # No await from here on: a cancellation arriving now reaches the caller, which has the
    # worktree to finish.
    # The child works where the parent would: the same subdirectory of the repository.
    relative = os.path.relpath(cwd, repo)
    where = path if relative == "." else path / relative
    return Worktree(
        repo=repo, root=str(path), path=str(where), branch=branch, base=base, common_dir=common_dir
    )
