"""pi-checkpoints' hooks: record checkpoints as the agent works, and offer to go back.

- Before a tool writes (``write``, ``edit``, any tool with :attr:`pi_host.Tool.writes`), a
  tool middleware keeps each file's content (or its absence) and, after the call, its new
  content.
- In a git work tree, a snapshot of the work tree is taken before the first tool of a run
  that may write (anything but ``read``, ``grep``, ``find``, ``ls``) and after each turn
  that called one (:mod:`pi_checkpoints._git`): ``bash``'s changes are covered too.
- At each turn's end one ``custom`` entry (``customType: "checkpoint"``) records both.
- ``/rewind``, ``/tree`` and ``/fork`` offer to put the files back.

Everything heavy (git, hashing, the store) runs in a worker thread.
"""

from __future__ import annotations

import fcntl
import logging
import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pi_host import SettingsSection, agent_dir, hookimpl
from pi_host.hookspecs import Command, StashKey

from ._settings import CheckpointSettings

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from pi_host import ToolInvocation, ToolMiddleware, ToolNext, ToolResult
    from pi_host.hookspecs import CommandContext, PluginContext, RpcCommand

    from ._git import GitRepo, Snapshot
    from ._timeline import RestorePlan, RewindPoint

__all__ = [
    "pi_agent_end",
    "pi_agent_start",
    "pi_register_commands",
    "pi_register_rpc_commands",
    "pi_register_settings",
    "pi_register_tool_middleware",
    "pi_session_before_fork",
    "pi_session_start",
    "pi_session_tree",
    "pi_turn_end",
    "store_root",
    "written_paths",
]

logger = logging.getLogger("pi_checkpoints")

# The tools pi ships that write one file named by ``path``: recognised even when a plugin
# replaces them without declaring ``Tool.writes``.
_PATH_WRITERS = frozenset({"write", "edit"})
# pi's tools that only read: a turn that called nothing else changed nothing (no snapshot).
_READ_ONLY = frozenset({"read", "grep", "find", "ls"})
_PRUNE_EVERY_S = 86400


def store_root() -> Path:
    """Where checkpoints keep their content: ``<agent dir>/checkpoints``."""
    return agent_dir() / "checkpoints"


@dataclass
class _Run:
    id: str
    before: Snapshot | None = None
    before_taken: bool = False
    dirty: bool = False  # a tool that may write ran since the last snapshot
    lock: Any = None  # an anyio.Lock, made in the event loop
    wrote_first: bool = False
    last_tree: str | None = None
    last_skipped: tuple[str, ...] = ()
    # path -> (first pre-image, latest post-image) in the current turn
    files: dict[str, tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=dict)


@dataclass
class _State:
    settings: CheckpointSettings
    cwd: str
    repo: GitRepo | None = None
    repo_known: bool = False
    run: _Run | None = None
    quiet: bool = False  # our own navigation is in progress: do not offer to restore again


_STATE = StashKey[_State]()
# Files to restore once a fork the user confirmed has happened (pi_session_start "fork"),
# with the session file forked from: another plugin may still cancel the fork after us. In
# the session's stash, which outlives the fork and is no other session's (sessions in one
# process may share a file name: every unsaved one has none).
_FORK_PLAN = StashKey[tuple[str, "RestorePlan"]]()


def _state(ctx: PluginContext) -> _State | None:
    state = ctx.stash.get(_STATE, None)
    if state is None:
        try:
            settings = ctx.plugin_settings(CheckpointSettings)
        except LookupError:
            settings = CheckpointSettings()
        state = _State(settings=settings, cwd=ctx.cwd)
        ctx.stash[_STATE] = state
    return state if state.settings.enabled else None


def _repo(state: _State) -> GitRepo | None:
    if not state.repo_known:
        from ._git import GitRepo

        state.repo = GitRepo.discover(state.cwd, store_root()) if state.settings.git_snapshots else None
        limit = state.settings.git_snapshot_max_files
        if state.repo is not None and state.repo.tracked_count() > limit:
            logger.info(
                "pi-checkpoints: %s holds more than checkpoints.gitSnapshotMaxFiles (%d) files: "
                "no snapshots, only the files edit and write change are kept",
                state.repo.root,
                limit,
            )
            state.repo = None
        state.repo_known = True
    return state.repo


def _algo(state: _State) -> str:
    return state.repo.algo if state.repo is not None else "sha1"


async def _thread(fn: Callable[[], Any]) -> Any:
    import anyio

    return await anyio.to_thread.run_sync(fn)


def written_paths(call: ToolInvocation) -> list[str]:
    """The files a tool call declares it writes (``Tool.writes``); for ``write`` and
    ``edit`` without a declaration, their ``path`` argument."""
    tool = call.tool
    if tool.writes is not None:
        return [os.path.abspath(path) for path in tool.writes(call.params, call.ctx.cwd)]
    path = getattr(call.params, "path", None)
    if tool.name in _PATH_WRITERS and isinstance(path, str):
        return [os.path.abspath(os.path.join(call.ctx.cwd, os.path.expanduser(path)))]
    return []


# -- registration -------------------------------------------------------------------------


@hookimpl
def pi_register_settings(register: Callable[[SettingsSection], None]) -> None:
    register(SettingsSection("checkpoints", CheckpointSettings, "File checkpoints and /rewind"))


@hookimpl
def pi_register_tool_middleware(register: Callable[[ToolMiddleware], None]) -> None:
    from pi_host import ToolMiddleware

    register(ToolMiddleware(name="checkpoints", wrap=_keep_pre_images))


@hookimpl
def pi_register_commands(register: Callable[[Command], None]) -> None:
    register(
        Command(
            name="rewind",
            description="Go back to an earlier message: the conversation, the files, or both",
            handler=_rewind_command,
        )
    )


# -- recording ----------------------------------------------------------------------------


async def _keep_pre_images(call: ToolInvocation, call_next: ToolNext) -> ToolResult:
    ctx = call.ctx.session
    state = _state(ctx) if ctx is not None and call.tool.name not in _READ_ONLY else None
    if state is None or state.run is None:
        return await call_next()
    run = state.run
    await _snapshot_before(state, run)
    run.dirty = True
    paths = written_paths(call)
    if not paths:
        return await call_next()
    from ._restore import capture
    from ._store import BlobStore, norm_path

    store = BlobStore(store_root() / "blobs")
    limit = state.settings.max_file_bytes
    algo = _algo(state)
    targets = list(dict.fromkeys(path for p in paths for path in _written_files(norm_path(p))))
    fresh = [p for p in targets if p not in run.files]
    if fresh:
        pres = await _thread(
            lambda: [capture(p, algo=algo, store=store, max_file_bytes=limit) for p in fresh]
        )
        for path, pre in zip(fresh, pres, strict=True):
            run.files.setdefault(path, (pre, pre))
    try:
        return await call_next()
    finally:
        posts = await _thread(
            lambda: [capture(p, algo=algo, store=store, max_file_bytes=limit) for p in targets]
        )
        for path, post in zip(targets, posts, strict=True):
            pre = run.files.get(path, (post, post))[0]
            run.files[path] = (pre, post)


def _written_files(path: str) -> list[str]:
    """``path``, and when it is a symlink the file it leads to: ``write`` and ``edit`` write
    through a link, so that file is what changes (kept by its real path; restoring it is
    refused when it lies outside the project, unless allowed). The link itself is kept as a
    link."""
    if not os.path.islink(path):
        return [path]
    real = os.path.realpath(path)
    return [path] if real == path else [path, real]


async def _snapshot_before(state: _State, run: _Run) -> None:
    """The run's first snapshot, taken before its first tool that may write runs (parallel
    calls wait for the one snapshot): a run that only talks or reads costs nothing."""
    import anyio

    if run.before_taken:
        return
    if run.lock is None:
        run.lock = anyio.Lock()
    async with run.lock:
        if run.before_taken:
            return
        repo = await _thread(lambda: _repo(state))
        if repo is not None:
            limit = state.settings.max_file_bytes
            try:
                run.before = await _thread(lambda: repo.snapshot(limit))
            except Exception as exc:  # a broken repository must not stop the run
                logger.warning("pi-checkpoints: no snapshot of %s: %s", repo.root, exc)
            else:
                run.last_tree, run.last_skipped = run.before.tree, run.before.skipped
        run.before_taken = True


@hookimpl
def pi_agent_start(ctx: PluginContext) -> None:
    state = _state(ctx)
    if state is not None:
        state.run = _Run(id=uuid.uuid4().hex)


async def _flush(ctx: PluginContext, state: _State, *, snapshot: bool) -> None:
    run = state.run
    if run is None:
        return
    repo = state.repo
    after: Snapshot | None = None
    if repo is not None and snapshot:
        limit = state.settings.max_file_bytes
        try:
            after = await _thread(lambda: repo.snapshot(limit))
        except Exception as exc:
            logger.warning("pi-checkpoints: no snapshot of %s: %s", repo.root, exc)
    from ._restore import file_entry

    data: dict[str, Any] = {"v": 1, "kind": "turn", "run": run.id}
    if repo is not None:
        data["repo"] = {"root": repo.root, "algo": repo.algo}
    if not run.wrote_first and run.before is not None:
        data["before"] = run.before.tree
        if run.before.skipped:
            data["skipped"] = list(run.before.skipped)
    files = [file_entry(path, pre, post) for path, (pre, post) in run.files.items()]
    if files:
        data["files"] = files
    if after is not None and (after.tree, after.skipped) != (run.last_tree, run.last_skipped):
        data["after"] = after.tree
        if after.skipped:
            data["afterSkipped"] = list(after.skipped)
        run.last_tree, run.last_skipped = after.tree, after.skipped
    run.files = {}
    run.dirty = False
    if "before" in data or "files" in data or "after" in data:
        ctx.append_entry("checkpoint", data)
        run.wrote_first = True


@hookimpl
async def pi_turn_end(ctx: PluginContext) -> None:
    state = _state(ctx)
    if state is not None and state.run is not None:
        await _flush(ctx, state, snapshot=state.run.dirty)


@hookimpl
async def pi_agent_end(ctx: PluginContext) -> None:
    state = _state(ctx)
    if state is not None and state.run is not None:
        if state.run.dirty or state.run.files:  # a run aborted inside a turn
            await _flush(ctx, state, snapshot=True)
        state.run = None


@hookimpl
async def pi_session_start(reason: str, previous_session_file: str | None, ctx: PluginContext) -> None:
    state = _state(ctx)
    if state is None:
        return
    if reason == "fork":
        pending = ctx.stash.get(_FORK_PLAN, None)
        if pending is not None:
            del ctx.stash[_FORK_PLAN]
        plan = pending[1] if pending is not None and pending[0] == str(previous_session_file) else None
        if plan is not None:
            # The user confirmed the plan, with its files outside the project, before the fork.
            record = await _restore(ctx, plan, force=True, allow_outside_project=True)
            ctx.append_entry("checkpoint", record)  # in the new session: undone from there
            _report(ctx, record)
    settings = state.settings
    await _thread(lambda: _prune_now_and_then(settings))


def _prune_now_and_then(settings: CheckpointSettings) -> None:
    root = store_root()
    stamp = root / "last-prune"
    try:
        if time.time() - stamp.stat().st_mtime < _PRUNE_EVERY_S:
            return
    except FileNotFoundError:
        pass
    if not root.is_dir():
        return
    from contextlib import ExitStack

    from ._store import prune

    git_dirs = sorted(path for path in (root / "git").glob("*") if path.is_dir())
    with ExitStack() as stack:
        for git_dir in git_dirs:  # no snapshot is taken while its objects are pruned
            lock = stack.enter_context(open(git_dir / "lock", "w"))
            fcntl.flock(lock, fcntl.LOCK_EX)
        roots = [root / "blobs", *(git_dir / "objects" for git_dir in git_dirs)]
        removed, size, touched = prune(
            roots, max_bytes=settings.max_store_bytes, max_age_days=settings.max_age_days
        )
        for objects in touched - {root / "blobs"}:
            # A snapshot index caches blob and tree ids: one that may name pruned objects
            # goes with them (the next snapshot starts afresh from the user's index).
            (objects.parent / "index").unlink(missing_ok=True)
    if removed:
        logger.info("pi-checkpoints: pruned %d files (%d bytes)", removed, size)
    stamp.touch()


# -- going back -----------------------------------------------------------------------------


def _branch(ctx: PluginContext, leaf: str | None = None) -> list[Any]:
    manager = ctx.session_manager
    if leaf is None and manager.leaf_id is None:
        return []
    return list(manager.get_branch(leaf))


def _labels(points: Sequence[RewindPoint]) -> list[str]:
    """One line per point; a repeated message gets ``(2)``, ``(3)`` … so each line is unique."""
    labels: list[str] = []
    for point in points:
        label, n = _label(point), 1
        while label in labels:
            n += 1
            label = f"{_label(point)} ({n})"
        labels.append(label)
    return labels


def _label(point: RewindPoint) -> str:
    text = point.text if len(point.text) <= 60 else point.text[:59] + "…"
    if not point.files:
        return f"{text}  (no file changes after it)"
    names = ", ".join(point.files[:3]) + (f" +{len(point.files) - 3}" if len(point.files) > 3 else "")
    return f"{text}  ({len(point.files)} file{'s' if len(point.files) != 1 else ''}: {names})"


async def _confirm_plan(
    ctx: PluginContext, plan: RestorePlan, title: str, *, force: bool = False
) -> bool | None:
    """Show what restoring changes and ask; ``None`` when there is nothing to restore."""
    from ._restore import describe_plan

    if not plan.changes:
        return None
    preview = "\n".join(describe_plan(plan, plan.git_root or ctx.cwd))
    if not await ctx.ui.confirm(title, preview):
        return False
    if plan.conflicts and not force:
        names = "\n".join(f"  {change.path}: {change.outside}" for change in plan.conflicts)
        if not await ctx.ui.confirm(
            "Overwrite changes made outside the agent?",
            f"These files changed outside the agent since the checkpoint:\n{names}",
        ):
            return False
    if plan.outside_project:
        names = "\n".join(f"  {change.path}" for change in plan.outside_project)
        return await ctx.ui.confirm(
            f"Write files outside the project {plan.project_root}?",
            f"The checkpoint names files outside the project (or in .git):\n{names}",
        )
    return True


async def _restore(
    ctx: PluginContext, plan: RestorePlan, *, force: bool, allow_outside_project: bool = False
) -> dict[str, Any]:
    from ._restore import apply_restore

    state = _state(ctx)
    limit = state.settings.max_file_bytes if state is not None else 10 << 20
    return dict(
        await _thread(
            lambda: apply_restore(
                plan,
                store_root=store_root(),
                force=force,
                max_file_bytes=limit,
                allow_outside_project=allow_outside_project,
            )
        )
    )


def _report(ctx: PluginContext, record: dict[str, Any]) -> None:
    restored = len(record.get("files") or ())
    text = f"restored {restored} file{'s' if restored != 1 else ''}"
    left = record.get("notRestored") or []
    if left:
        errors = record.get("errors") or {}
        why = [f"{path} ({errors.get(path, 'its content was not kept')})" for path in left]
        text += f"; not restored: {', '.join(why)}"
    ctx.ui.notify(text, "warning" if left else "info")


_ACTIONS = {"both": "Conversation and files", "conversation": "Conversation only", "files": "Files only"}


async def _rewind_command(args: str, ctx: CommandContext) -> None:
    """``/rewind``: choose a point and what to restore; or, for scripts and RPC clients,
    ``/rewind ENTRY_ID [both|files|conversation] [force] [outside]`` (``outside``: write files
    outside the project too)."""
    from ._timeline import NO_GIT_NOTE, list_points

    await ctx.wait_for_idle()
    state = _state(ctx)
    if state is None:
        ctx.ui.notify("checkpoints are disabled (settings: checkpoints.enabled)", "warning")
        return
    words = args.split()
    branch = _branch(ctx)
    points = await _thread(lambda: list_points(branch, cwd=ctx.cwd, store_root=store_root()))
    if not points:
        ctx.ui.notify("nothing to rewind to: no user message on this branch", "info")
        return
    force = "force" in words or "--force" in words
    outside = "outside" in words or "--outside-project" in words
    if words and not words[0].startswith("-") and words[0] not in ("force", "outside"):
        point = next((p for p in points if p.entry_id == words[0]), None)
        if point is None:
            ctx.ui.notify(f"/rewind: {words[0]} is not a rewind point of this branch", "error")
            return
        action = next((w.strip("-") for w in words[1:] if w.strip("-") in _ACTIONS), "both")
    else:
        newest = list(reversed(points))
        labels = _labels(newest)
        title = "Rewind to before which message?"
        if _repo(state) is None:
            title += f" ({NO_GIT_NOTE})"
        picked = await ctx.ui.select(title, labels)
        if picked is None:
            return
        point = newest[labels.index(picked)]
        choices = [_ACTIONS["both"], _ACTIONS["conversation"], _ACTIONS["files"]]
        if point.kind == "restore":
            choices = [_ACTIONS["files"]]
        chosen = await ctx.ui.select("Restore what?", choices)
        if chosen is None:
            return
        action = next(key for key, label in _ACTIONS.items() if label == chosen)
    if point.kind == "restore":
        action = "files"
    from ._restore import RestoreRefused, describe_plan

    try:
        await _rewind(
            ctx,
            state,
            branch,
            point.entry_id,
            action,
            force=force,
            ask=not words,
            editor=True,
            allow_outside_project=outside,
        )
    except RestoreRefused as refused:
        preview = "\n".join(describe_plan(refused.plan, refused.plan.git_root or ctx.cwd))
        ctx.ui.notify(f"{refused}\n{preview}", "error")


async def _rewind(
    ctx: CommandContext,
    state: _State,
    branch: list[Any],
    entry_id: str,
    action: str,
    *,
    force: bool,
    ask: bool,
    editor: bool = False,
    allow_outside_project: bool = False,
) -> dict[str, Any]:
    """Rewind to ``entry_id``; returns what was done (``restored``, ``leafId`` …).

    :raises RestoreRefused: without ``ask``, when files changed outside the agent and not
        ``force``; :class:`~pi_checkpoints.RestoreOutsideProject` when a file lies outside
        the project and not ``allow_outside_project``. Checked before anything moves.
    """
    from ._restore import RestoreOutsideProject, RestoreRefused, sync_record
    from ._timeline import conversation_leaf, escapes, plan_restore, user_text

    limit = state.settings.max_file_bytes
    done: dict[str, Any] = {"entryId": entry_id, "restore": action, "restored": [], "notRestored": []}
    plan = None
    if action in ("both", "files"):
        plan = await _thread(
            lambda: plan_restore(branch, entry_id, cwd=ctx.cwd, store_root=store_root(), max_file_bytes=limit)
        )
        done["notes"] = list(plan.notes)
        if ask:
            decision = await _confirm_plan(ctx, plan, "Restore these files?", force=force)
            if decision is False:
                done["cancelled"] = True
                return done
            force = force or bool(plan.conflicts)
            allow_outside_project = allow_outside_project or bool(plan.outside_project)
        elif plan.conflicts and not force:
            raise RestoreRefused(plan)
        elif plan.outside_project and not allow_outside_project:
            raise RestoreOutsideProject(
                plan,
                {
                    c.path: escapes(c.path, plan.project_root) or "outside the project"
                    for c in plan.outside_project
                },
            )
    if action in ("both", "conversation"):
        leaf = conversation_leaf(branch, entry_id)
        if leaf != ctx.session_manager.leaf_id:
            state.quiet = True
            try:
                if await ctx.navigate_tree(entry_id):
                    done["cancelled"] = True
                    return done
            finally:
                state.quiet = False
            text = next((user_text(e) for e in branch if e.id == entry_id), None)
            if editor and text:
                ctx.ui.set_editor_text(text)  # the message comes back for editing, as with /tree
        done["leafId"] = ctx.session_manager.leaf_id
    if plan is not None and plan.changes:
        record = await _restore(ctx, plan, force=force, allow_outside_project=allow_outside_project)
        ctx.append_entry("checkpoint", record)
        done["restored"] = [f["path"] for f in record["files"]]
        done["notRestored"] = record.get("notRestored", [])
        _report(ctx, record)
    elif action == "conversation":
        record = await _thread(
            lambda: sync_record(branch, cwd=ctx.cwd, store_root=store_root(), max_file_bytes=limit)
        )
        ctx.append_entry("checkpoint", record)
    elif plan is not None:
        ctx.ui.notify("no file differs from the checkpoint", "info")
    return done


# -- RPC mode -----------------------------------------------------------------------------


def _entry_id(command: Mapping[str, Any]) -> str:
    entry_id = command.get("entryId")
    if not isinstance(entry_id, str) or not entry_id:
        raise ValueError(f"{command.get('type')}: entryId is required (a point from rewind_list)")
    return entry_id


async def _rpc_list(command: Mapping[str, Any], ctx: CommandContext) -> Any:
    from ._timeline import NO_GIT_NOTE, list_points

    state = _state(ctx)
    branch = _branch(ctx)
    points = await _thread(lambda: list_points(branch, cwd=ctx.cwd, store_root=store_root()))
    git = state is not None and await _thread(lambda: _repo(state)) is not None
    return {
        "points": [p.model_dump(mode="json") for p in points],
        "notes": [] if git else [NO_GIT_NOTE],
    }


async def _rpc_preview(command: Mapping[str, Any], ctx: CommandContext) -> Any:
    from ._timeline import plan_restore

    entry_id = _entry_id(command)
    branch = _branch(ctx)
    plan = await _thread(lambda: plan_restore(branch, entry_id, cwd=ctx.cwd, store_root=store_root()))
    return {"changes": [c.model_dump(mode="json") for c in plan.changes], "notes": list(plan.notes)}


async def _rpc_rewind(command: Mapping[str, Any], ctx: CommandContext) -> Any:
    state = _state(ctx)
    if state is None:
        raise RuntimeError("checkpoints are disabled (settings: checkpoints.enabled)")
    action = command.get("restore", "both")
    if action not in _ACTIONS:
        raise ValueError(f"rewind: restore must be one of {', '.join(_ACTIONS)}, not {action!r}")
    await ctx.wait_for_idle()
    return await _rewind(
        ctx,
        state,
        _branch(ctx),
        _entry_id(command),
        action,
        force=bool(command.get("force")),
        ask=False,
        allow_outside_project=bool(command.get("allowOutsideProject")),
    )


@hookimpl
def pi_register_rpc_commands(register: Callable[[RpcCommand], None]) -> None:
    from pi_host.hookspecs import RpcCommand

    register(
        RpcCommand(
            "rewind_list", _rpc_list, "The rewind points of the branch, with the files changed after each"
        )
    )
    register(RpcCommand("rewind_preview", _rpc_preview, "What restoring the files of a point would change"))
    register(RpcCommand("rewind", _rpc_rewind, "Rewind the conversation, the files or both to a point"))


@hookimpl
async def pi_session_tree(new_leaf_id: str | None, old_leaf_id: str | None, ctx: PluginContext) -> None:
    """After ``/tree`` moved the conversation: offer to move the files to that point too."""
    state = _state(ctx)
    if state is None or state.quiet or not ctx.has_ui or old_leaf_id is None:
        return
    from ._timeline import plan_restore

    old = _branch(ctx, old_leaf_id)
    if new_leaf_id is None:
        if not old:
            return
        branch, target, when = old, old[0].id, "before"
    else:
        branch, target, when = _branch(ctx, new_leaf_id), new_leaf_id, "after"
    limit = state.settings.max_file_bytes
    plan = await _thread(
        lambda: plan_restore(
            branch,
            target,
            cwd=ctx.cwd,
            store_root=store_root(),
            from_branch=old,
            state=when,  # type: ignore[arg-type]
            max_file_bytes=limit,
        )
    )
    decision = await _confirm_plan(ctx, plan, "Restore the files of this point too?")
    if decision:
        record = await _restore(ctx, plan, force=True, allow_outside_project=True)
        ctx.append_entry("checkpoint", record)
        _report(ctx, record)


@hookimpl
async def pi_session_before_fork(entry_id: str, position: str, ctx: PluginContext) -> None:
    """Before ``/fork`` from a message: offer to restore the files as they were before it."""
    state = _state(ctx)
    if _FORK_PLAN in ctx.stash:  # a fork cancelled earlier
        del ctx.stash[_FORK_PLAN]
    if state is None or state.quiet or not ctx.has_ui or position != "before":
        return
    from ._timeline import plan_restore

    branch = _branch(ctx)
    if not any(entry.id == entry_id for entry in branch):
        return
    limit = state.settings.max_file_bytes
    plan = await _thread(
        lambda: plan_restore(branch, entry_id, cwd=ctx.cwd, store_root=store_root(), max_file_bytes=limit)
    )
    decision = await _confirm_plan(ctx, plan, "Restore the files as they were before this message?")
    if decision:
        ctx.stash[_FORK_PLAN] = (str(ctx.session_manager.session_file), plan)
