"""Changing the files back: applying a :class:`RestorePlan`, and recording that it happened."""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ._git import GitRepo
from ._lock import project_lock
from ._store import BlobStore, file_state, recorded_path
from ._timeline import (
    CUSTOM_TYPE,
    FileChange,
    RestorePlan,
    blocked,
    checkpoint_records,
    escapes,
    leads_out,
    project_file_state,
    project_root,
)

__all__ = [
    "CUSTOM_TYPE",
    "RestoreOutsideProject",
    "RestoreRefused",
    "apply_restore",
    "capture",
    "describe_plan",
    "sync_record",
]


class RestoreRefused(RuntimeError):
    """Restoring would overwrite files changed outside the agent (since the checkpoint, or
    since the plan was made); nothing was changed."""

    def __init__(self, plan: RestorePlan, message: str | None = None) -> None:
        self.plan = plan
        names = ", ".join(change.path for change in plan.conflicts)
        super().__init__(
            message
            or f"not restoring: {names} changed outside the agent since the checkpoint; "
            "look at the changes, then confirm (--force) to overwrite them"
        )


class RestoreOutsideProject(RestoreRefused):
    """Restoring would write outside the session's project (or into its ``.git``, or through a
    symlink leading out); nothing was changed."""

    def __init__(self, plan: RestorePlan, reasons: dict[str, str]) -> None:
        named = "; ".join(f"{path}: {why}" for path, why in reasons.items())
        super().__init__(
            plan,
            f"not restoring: writing these files would leave the project {plan.project_root} "
            f"({named}); a session file from elsewhere can name any path, and a directory may have "
            "become a symlink leading out since the checkpoint. Check the paths, then allow it "
            "explicitly to write them (pi-host rewind --outside-project, /rewind ENTRY_ID files "
            "outside, or confirm it in /rewind)",
        )
        self.reasons = reasons


def capture(path: str, *, algo: str, store: BlobStore, max_file_bytes: int) -> dict[str, Any]:
    """The file's state for a checkpoint (``id``, ``mode``, ``stored``), its content kept in
    ``store`` when it is at most ``max_file_bytes``; ``{"id": None}`` when absent."""
    state = file_state(path, algo)
    if state is None:
        return {"id": None}
    blob, mode, data = state
    stored = len(data) <= max_file_bytes
    if stored:
        store.put(blob, data)
    return {"id": blob, "mode": mode, "stored": stored}


def file_entry(path: str, pre: dict[str, Any], post: dict[str, Any]) -> dict[str, Any]:
    """One ``files`` item of a checkpoint entry."""
    item: dict[str, Any] = {"path": path}
    for key, state in (("pre", pre), ("post", post)):
        item[key] = state["id"]
        if state["id"] is not None:
            item[key + "Mode"] = state["mode"]
            if not state["stored"]:
                item[key + "Stored"] = False
    return item


def describe_plan(plan: RestorePlan, base: str) -> list[str]:
    """The lines that show the user what restoring would do, before it is done."""

    def shown(change: FileChange) -> str:
        rel = os.path.relpath(change.path, base)
        # A path outside the project stands out: a session file from elsewhere could name any.
        if change.outside_project:
            return f"{change.path} (OUTSIDE THE PROJECT {plan.project_root or base}: refused unless allowed)"
        return change.path if rel.startswith("..") else rel

    lines = []
    for change in plan.changes:
        line = f"  {change.action:<6} {shown(change)}"
        if change.outside:
            line += f"  (!) {change.outside}"
        if change.problem:
            line += f"  (cannot restore: {change.problem})"
        lines.append(line)
    if not lines:
        lines.append("  no file differs from the checkpoint")
    lines.extend(f"  note: {note}" for note in plan.notes)
    return lines


def _write(path: str, data: bytes, mode: int) -> None:
    """Write the file, or make the symlink, at ``path``: whatever is there (a file, a symlink,
    an empty directory) is replaced, never written through."""
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    if os.path.islink(path) or (os.path.lexists(path) and not os.path.isdir(path)):
        os.unlink(path)
    elif os.path.isdir(path):
        os.rmdir(path)  # a directory where the file was: only an empty one goes (OSError else)
    if mode == 0o120000:
        os.symlink(os.fsdecode(data), path)
        return
    fd, tmp = tempfile.mkstemp(dir=parent, prefix=".pi-checkpoint-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o755 if mode == 0o100755 else 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _remove_empty_parents(path: str, root: str | None) -> None:
    """Remove the directories a deleted file leaves empty, up to the work tree's root (git
    records no directories: one that only held files created after the point goes too)."""
    if root is None:
        return
    parent = os.path.dirname(path)
    while parent != root and parent.startswith(root + os.sep):
        try:
            os.rmdir(parent)
        except OSError:
            return
        parent = os.path.dirname(parent)


def apply_restore(
    plan: RestorePlan,
    *,
    store_root: Path,
    force: bool = False,
    max_file_bytes: int = 10 << 20,
    allow_outside_project: bool = False,
    on_wait: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Restore the files of ``plan``; returns the checkpoint entry data that records it
    (append it to the session so the restore can itself be rewound).

    One restore of a project runs at a time (a lock under ``store_root``, across processes);
    holding it, each file is checked again: one that changed since the plan was made (by
    another restore, say) stops the restore unless ``force``. Files whose content is gone
    (:attr:`FileChange.problem`) are left as they are and named in the record's ``notRestored``.

    :param allow_outside_project: write files outside :attr:`RestorePlan.project_root` too.
    :param on_wait: called before waiting for another process's restore of the project.
    :raises RestoreOutsideProject: a file lies outside the project and that is not allowed.
    :raises RestoreRefused: the plan overwrites files changed outside the agent, or files
        changed since the plan, and ``force`` is false. Nothing was changed either way.
    """
    if plan.conflicts and not force:
        raise RestoreRefused(plan)
    root = plan.project_root or plan.git_root or os.path.realpath(os.getcwd())
    with project_lock(store_root, root, on_wait):
        _check(plan, root, force=force, allow_outside_project=allow_outside_project)
        return _apply(
            plan,
            root,
            store_root=store_root,
            max_file_bytes=max_file_bytes,
            allow_outside_project=allow_outside_project,
        )


def _check(plan: RestorePlan, root: str, *, force: bool, allow_outside_project: bool) -> None:
    """Refuse before writing anything: paths that leave the project (checked again now, a
    directory may have become a symlink since the plan), files changed since the plan."""
    if not allow_outside_project:
        reasons = blocked(plan.changes, root)
        for change in plan.changes:
            if change.path not in reasons and change.outside_project:
                reasons[change.path] = "it was outside the project when the plan was made"
        if reasons:
            raise RestoreOutsideProject(plan, reasons)
    if force:
        return
    moved = []
    for change in plan.changes:
        state = project_file_state(change.path, root, plan.algo)
        if (state[0] if state is not None else None) != change.current:
            moved.append(change.path)
    if moved:
        raise RestoreRefused(
            plan,
            f"not restoring: {', '.join(moved)} changed since the restore was planned (another "
            "restore or program wrote it meanwhile); look again, or confirm (--force) to overwrite",
        )


def _in_order(changes: Sequence[FileChange]) -> list[FileChange]:
    """Deletions first, deepest first, then the rest by path: a directory that must become
    a file or a symlink is emptied before, and a symlink where a directory must be is gone
    before the files below it are written (into a new directory, not through the link)."""
    deletions = sorted((c for c in changes if c.target is None), key=lambda c: c.path, reverse=True)
    return deletions + sorted((c for c in changes if c.target is not None), key=lambda c: c.path)


def _apply(
    plan: RestorePlan, root: str, *, store_root: Path, max_file_bytes: int, allow_outside_project: bool
) -> dict[str, Any]:
    store = BlobStore(store_root / "blobs")
    repo = GitRepo.discover(plan.git_root, store_root) if plan.git_root else None
    files: list[dict[str, Any]] = []
    not_restored: list[str] = []
    failed: dict[str, str] = {}
    for change in _in_order(plan.changes):
        if not allow_outside_project and (why := escapes(change.path, root)) is not None:
            # Checked again as it is written: a symlink the restore was to remove first is
            # still there (its removal failed), or one appeared meanwhile.
            failed[change.path] = f"not written: {why}"
            not_restored.append(change.path)
            continue
        if change.problem is not None:
            not_restored.append(change.path)
            continue
        data: bytes | None = None
        if change.target is not None:
            data = (
                repo.read_blob(change.target)
                if change.source == "git" and repo is not None
                else store.get(change.target)
            )
            if data is None:
                not_restored.append(change.path)
                continue
        try:
            # What lies beyond a symlink that leads out (written only when allowed) is not kept.
            pre = (
                {"id": None}
                if leads_out(change.path, root)
                else capture(change.path, algo=plan.algo, store=store, max_file_bytes=max_file_bytes)
            )
            if data is None:
                # A symlink goes as a link, even one to a directory (never what it leads to).
                if os.path.islink(change.path) or (
                    os.path.lexists(change.path) and not os.path.isdir(change.path)
                ):
                    os.unlink(change.path)
                    _remove_empty_parents(change.path, plan.git_root)
            else:
                _write(change.path, data, change.mode)
            post = capture(change.path, algo=plan.algo, store=store, max_file_bytes=max_file_bytes)
        except OSError as exc:  # a directory where the file was, no permission …: the others go on
            failed[change.path] = exc.strerror or str(exc)
            not_restored.append(change.path)
            continue
        files.append(file_entry(change.path, pre, post))
    record: dict[str, Any] = {
        "v": 1,
        "kind": "restore",
        "run": uuid.uuid4().hex,
        "target": plan.target_id,
        "repo": {"root": plan.git_root, "algo": plan.algo} if plan.git_root else None,
        "before": plan.now_tree,
        "files": files,
    }
    if plan.now_skipped:
        record["skipped"] = list(plan.now_skipped)
    if not_restored:
        record["notRestored"] = not_restored
    if failed:
        record["errors"] = failed
    if plan.notes:
        record["notes"] = list(plan.notes)
    return record


def sync_record(
    branch: Sequence[Any], *, cwd: str, store_root: Path, max_file_bytes: int = 10 << 20
) -> dict[str, Any]:
    """The entry that records the files as they are after the conversation moved without them
    (conversation-only rewinds): the files the left branch wrote, and a snapshot of the work
    tree, taken as known so later rewinds on the new branch do not count them as outside
    changes."""
    records = checkpoint_records(branch)
    store = BlobStore(store_root / "blobs")
    repo = GitRepo.discover(cwd, store_root) if any(r.snapshots() for r in records) else None
    algo = repo.algo if repo is not None else "sha1"
    paths = sorted({recorded_path(f["path"]) for r in records for f in r.files()})
    project = project_root(cwd, store_root)
    files = []
    for path in paths:
        # Beyond a symlinked directory leading out is not the project's file: not read.
        state: dict[str, Any] = (
            {"id": None}
            if leads_out(path, project)
            else capture(path, algo=algo, store=store, max_file_bytes=max_file_bytes)
        )
        files.append(file_entry(path, state, state))
    record: dict[str, Any] = {"v": 1, "kind": "sync", "run": uuid.uuid4().hex, "files": files}
    if repo is not None:
        snapshot = repo.snapshot(max_file_bytes)
        record["repo"] = {"root": repo.root, "algo": repo.algo}
        record["before"] = snapshot.tree
        if snapshot.skipped:
            record["skipped"] = list(snapshot.skipped)
    return record
