"""Reading the checkpoints of a branch: the rewind points, and what restoring one changes.

Each checkpoint entry holds observations of files, in order: the snapshot taken before
(the first turn of a run, or a restore), the content of each file before a tool wrote it,
the content after, and the snapshot taken after the turn. The state of a file at a point of
the branch is its first observation at or after the point (taken before anything changed
it), or else its last one before the point.

A change between two observations is the agent's when both belong to the same run (the
tools of one prompt, ``bash`` included); a difference that first shows in a later run, or
between the last observation and the file now, was made outside the agent. Restores and
conversation rewinds are recorded as ``sync`` observations: what they found is taken as
known (the user accepted it when restoring).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ._git import GitRepo, Snapshot
from ._store import BlobStore, file_state, norm_path, recorded_path

__all__ = [
    "CUSTOM_TYPE",
    "FileChange",
    "RestorePlan",
    "RewindPoint",
    "checkpoint_records",
    "conversation_leaf",
    "escapes",
    "leads_out",
    "list_points",
    "plan_restore",
    "user_text",
]

CUSTOM_TYPE = "checkpoint"
"""The ``customType`` of the plugin's session entries (pi's ``custom`` entry, ignored by pi)."""

NO_GIT_NOTE = (
    "no git snapshots (not a git work tree, checkpoints.gitSnapshots is off, or the repository "
    "holds more files than checkpoints.gitSnapshotMaxFiles): only files "
    "written by edit, write and tools that declare their writes are restored; bash's changes are not"
)


class RewindPoint(BaseModel):
    """A point the branch can be rewound to.

    :ivar entry_id: the session entry: a user message, or a restore (to undo it).
    :ivar kind: ``"message"`` or ``"restore"``.
    :ivar text: the user message's text (first line), or what the restore did.
    :ivar timestamp: the entry's ISO 8601 time.
    :ivar files: the files changed after the point, relative to the work tree or ``cwd``
        where they lie inside it, else absolute.
    """

    model_config = ConfigDict(frozen=True)

    entry_id: str
    kind: Literal["message", "restore"]
    text: str
    timestamp: str
    files: tuple[str, ...] = ()


class FileChange(BaseModel):
    """What restoring a point does to one file.

    :ivar path: the absolute path.
    :ivar action: ``"create"``, ``"modify"`` or ``"delete"``.
    :ivar current: the blob id of the file now, ``None`` when absent.
    :ivar target: the blob id it is restored to, ``None`` to delete it.
    :ivar mode: the git file mode to restore (``0o100644``, ``0o100755``, ``0o120000``).
    :ivar source: where the content comes from: ``"git"`` (a snapshot) or ``"store"``.
    :ivar outside: why the file counts as changed outside the agent since the point, or
        ``None``; such a file is only overwritten when forced.
    :ivar problem: why the file cannot be restored (its content was too large to keep, or
        pruned), or ``None``.
    :ivar outside_project: the path lies outside the project (:attr:`RestorePlan.project_root`),
        inside its ``.git``, or is reached through a symlink that leads out of it; such a file
        is only written when explicitly allowed (a session file from elsewhere can name any path).
    """

    model_config = ConfigDict(frozen=True)

    path: str
    action: Literal["create", "modify", "delete"]
    current: str | None
    target: str | None
    mode: int = 0o100644
    source: Literal["git", "store"] | None = None
    outside: str | None = None
    problem: str | None = None
    outside_project: bool = False


class RestorePlan(BaseModel):
    """What restoring the files of a point would change, computed before anything changes.

    :ivar target_id: the point's entry id.
    :ivar changes: one per file whose content differs from the point's.
    :ivar notes: what the user should know (a directory that is not a git work tree …).
    :ivar git_root: the work tree snapshotted, ``None`` without git.
    :ivar now: the snapshot of the work tree taken for the plan, ``None`` without git.
    :ivar project_root: the session's project: the git work tree its ``cwd`` is in, else the
        ``cwd`` itself; restores write only inside it unless explicitly allowed.
    """

    model_config = ConfigDict(frozen=True)

    target_id: str
    changes: tuple[FileChange, ...] = ()
    notes: tuple[str, ...] = ()
    git_root: str | None = None
    algo: str = "sha1"
    now_tree: str | None = None
    now_skipped: tuple[str, ...] = ()
    project_root: str = ""

    @property
    def conflicts(self) -> tuple[FileChange, ...]:
        """The changes that would overwrite work done outside the agent."""
        return tuple(change for change in self.changes if change.outside is not None)

    @property
    def unrestorable(self) -> tuple[FileChange, ...]:
        return tuple(change for change in self.changes if change.problem is not None)

    @property
    def outside_project(self) -> tuple[FileChange, ...]:
        """The changes that would write outside the project (refused unless allowed)."""
        return tuple(change for change in self.changes if change.outside_project)


@dataclass
class _Record:
    index: int
    entry_id: str
    data: dict[str, Any]

    @property
    def run(self) -> str:
        return str(self.data.get("run", self.entry_id))

    @property
    def sync(self) -> bool:
        return self.data.get("kind") in ("restore", "sync")

    def snapshots(self) -> list[tuple[int, str, tuple[str, ...]]]:
        """``(seq, tree, skipped)`` for the snapshots before and after; seq orders observations."""
        found = []
        skipped = tuple(self.data.get("skipped") or ())
        if self.data.get("before"):
            found.append((0, str(self.data["before"]), skipped))
        if self.data.get("after"):
            found.append((3, str(self.data["after"]), tuple(self.data.get("afterSkipped") or ())))
        return found

    def files(self) -> list[dict[str, Any]]:
        return [f for f in self.data.get("files") or () if isinstance(f, dict) and f.get("path")]


@dataclass(order=True)
class _Obs:
    index: int
    seq: int
    run: str = field(compare=False)
    sync: bool = field(compare=False)
    value: str | None = field(compare=False)
    mode: int = field(compare=False, default=0o100644)
    source: Literal["git", "store"] = field(compare=False, default="store")
    stored: bool = field(compare=False, default=True)


def checkpoint_records(branch: Sequence[Any]) -> list[_Record]:
    """The plugin's entries on ``branch`` (root first), with their positions."""
    records = []
    for index, entry in enumerate(branch):
        if getattr(entry, "type", None) == "custom" and getattr(entry, "custom_type", None) == CUSTOM_TYPE:
            data = getattr(entry, "data", None)
            if isinstance(data, dict):
                records.append(_Record(index, entry.id, data))
    return records


def user_text(entry: Any) -> str | None:
    """The text of a user message entry, ``None`` for any other entry."""
    message = getattr(entry, "message", None) if getattr(entry, "type", None) == "message" else None
    if message is None or getattr(message, "role", None) != "user":
        return None
    content = message.content
    if isinstance(content, str):
        return content
    return " ".join(getattr(block, "text", "") for block in content if getattr(block, "type", "") == "text")


def _repo_for(records: Sequence[_Record], cwd: str, store_root: Path) -> GitRepo | None:
    """The work tree ``cwd`` is in; else one the records name that lies inside ``cwd`` (a
    root named by a session file from elsewhere is not taken on trust)."""
    found = GitRepo.discover(cwd, store_root)
    if found is not None:
        return found
    base = norm_path(cwd)
    for record in reversed(records):
        repo = record.data.get("repo")
        if isinstance(repo, dict) and repo.get("root") and escapes(str(repo["root"]), base) is None:
            found = GitRepo.discover(str(repo["root"]), store_root)
            if found is not None and escapes(found.root, base) is None:
                return found
    return None


def project_root(cwd: str, store_root: Path) -> str:
    """The session's project: the git work tree ``cwd`` is in, else ``cwd`` (resolved)."""
    repo = GitRepo.discover(cwd, store_root)
    return repo.root if repo is not None else os.path.realpath(cwd)


def escapes(path: str, root: str) -> str | None:
    """Why writing ``path`` would leave ``root``, or ``None`` when it stays inside.

    The directories on the way are resolved (a symlinked directory that leads out counts as
    out); the file itself may be a symlink, which a restore replaces rather than follows. A
    ``root`` that is ``/`` or holds the home directory keeps nothing in (a crafted session
    file can claim such a ``cwd``).
    """
    home = os.path.realpath(os.path.expanduser("~"))
    if root == os.sep or home == root or home.startswith(root.rstrip(os.sep) + os.sep):
        # A session whose cwd is / or holds the home directory would make "inside" mean anywhere.
        return f"the project {root} is / or holds the home directory, so nothing is inside it"
    real = norm_path(path)
    rel = os.path.relpath(real, root)
    if rel == "." or rel == ".." or rel.startswith(".." + os.sep):
        if norm_path(os.path.abspath(path)) != os.path.abspath(path):
            return f"it is reached through a symlink that leads out of {root}"
        return f"it is outside the project {root}"
    if rel.split(os.sep)[0] == ".git":
        return "it is inside the repository's .git"
    return None


def leads_out(path: str, root: str) -> bool:
    """Whether ``path`` lies inside ``root`` by name, yet a symlinked directory on its way leads
    out of it (a directory replaced by a link since the checkpoint, say): what is there now is
    not the project's, so it is neither read as the file's content nor written through."""
    named = os.path.relpath(os.path.abspath(path), root)
    if named == "." or named == ".." or named.startswith(".." + os.sep):
        return False
    real = os.path.relpath(norm_path(path), root)
    return real == ".." or real.startswith(".." + os.sep)


def _first_link(path: str, root: str) -> str | None:
    """The first directory on the way from ``root`` to ``path`` (by name) that is a symlink."""
    here = root
    for part in os.path.relpath(os.path.abspath(path), root).split(os.sep)[:-1]:
        here = os.path.join(here, part)
        if os.path.islink(here):
            return here
    return None


def blocked(changes: Sequence[FileChange], root: str) -> dict[str, str]:
    """``{path: why}`` for each change that would write outside ``root`` (:func:`escapes`).

    A file whose way leads out through a symlinked directory is not blocked when the same
    restore replaces that symlink (the snapshot holds a directory there, or nothing): the
    link is removed before the files below it are written, inside the project, as git's
    checkout would. The restore checks each path again just before writing it.
    """
    replaced = {c.path for c in changes if c.target is None or c.mode != 0o120000}
    reasons = {}
    for change in changes:
        why = escapes(change.path, root)
        if why is not None and leads_out(change.path, root):
            named = os.path.relpath(os.path.abspath(change.path), root)
            if named.split(os.sep)[0] != ".git" and _first_link(change.path, root) in replaced:
                why = None
        if why is not None:
            reasons[change.path] = why
    return reasons


def project_file_state(path: str, root: str, algo: str) -> tuple[str, int, bytes] | None:
    """:func:`file_state` of ``path``, absent when the way to it leads out of ``root`` by a
    symlink (the content there is not the project's and is not read)."""
    return None if leads_out(path, root) else file_state(path, algo)


def _index_of(branch: Sequence[Any], entry_id: str) -> int:
    for index, entry in enumerate(branch):
        if entry.id == entry_id:
            return index
    raise LookupError(f"entry {entry_id!r} is not on the current branch; list the points with --list")


def conversation_leaf(branch: Sequence[Any], entry_id: str) -> str | None:
    """The leaf that rewinds the conversation to the point: a user message's parent (the
    message itself is taken back, as pi's tree does), or a restore entry itself."""
    entry = branch[_index_of(branch, entry_id)]
    if user_text(entry) is not None:
        parent = entry.parent_id
        return str(parent) if parent is not None else None
    return str(entry.id)


def _shown(path: str, base: str) -> str:
    rel = os.path.relpath(path, base)
    return path if rel.startswith("..") else rel


def list_points(branch: Sequence[Any], *, cwd: str, store_root: Path) -> list[RewindPoint]:
    """The user messages and restores of ``branch`` (root first), each with the files changed
    after it according to the checkpoints."""
    records = checkpoint_records(branch)
    snapshots = [(r.index, seq, tree) for r in records for seq, tree, _ in r.snapshots()]
    repo = _repo_for(records, cwd, store_root) if snapshots else None
    base = repo.root if repo is not None else norm_path(cwd)
    last_tree = snapshots[-1][2] if snapshots else None
    diffs: dict[str, list[str]] = {}
    points = []
    for index, entry in enumerate(branch):
        text = user_text(entry)
        restore = next((r for r in records if r.index == index and r.data.get("kind") == "restore"), None)
        if text is None and restore is None:
            continue
        files: set[str] = set()
        for record in records:
            if record.index >= index:
                files.update(
                    recorded_path(f["path"]) for f in record.files() if f.get("pre") != f.get("post")
                )
        if repo is not None and last_tree is not None:
            after = [s for s in snapshots if s[0] >= index]
            start = after[0][2] if after else None
            if start is not None:
                if start not in diffs:  # consecutive points often share their first snapshot
                    diffs[start] = repo.changed(start, last_tree)
                files.update(os.path.join(repo.root, rel) for rel in diffs[start])
        if restore is not None:
            kind: Literal["message", "restore"] = "restore"
            label = f"restore of the files of {restore.data.get('target', '?')} (rewind here to undo it)"
        else:
            kind, label = "message", (text or "").strip().splitlines()[0] if (text or "").strip() else ""
        points.append(
            RewindPoint(
                entry_id=entry.id,
                kind=kind,
                text=label,
                timestamp=str(getattr(entry, "timestamp", "")),
                files=tuple(sorted(_shown(path, base) for path in files)),
            )
        )
    return points


def _observe(
    path: str,
    rel: str | None,
    records: Sequence[_Record],
    snapshots: Sequence[tuple[_Record, int, str, tuple[str, ...]]],
    in_tree: dict[str, dict[str, tuple[int, str]]],
    ignored: set[str],
) -> list[_Obs]:
    """Every observation of ``path`` in ``records`` and ``snapshots``, in order."""
    observations: list[_Obs] = []
    for record, seq, tree, skipped in snapshots:
        if rel is None or rel in skipped or tree not in in_tree:
            continue
        found = in_tree[tree].get(rel)
        if found is None and rel in ignored:
            continue
        mode, value = found if found is not None else (0o100644, None)
        observations.append(_Obs(record.index, seq, record.run, record.sync, value, mode, "git"))
    for record in records:
        for f in record.files():
            if recorded_path(f["path"]) != path:
                continue
            for seq, key in ((1, "pre"), (2, "post")):
                if key in f:
                    observations.append(
                        _Obs(
                            record.index,
                            seq,
                            record.run,
                            record.sync,
                            f[key],
                            int(f.get(key + "Mode") or 0o100644),
                            "store",
                            bool(f.get(key + "Stored", True)),
                        )
                    )
    observations.sort()
    return observations


def _snapshots(records: Sequence[_Record]) -> list[tuple[_Record, int, str, tuple[str, ...]]]:
    return [(r, seq, tree, skipped) for r in records for seq, tree, skipped in r.snapshots()]


def plan_restore(
    branch: Sequence[Any],
    entry_id: str,
    *,
    cwd: str,
    store_root: Path,
    from_branch: Sequence[Any] | None = None,
    state: Literal["before", "after"] = "before",
    max_file_bytes: int = 10 << 20,
) -> RestorePlan:
    """What restoring the files of point ``entry_id`` of ``branch`` would change, and what it
    would overwrite that was changed outside the agent.

    :param from_branch: the branch the files come from when it is not ``branch`` (after a
        ``/tree`` navigation: the branch left), so the agent's changes there are known.
    :param state: ``"before"``: the files as they were before what follows the entry (a
        user message: before the agent acted on it; a restore: before it restored);
        ``"after"``: as they were once the entry was written (a leaf reached by ``/tree``).

    Takes a snapshot of the work tree now (when the branches have git snapshots), which a
    restore of this plan records as its own "before".

    :raises LookupError: ``entry_id`` is not on ``branch``.
    """
    target = _index_of(branch, entry_id)
    source_branch = branch if from_branch is None else from_branch
    records = checkpoint_records(branch)
    source = records if from_branch is None else checkpoint_records(from_branch)
    source_ids = {entry.id for entry in source_branch}
    common = -1
    for index, entry in enumerate(branch):
        if entry.id not in source_ids:
            break
        common = index
    has_snapshots = any(r.snapshots() for r in (*records, *source))
    repo = _repo_for([*records, *source], cwd, store_root) if has_snapshots else None
    algo = repo.algo if repo is not None else "sha1"
    project = project_root(cwd, store_root)
    notes: list[str] = []
    if repo is None:
        notes.append(NO_GIT_NOTE)
    now: Snapshot | None = repo.snapshot(max_file_bytes) if repo is not None else None
    submodules = repo.submodules() if repo is not None and now is not None else []
    if submodules:
        notes.append(
            "the contents of submodules are not recorded and are left as they are: " + ", ".join(submodules)
        )

    # The snapshots that can decide a file: the last before the point and every one after.
    snapshots = _snapshots(records)
    before = [s for s in snapshots if s[0].index < target or (state == "after" and s[0].index == target)]
    relevant = ([before[-1]] if before else []) + [s for s in snapshots if s[0].index >= target]
    first = min(target, common + 1)
    source_snapshots = [s for s in _snapshots(source) if s[0].index >= first - 1]

    paths: set[str] = set()
    for record in records:
        if record.index >= target:
            paths.update(recorded_path(f["path"]) for f in record.files())
    for record in source:
        if record.index >= first:
            paths.update(recorded_path(f["path"]) for f in record.files())
    diverged_snapshots = [s for s in source_snapshots if s[0].index > common]
    # The snapshot holding the point's state: for "before", the first at or after the point
    # (else the last before it); for "after", the last up to it; else where the branches parted.
    snapshots_after = [s for s in snapshots if s[0].index >= target]
    decisive = (snapshots_after[0] if snapshots_after and state == "before" else None) or (
        before[-1] if before else (diverged_snapshots[0] if diverged_snapshots else None)
    )
    if repo is not None and now is not None and decisive is not None:
        paths.update(os.path.join(repo.root, rel) for rel in repo.changed(decisive[2], now.tree))
        paths.update(os.path.join(repo.root, rel) for rel in now.skipped)

    rels = {path: repo.relative(path) for path in paths} if repo is not None else {}
    wanted = sorted({rel for rel in rels.values() if rel is not None})
    in_tree: dict[str, dict[str, tuple[int, str]]] = {}
    if repo is not None:
        for _, _, tree, _ in (*relevant, *source_snapshots):
            if tree not in in_tree:
                in_tree[tree] = repo.entries(tree, wanted)
    ignored = repo.ignored(wanted) if repo is not None else set()

    changes: list[FileChange] = []
    for path in sorted(paths):
        rel = rels.get(path)
        observations = _observe(path, rel, records, relevant, in_tree, ignored)
        # What happened to the file since the point, on the branch the files come from.
        seen = _observe(path, rel, source, source_snapshots, in_tree, ignored)
        chosen: _Obs | None
        if state == "after":
            upto = [obs for obs in observations if obs.index <= target]
            chosen = upto[-1] if upto else None
        else:
            at_or_after = [obs for obs in observations if obs.index >= target]
            chosen = at_or_after[0] if at_or_after else (observations[-1] if observations else None)
        from_source = chosen is None
        if chosen is None:
            # Nothing recorded on the point's branch yet (a point before the first change):
            # the file as it was when the branch the files come from left it.
            diverged = [obs for obs in seen if obs.index > common]
            if not diverged:
                continue
            chosen = diverged[0]
        now_state = project_file_state(path, project, algo)
        current = now_state[0] if now_state is not None else None
        current_mode = now_state[1] if now_state is not None else None
        if chosen.value == current and (chosen.value is None or chosen.mode == current_mode):
            continue
        unrecorded = [(r.index, seq) for r, seq, _, skipped in source_snapshots if rel in skipped]
        if from_source:
            later = [obs for obs in seen if (obs.index, obs.seq) >= (chosen.index, chosen.seq)]
            outside = _outside(later, current, unrecorded)
        elif chosen.index <= common:
            later = [obs for obs in seen if (obs.index, obs.seq) > (chosen.index, chosen.seq)]
            outside = _outside([chosen, *later], current, unrecorded)
        else:  # the point is on another branch: what the agent did since the branches parted
            later = [obs for obs in seen if obs.index > common]
            outside = _outside(later or [chosen], current, unrecorded)
        problem = None
        if chosen.value is not None and chosen.source == "store":
            if not chosen.stored:
                problem = "its content was larger than maxFileBytes and was not kept"
            elif not BlobStore(store_root / "blobs").has(chosen.value):
                problem = "its content has been pruned from the checkpoint store"
        action: Literal["create", "modify", "delete"] = (
            "delete" if chosen.value is None else "create" if current is None else "modify"
        )
        changes.append(
            FileChange(
                path=path,
                action=action,
                current=current,
                target=chosen.value,
                mode=chosen.mode,
                source=chosen.source if chosen.value is not None else None,
                outside=outside,
                problem=problem,
            )
        )
    leaving = blocked(changes, project)
    changes = [c.model_copy(update={"outside_project": True}) if c.path in leaving else c for c in changes]
    if repo is not None:
        missing = repo.missing(c.target for c in changes if c.source == "git" and c.target)
        if missing:
            changes = [
                c.model_copy(update={"problem": "its content has been pruned from the checkpoint store"})
                if c.target in missing
                else c
                for c in changes
            ]
    return RestorePlan(
        target_id=entry_id,
        changes=tuple(changes),
        notes=tuple(notes),
        git_root=repo.root if repo is not None else None,
        algo=algo,
        now_tree=now.tree if now is not None else None,
        now_skipped=now.skipped if now is not None else (),
        project_root=project,
    )


def _outside(
    observations: Sequence[_Obs], current: str | None, unrecorded: Sequence[tuple[int, int]] = ()
) -> str | None:
    """Why the file counts as changed outside the agent after the first observation, or ``None``.

    :param unrecorded: where snapshots left the file out for its size (``(index, seq)``):
        after such a snapshot its content is unknown, so the file now is not compared.
    """
    for earlier, later in itertools.pairwise(observations):
        if later.value != earlier.value and later.run != earlier.run and not later.sync:
            return "changed outside the agent between two prompts"
    last = observations[-1]
    if any(at > (last.index, last.seq) for at in unrecorded):
        return None
    if last.value != current:
        return "changed outside the agent since the last checkpoint"
    return None
