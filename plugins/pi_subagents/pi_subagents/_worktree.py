"""``isolation: worktree``: a child works in a fresh git worktree of the project, on a branch of its own.

The worktree is made from the project's ``HEAD`` (uncommitted changes of the parent are not in
it) under ``<agent dir>/worktrees/``. When the child is done, what it left uncommitted is
committed on its branch; a worktree whose branch gained nothing is removed with its branch,
one with changes is kept and its branch named in the ``task`` result.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass

import anyio

from pi_host import agent_dir

__all__ = ["Worktree", "WorktreeError", "create_worktree"]

_IDENTITY = {
    "GIT_AUTHOR_NAME": "pi-subagents",
    "GIT_AUTHOR_EMAIL": "pi-subagents@localhost",
    "GIT_COMMITTER_NAME": "pi-subagents",
    "GIT_COMMITTER_EMAIL": "pi-subagents@localhost",
}


# git serialises changes to a repository's worktree list and refs with lock files and fails
# (rather than waits) when another git holds one: children of one turn start together, so
# their worktree and branch changes of one repository take turns here.
_REPO_LOCKS: dict[str, anyio.Lock] = {}


def _repo_lock(repo: str) -> anyio.Lock:
    lock = _REPO_LOCKS.get(repo)
    if lock is None:
        lock = _REPO_LOCKS[repo] = anyio.Lock()
    return lock


class WorktreeError(Exception):
    """The project is not a git repository, or git refused; the text names the command."""


async def _git(cwd: str, *args: str, env: dict[str, str] | None = None) -> str:
    try:
        result = await anyio.run_process(
            ["git", *args], cwd=cwd, check=False, env={**os.environ, **(env or {})}
        )
    except OSError as exc:
        raise WorktreeError(f"isolation: worktree needs git, which cannot run: {exc}") from None
    if result.returncode != 0:
        message = result.stderr.decode(errors="replace").strip()
        raise WorktreeError(f"git {' '.join(args)} failed in {cwd}: {message}")
    return result.stdout.decode(errors="replace").strip()


@dataclass
class Worktree:
    """A child's worktree: where it works and the branch that holds its changes."""

    repo: str
    root: str
    path: str
    branch: str
    base: str

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
        async with _repo_lock(self.repo):
            await _git(self.repo, "worktree", "remove", "--force", self.root)
            await _git(self.repo, "branch", "-D", self.branch)
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
        base = await _git(repo, "rev-parse", "HEAD")
    except WorktreeError as exc:
        raise WorktreeError(
            f"isolation: worktree needs a git repository with at least one commit at {cwd} ({exc})"
        ) from None
    short = uuid.uuid4().hex[:8]
    branch = f"subagent/{agent}-{short}"
    path = agent_dir() / "worktrees" / f"{os.path.basename(repo)}-{agent}-{short}"
    path.parent.mkdir(parents=True, exist_ok=True)
    async with _repo_lock(repo):
        await _git(repo, "worktree", "add", "-q", "-b", branch, str(path), base)
    # The child works where the parent would: the same subdirectory of the repository.
    relative = os.path.relpath(cwd, repo)
    where = path if relative == "." else path / relative
    return Worktree(repo=repo, root=str(path), path=str(where), branch=branch, base=base)
