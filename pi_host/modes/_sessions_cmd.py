"""``pi-host sessions list|export|import|delete``: sessions in any store, to and from pi's JSONL."""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pi_host.session import SessionStore

__all__ = ["run_sessions_command"]

_USAGE = """\
Usage: pi-host [--session-store URI] sessions COMMAND
  list [--json]              the sessions in the store, most recent first
  export ID [OUT.jsonl]      a session as pi's JSONL file, byte for byte (stdout without OUT);
                             ID may be a STORE-URI#ID reference, as a child's parentSession
  import FILE.jsonl ...      session files into the store (old formats are migrated on the way)
  delete ID                  remove a session from the store
The store is --session-store URI, else the sessionStore setting, else pi's session files."""


def run_sessions_command(argv: list[str], *, store_uri: str | None = None) -> int:
    """Run a ``sessions`` subcommand; returns the exit status."""
    from pi_host.session import SessionStoreError

    argv = list(argv)
    while "--session-store" in argv:
        at = argv.index("--session-store")
        if at + 1 >= len(argv):
            print("Error: Option --session-store needs a value", file=sys.stderr)
            return 2
        store_uri = argv[at + 1]
        del argv[at : at + 2]
    if not argv or argv[0] in ("-h", "--help"):
        print(_USAGE, file=sys.stderr if not argv else sys.stdout)
        return 2 if not argv else 0
    command, rest = argv[0], argv[1:]
    if command in ("export", "delete") and rest:
        # A <store URI>#<id> reference (a child's parentSession) names its store too.
        from pi_host.session import split_session_reference

        reference = split_session_reference(rest[0])
        if reference is not None and store_uri is None:
            store_uri = reference[0]
        if reference is not None:
            rest = [reference[1], *rest[1:]]
    if (
        (command == "list" and any(arg != "--json" for arg in rest))
        or (command == "export" and len(rest) not in (1, 2))
        or (command == "import" and not rest)
        or (command == "delete" and len(rest) != 1)
        or command not in ("list", "export", "import", "delete")
    ):
        print(_USAGE, file=sys.stderr)
        return 2
    try:
        store = _open_store(store_uri)
    except SessionStoreError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    try:
        if command == "list":
            return _list(store, as_json=bool(rest))
        if command == "export":
            return _export(store, rest[0], rest[1] if len(rest) > 1 else None)
        if command == "import":
            return _import(store, [Path(arg) for arg in rest])
        return _delete(store, rest[0])
    except SessionStoreError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    finally:
        store.close()


def _open_store(uri: str | None) -> SessionStore:
    from pi_host.runtime import Host
    from pi_host.runtime._settings import settings_disabled_plugins
    from pi_host.runtime._stores import open_session_store
    from pi_host.session import DEFAULT_STORE_URI

    if uri is None:
        uri = _setting_uri() or DEFAULT_STORE_URI
    host = Host.load(disabled=settings_disabled_plugins())
    return open_session_store(uri, host.plugin_manager, timeout=host.dispatcher.hook_timeout)


def _setting_uri() -> str | None:
    from pi_host.resources import SettingsManager
    from pi_host.session import agent_dir

    manager = SettingsManager.load(os.getcwd(), agent_dir(), project_trusted=False)
    return manager.settings.session_store


def _list(store: SessionStore, *, as_json: bool) -> int:
    sessions = store.list()
    if as_json:
        print(json.dumps([info.model_dump() for info in sessions], indent=2, ensure_ascii=False))
        return 0
    if not sessions:
        print(f"No sessions in {store.uri}")
        return 0
    prefix = f"{store.uri}#"
    for info in sessions:
        modified = datetime.fromtimestamp(info.modified, UTC).strftime("%Y-%m-%d %H:%M")
        line = f"{info.id}  {modified}  {info.entries:>6} entries  {info.cwd}"
        if info.parent_session:
            # A parent in this store by its id, else as the header names it (a file, another store).
            parent = info.parent_session.removeprefix(prefix)
            line += f"  (parent {parent})"
        print(line)
    return 0


def _resolve(store: SessionStore, reference: str) -> str | None:
    ids = [info.id for info in store.list()]
    if reference in ids:
        return reference
    matches = [session_id for session_id in ids if session_id.startswith(reference)]
    if len(matches) == 1:
        return matches[0]
    what = "matches no session" if not matches else f"is ambiguous: {len(matches)} sessions match"
    print(f'Error: "{reference}" {what} in {store.uri}', file=sys.stderr)
    return None


def _export(store: SessionStore, reference: str, out: str | None) -> int:
    session_id = _resolve(store, reference)
    if session_id is None:
        return 1
    lines = store.load(session_id)
    if not lines:
        print(f"Error: session {session_id} is gone from {store.uri}", file=sys.stderr)
        return 1
    data = ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape")
    if out is None or out == "-":
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return 0
    target = Path(out)
    try:
        with open(target, "xb") as f:  # never overwrite: the file may be someone's session
            f.write(data)
    except FileExistsError:
        print(f"Error: {target} exists; give a new file name", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"Error: cannot write {target}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(f"Exported session {session_id} ({len(lines) - 1} entries) to {target}", file=sys.stderr)
    return 0


def _import(store: SessionStore, files: list[Path]) -> int:
    failed = 0
    for file in files:
        try:
            session_id, lines, notes = _session_lines(file)
        except ValueError as exc:
            print(f"Error: {file}: {exc}", file=sys.stderr)
            failed += 1
            continue
        for note in notes:
            print(f"Warning: {file}: {note}", file=sys.stderr)
        store.append(session_id, lines)
        print(f"Imported {file} as session {session_id} ({len(lines) - 1} entries)")
    return 1 if failed else 0


def _session_lines(file: Path) -> tuple[str, list[str], list[str]]:
    """A session file's id and lines (header first), migrated to version 3 when older; the
    lines that were skipped are reported. The file itself is not changed."""
    from pi_host.session import migrate_entries
    from pi_host.session._jsjson import js_dumps

    try:
        data = file.read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot be read ({exc.strerror or exc})") from None
    lines: list[str] = []
    objects: list[object] = []
    notes: list[str] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        text = raw.decode("utf-8", "surrogateescape").rstrip("\r")
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except ValueError:
            notes.append(f"skipped line {number}: not JSON (a torn or malformed line)")
            continue
        if not isinstance(obj, dict):
            notes.append(f"skipped line {number}: not a JSON object")
            continue
        lines.append(text)
        objects.append(obj)
    header = objects[0] if objects else None
    if (
        not isinstance(header, dict)
        or header.get("type") != "session"
        or not isinstance(header.get("id"), str)
    ):
        raise ValueError(
            'is not a pi session file: it does not start with a session header ("type": "session")'
        )
    version = header.get("version")
    if version != 3:
        old = version if isinstance(version, int) and not isinstance(version, bool) and version < 3 else 1
        header["version"] = old
        migrate_entries(objects)  # type: ignore[arg-type]
        lines = [js_dumps(obj) for obj in objects]
        notes.append(f"migrated from session format version {old} to version 3 in the store")
    return header["id"], lines, notes


def _delete(store: SessionStore, reference: str) -> int:
    session_id = _resolve(store, reference)
    if session_id is None:
        return 1
    store.delete(session_id)
    print(f"Deleted session {session_id} from {store.uri}")
    return 0
