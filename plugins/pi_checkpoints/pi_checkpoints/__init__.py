"""pi-checkpoints: file checkpoints in the session tree, and ``/rewind``.

Before ``write``, ``edit`` or any tool that declares its writes (``pi_host.Tool.writes``)
changes a file, the file's content (or its absence) is kept; in a git work tree a snapshot
of the tracked and untracked-but-not-ignored files is taken once per turn, without touching
the repository's branches, index, stash or reflogs, so ``bash``'s changes can be restored
too. Checkpoints are ``custom`` entries of the session (pi ignores them); their content
lives in ``<agent dir>/checkpoints``.

Going back: ``/rewind`` (conversation, files or both), ``/tree`` and ``/fork`` (offer the
files too), ``pi-host rewind --session FILE --list | --to ENTRY_ID``, and this API::

    from pi_checkpoints import list_points, plan_restore, apply_restore

    branch = manager.get_branch()
    point = list_points(branch, cwd=manager.cwd, store_root=store_root())[-1]
    plan = plan_restore(branch, point.entry_id, cwd=manager.cwd, store_root=store_root())
    record = apply_restore(plan, store_root=store_root())   # RestoreRefused on outside changes
    manager.append_custom_entry(CUSTOM_TYPE, record)          # so it can be undone

See ``docs/user-guide/checkpoints.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._cli import main as cli_main
from ._plugin import (
    pi_agent_end,
    pi_agent_start,
    pi_register_commands,
    pi_register_rpc_commands,
    pi_register_settings,
    pi_register_tool_middleware,
    pi_session_before_fork,
    pi_session_start,
    pi_session_tree,
    pi_turn_end,
    store_root,
    written_paths,
)
from ._settings import CheckpointSettings

if TYPE_CHECKING:
    from ._restore import RestoreOutsideProject, RestoreRefused, apply_restore, describe_plan, sync_record
    from ._timeline import (
        CUSTOM_TYPE,
        FileChange,
        RestorePlan,
        RewindPoint,
        conversation_leaf,
        list_points,
        plan_restore,
    )

__all__ = [
    "CUSTOM_TYPE",
    "CheckpointSettings",
    "FileChange",
    "RestoreOutsideProject",
    "RestorePlan",
    "RestoreRefused",
    "RewindPoint",
    "apply_restore",
    "cli_main",
    "conversation_leaf",
    "describe_plan",
    "list_points",
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
    "plan_restore",
    "store_root",
    "sync_record",
    "written_paths",
]

# The reading and restoring code is loaded on first use, so importing the entry point
# (which every start of pi-host does) stays light.
_LAZY = {
    "RestoreOutsideProject": "._restore",
    "RestoreRefused": "._restore",
    "apply_restore": "._restore",
    "describe_plan": "._restore",
    "sync_record": "._restore",
    "CUSTOM_TYPE": "._timeline",
    "FileChange": "._timeline",
    "RestorePlan": "._timeline",
    "RewindPoint": "._timeline",
    "conversation_leaf": "._timeline",
    "list_points": "._timeline",
    "plan_restore": "._timeline",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is not None:
        import importlib

        return getattr(importlib.import_module(module, __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
