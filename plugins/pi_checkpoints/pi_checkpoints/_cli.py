"""``pi-host rewind``: list a session's rewind points and restore one, outside a session.

    pi-host rewind --session FILE --list [--json]
    pi-host rewind --session FILE --to ENTRY_ID [--files|--conversation|--both] [--force]
        [--outside-project] [--json]

Restoring prints what changes first; a file changed outside the agent since the checkpoint
stops the restore (exit status 3) unless ``--force``; so does a file outside the session's
project (or in its ``.git``, or behind a symlink leading out), unless ``--outside-project``.
The restore is written to the session as a checkpoint entry of its own, so rewinding to it
undoes it. Rewinding the conversation moves the session's leaf: the next
``pi-host --session FILE`` continues from before the message.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pi-host rewind", description="List the rewind points of a session, or go back to one."
    )
    parser.add_argument("--session", required=True, metavar="FILE", help="the session file (.jsonl)")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--list", action="store_true", help="print the points: entry id, message, files changed"
    )
    what.add_argument("--to", metavar="ENTRY_ID", help="rewind to this point")
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument("--files", dest="scope", action="store_const", const="files", help="the files only")
    scope.add_argument(
        "--conversation",
        dest="scope",
        action="store_const",
        const="conversation",
        help="the conversation only",
    )
    scope.add_argument("--both", dest="scope", action="store_const", const="both", help="both (the default)")
    parser.add_argument("--force", action="store_true", help="overwrite files changed outside the agent")
    parser.add_argument(
        "--outside-project",
        action="store_true",
        help="also write files outside the session's project (a session file can name any path)",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    return parser


def main(argv: list[str]) -> int:
    """Run ``pi-host rewind ARGS``; returns the exit status (0 done, 1 error, 2 usage, 3 refused)."""
    args = _parser().parse_args(argv)
    from pi_host import SessionManager

    from . import _plugin
    from ._restore import RestoreRefused, apply_restore, describe_plan, sync_record
    from ._timeline import conversation_leaf, list_points, plan_restore

    if not os.path.isfile(args.session):
        print(f"pi-host rewind: {args.session}: no such session file", file=sys.stderr)
        return 1
    manager = SessionManager.open(args.session)
    cwd = manager.cwd
    root = _plugin.store_root()
    branch = manager.get_branch() if manager.leaf_id is not None else []
    if args.list:
        points = list_points(branch, cwd=cwd, store_root=root)
        if args.json:
            print(
                json.dumps({"points": [p.model_dump(mode="json", by_alias=True) for p in points]}, indent=2)
            )
        else:
            for point in points:
                files = ", ".join(point.files) if point.files else "-"
                print(f"{point.entry_id}  {point.text}\n          files changed after it: {files}")
            if not points:
                print("no rewind points (no user message on the current branch)")
        return 0

    scope = args.scope or "both"
    by_id = {p.entry_id: p for p in list_points(branch, cwd=cwd, store_root=root)}
    if args.to not in by_id:
        print(
            f"pi-host rewind: {args.to} is not a rewind point of the session's current branch; "
            "see pi-host rewind --session FILE --list",
            file=sys.stderr,
        )
        return 1
    if by_id[args.to].kind == "restore":
        scope = "files" if scope == "both" else scope
    out: dict[str, Any] = {"entryId": args.to, "scope": scope}
    plan = None
    if scope in ("files", "both"):
        plan = plan_restore(branch, args.to, cwd=cwd, store_root=root)
        lines = describe_plan(plan, plan.git_root or cwd)
        out["changes"] = [c.model_dump(mode="json") for c in plan.changes]
        out["notes"] = list(plan.notes)
        out["projectRoot"] = plan.project_root
        if not args.json:
            print(f"Files (project {plan.project_root}):")
            print("\n".join(lines))
    record: dict[str, Any] | None = None
    if plan is not None and plan.changes:

        def waiting() -> None:
            print(
                f"pi-host rewind: waiting for another restore of {plan.project_root} to finish",
                file=sys.stderr,
                flush=True,
            )

        try:
            record = apply_restore(
                plan,
                store_root=root,
                force=args.force,
                allow_outside_project=args.outside_project,
                on_wait=waiting,
            )
        except RestoreRefused as refused:
            if args.json:
                print(json.dumps({**out, "refused": str(refused)}, indent=2))
            else:
                print(f"pi-host rewind: {refused}", file=sys.stderr)
            return 3
    if scope in ("conversation", "both"):
        leaf = conversation_leaf(branch, args.to)
        if leaf is None:
            manager.reset_leaf()
        else:
            manager.branch(leaf)
        out["leafId"] = leaf
        if record is None:
            record = sync_record(branch, cwd=cwd, store_root=root)
        if not args.json:
            print(f"Conversation: continues from {leaf or 'the start'} (the message is taken back)")
    if record is not None:
        out["recordId"] = manager.append_custom_entry("checkpoint", record)
        out["notRestored"] = record.get("notRestored", [])
    if args.json:
        print(json.dumps(out, indent=2))
    elif record is not None and record.get("kind") == "restore":
        print(f"Restored {len(record['files'])} file(s); undo with: --to {out['recordId']} --files")
    return 1 if out.get("notRestored") else 0
