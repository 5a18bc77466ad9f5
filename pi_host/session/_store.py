"""The session store: an append-only tree of entries in a JSONL file, compatible with pi 0.73."""

from __future__ import annotations

import builtins
import errno
import gc
import json
import logging
import os
import stat
import threading
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from pi_host.messages import AgentMessage, AssistantMessage, UserContent

from ._context import ModelRef, SessionContext, entry_to_message, messages_from_items, path_to_root
from ._entries import (
    BranchSummaryEntry,
    CompactionEntry,
    CustomEntry,
    CustomMessageEntry,
    LabelEntry,
    ModelChangeEntry,
    SessionEntry,
    SessionHeader,
    SessionInfoEntry,
    SessionMessageEntry,
    ThinkingLevelChangeEntry,
    iso_now,
    iso_to_ms,
)
from ._jsjson import js_dumps
from ._migrate import migrate_entries, new_entry_id
from ._resume_cache import ResolvedSettings, ResumeCache
from ._store_writer import BackgroundWriter

if TYPE_CHECKING:
    from ._backend import SessionStore
    from ._index import FileIndex, SessionWarning
    from ._listing import SessionInfo
from ._paths import agent_dir, default_session_dir, new_session_id, session_file_name, validate_session_id

__all__ = [
    "EntryNotFoundError",
    "NextSession",
    "SessionFileError",
    "SessionManager",
    "SessionTreeNode",
    "check_session_file",
]

logger = logging.getLogger("pi_host.session")

PathArg: TypeAlias = str | os.PathLike[str]
CacheDir: TypeAlias = PathArg | Literal[False] | None


_UNKNOWN = object()


class EntryNotFoundError(LookupError):
    """An operation named an entry id the session does not have."""

    def __init__(self, entry_id: str | None) -> None:
        super().__init__(f"Entry {entry_id} not found")
        self.entry_id = entry_id


class SessionFileError(ValueError):
    """A path given as a session file cannot be one; the file was left exactly as it was.

    :ivar file: the file, as an absolute path.
    """

    def __init__(self, file: Path, problem: str) -> None:
        super().__init__(
            f"{file} {problem}. It was left unchanged: give the path of a pi session file (.jsonl)"
        )
        self.file = file


def check_session_file(path: PathArg) -> Path | None:
    """Check that ``path`` can be opened as a session, without changing anything.

    :returns: the absolute path when the file exists and starts with a session header (or is
        empty), None when there is no file yet (a new session would be started there).
    :raises SessionFileError: for a directory, a device, an unreadable file, or a file whose
        first line is not a session header.
    """
    from ._index import read_header

    file = Path(os.path.abspath(path))
    size = _check_openable(file)
    if size is None:
        return None
    try:
        with open(file, "rb") as f:
            if read_header(f, lambda message, offset: None) is None and not _is_blank(f, size):
                raise SessionFileError(file, _NOT_A_SESSION)
    except OSError as exc:
        raise SessionFileError(file, f"cannot be read ({_os_error_text(exc)})") from exc
    return file


_NOT_A_SESSION = (
    'is not a pi session file: it does not start with a session header (a JSON line with "type": "session")'
)


def _check_openable(file: Path) -> int | None:
    """The size of a regular file at ``file``, None when nothing is there."""
    try:
        status = os.stat(file)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SessionFileError(file, f"cannot be read ({_os_error_text(exc)})") from exc
    if stat.S_ISDIR(status.st_mode):
        raise SessionFileError(file, "is a directory, not a session file")
    if not stat.S_ISREG(status.st_mode):
        raise SessionFileError(file, "is not a regular file (a device, a pipe or a socket)")
    return status.st_size


def _is_blank(f: Any, size: int) -> bool:
    """Whether an open file holds nothing but whitespace (looked at up to 64 KiB)."""
    if size > 64 * 1024:
        return False
    f.seek(0)
    return not f.read().strip()


def _os_error_text(exc: OSError) -> str:
    name = errno.errorcode.get(exc.errno, "") if exc.errno is not None else ""
    text = exc.strerror or str(exc) or type(exc).__name__
    return f"{text}, {name}" if name else text


_MISSING_VERSION = object()


def _raw_version(header: SessionHeader) -> Any:
    """The header's ``version`` as written (the model keeps only a valid one)."""
    if header.version is not None:
        return header.version
    try:
        obj = json.loads(header.to_json())
    except ValueError:
        return _MISSING_VERSION
    return obj.get("version", _MISSING_VERSION) if isinstance(obj, dict) else _MISSING_VERSION


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _infer_version(raw: Any, tree: bool) -> tuple[int, str | None]:
    """The format version to read a file in, from its header's raw ``version`` and whether
    its first entry has an id (``tree``); and the problem to report, if any."""
    if (raw is _MISSING_VERSION or (_is_int(raw) and raw == 1)) and not tree:
        return 1, None  # a genuine version 1 file
    if _is_int(raw) and 2 <= raw <= 3:
        return int(raw), None
    if _is_int(raw) and raw > 3:
        return 3, (
            f"the session header says format version {raw}, newer than the version 3 pi-host "
            "reads; its entries are read as version 3 and entries of unknown types kept as they are"
        )
    shown = "none" if raw is _MISSING_VERSION else js_dumps(raw)
    read_as, why = (3, "its entries have ids") if tree else (1, "its entries have no ids")
    return read_as, (
        f'the session header has an invalid "version" ({shown}); the file is read as format '
        f"version {read_as} because {why}"
    )


def _first_entry_has_id(file: Path, start: int) -> bool:
    """Whether the first readable entry after the header has a string ``id`` (version 2+)."""
    with open(file, "rb") as f:
        f.seek(start)
        for raw in f:
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except ValueError:
                continue  # a torn or malformed line: look at the next one
            return isinstance(obj, dict) and isinstance(obj.get("id"), str)
    return False


@dataclass(slots=True)
class SessionTreeNode:
    """One entry of :meth:`SessionManager.get_tree`, with its children (oldest first)."""

    entry: SessionEntry
    children: list[SessionTreeNode] = field(default_factory=list)
    label: str | None = None
    label_timestamp: str | None = None


@dataclass(frozen=True, slots=True)
class NextSession:
    """The identity of a session not started yet (:meth:`SessionManager.next_session`).

    Chosen before the switch, so that what runs first (the ``session_shutdown`` hook) can name
    the file the session will be written to.

    :ivar id: the session id.
    :ivar timestamp: the header's timestamp, also part of the file name.
    :ivar file: the session file (``None`` in memory).
    """

    id: str
    timestamp: str
    file: Path | None


class _Found:
    """Settings being resolved by a walk towards the root (the first find wins)."""

    __slots__ = ("key", "model", "model_done", "thinking", "thinking_done")

    def __init__(self, key: str | None = None) -> None:
        self.key = key  # the resume-cache key, when this tracks a compaction
        self.thinking: str | None = None
        self.thinking_done = False
        self.model: ModelRef | None = None
        self.model_done = False

    @property
    def complete(self) -> bool:
        return self.thinking_done and self.model_done

    def observe(self, entry: SessionEntry) -> None:
        if isinstance(entry, ThinkingLevelChangeEntry):
            if not self.thinking_done:
                self.thinking, self.thinking_done = entry.thinking_level, True
        elif isinstance(entry, ModelChangeEntry):
            if not self.model_done:
                self.model, self.model_done = ModelRef(entry.provider, entry.model_id), True
        elif (
            isinstance(entry, SessionMessageEntry)
            and isinstance(entry.message, AssistantMessage)
            and not self.model_done
        ):
            self.model, self.model_done = ModelRef(entry.message.provider, entry.message.model), True

    def fill(self, settings: ResolvedSettings) -> None:
        if not self.thinking_done:
            self.thinking, self.thinking_done = settings.thinking_level, True
        if not self.model_done:
            self.model, self.model_done = settings.model, True

    def settings(self) -> ResolvedSettings:
        return ResolvedSettings(self.thinking, self.model)


class SessionManager:
    """A session: a tree of entries (messages, model and thinking changes, compactions …)
    stored as pi's JSONL version 3 file, one line per entry, with a movable leaf.

    Provisional public API (the embedding SDK): it may change before pi-host 1.0.

    Every append creates a child of the current leaf and makes it the new leaf;
    :meth:`branch` moves the leaf back to continue from an earlier entry. The file is only
    ever appended to, one write per entry, so a crash loses at most the entry being written.
    A new session's file is created with the first assistant message, as pi does, so an
    abandoned prompt leaves no file behind.

    Opening a file reads it lazily from the end: resuming costs the active branch back to its
    last compaction, not the size of the file. Problems in the file (malformed, torn or
    duplicate lines, missing parents) are skipped and reported in :attr:`warnings`.

    Build one with :meth:`create`, :meth:`open`, :meth:`continue_recent`, :meth:`in_memory`
    or :meth:`fork_from`. A manager is meant for one thread (or one event loop) at a time, and
    a session file for one writer at a time, as in pi.
    """

    def __init__(
        self,
        cwd: str,
        session_dir: Path | None,
        *,
        persist: bool,
        session_file: PathArg | None = None,
        session_id: str | None = None,
        parent_session: PathArg | None = None,
        cache_dir: CacheDir = None,
        store: SessionStore | None = None,
    ) -> None:
        self._cwd = cwd
        self._store = store
        self._session_dir = session_dir
        self._persist = persist
        self._cache_dir: Path | None
        if cache_dir is False or not persist or store is not None:
            self._cache_dir = None
        else:
            self._cache_dir = Path(cache_dir) if cache_dir is not None else agent_dir() / "cache" / "sessions"
        self._warnings: list[SessionWarning] = []
        self._warning_set: set[SessionWarning] = set()
        self._write_error: OSError | None = None
        # Background store writes (write_in_background): the writer, and whether a write of
        # what is held back is already queued (one queued write sends all there is then).
        self._writer: BackgroundWriter | None = None
        self._write_queued = False
        self._write_lock = threading.Lock()
        self._init_state(SessionHeader(id="", cwd=cwd), None)
        if session_file is not None:
            self.set_session_file(session_file)
        else:
            self._start_new(self.next_session(session_id), parent_session)

    def _init_state(self, header: SessionHeader, file: Path | None) -> None:
        if self._writer is not None:
            # The writes asked for belong to the session left: finish them before its state goes.
            self._writer.wait()
        self._header = header
        self._file = file
        self._index: FileIndex | None = None
        self._new: list[SessionEntry] = []  # entries appended since the file was loaded
        self._new_by_id: dict[str, SessionEntry] = {}
        self._written = 0  # how many of _new are on disk
        self._on_disk = False  # whether the file holds our header
        self._ends_with_newline = True
        self._has_assistant = False
        self._leaf_id: str | None = None
        self._leaf_settings: ResolvedSettings | None = ResolvedSettings(None, None)
        self._labels: dict[str, tuple[str, str]] | None = {}
        self._resume_cache: ResumeCache | None = None
        self._file_name: str | object | None = _UNKNOWN
        self._write_error = None

    # -- construction ------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        cwd: PathArg,
        session_dir: PathArg | None = None,
        *,
        id: str | None = None,
        parent_session: PathArg | None = None,
        cache_dir: CacheDir = None,
        store: SessionStore | None = None,
    ) -> SessionManager:
        """Start a new session for ``cwd``, stored in ``session_dir``.

        :param session_dir: defaults to ``<agent dir>/sessions/--<cwd encoded>--``.
        :param store: keep the session in this store instead of a file of its own
            (``session_dir`` and ``cache_dir`` are then ignored).
        :param id: a session id of your choosing (letters, digits, ``.``, ``_``, ``-``);
            a time-ordered UUID by default.
        :param parent_session: the session this one continues from, recorded in the header:
            a file's path, or ``<store URI>#<id>`` (:attr:`session_reference`).
        :param cache_dir: where the resume cache is kept (``False`` to keep none).
        """
        cwd_text = os.fspath(cwd)
        if store is not None:
            return cls(
                cwd_text, None, persist=True, session_id=id, parent_session=parent_session, store=store
            )
        directory = Path(session_dir) if session_dir is not None else default_session_dir(cwd_text)
        return cls(
            cwd_text,
            directory,
            persist=True,
            session_id=id,
            parent_session=parent_session,
            cache_dir=cache_dir,
        )

    @classmethod
    def open_stored(
        cls, store: SessionStore, session_id: str, *, cwd_override: PathArg | None = None
    ) -> SessionManager:
        """Open the session ``session_id`` of ``store``; its appends go to the store.

        The store loads the whole session (it is an append log, not an index), but the lines
        are parsed as a file's are: lazily, from the end, so resuming parses the branch back
        to its last compaction. Entry lines the manager cannot read are skipped and reported
        in :attr:`warnings`, as for a file.

        :raises SessionStoreError: when the store has no such session, or holds it in an old
            format (import it again with ``pi-host sessions import``, which migrates).
        """
        from ._backend import SessionStoreError

        lines = store.load(session_id)
        if not lines:
            raise SessionStoreError(f"{store.uri} has no session {session_id!r}")
        manager = cls(
            os.fspath(cwd_override) if cwd_override is not None else os.getcwd(),
            None,
            persist=True,
            session_id=session_id,
            store=store,
        )
        manager._load_lines(lines, store)
        if cwd_override is None and manager._header.cwd:
            manager._cwd = manager._header.cwd
        return manager

    @classmethod
    def continue_recent_stored(cls, store: SessionStore, cwd: PathArg) -> SessionManager:
        """Open the store's most recently modified session of ``cwd``, or start a new one there."""
        cwd_text = os.fspath(cwd)
        for info in store.list():
            if info.cwd == cwd_text:
                return cls.open_stored(store, info.id)
        return cls.create(cwd_text, store=store)

    def _load_lines(self, lines: builtins.list[str], store: SessionStore) -> None:
        """Read a store's session as a file is read: indexed from the end, and parsed only
        as far as it is asked for (resuming parses the branch back to the last compaction).

        The lines are kept as the bytes a file of them would hold, so entries keep their
        exact lines for re-serialisation, as entries read from a file do.
        """
        from ._backend import SessionStoreError
        from ._entries import parse_header
        from ._index import FileIndex

        try:
            header = parse_header(lines[0])
        except ValueError as exc:
            raise SessionStoreError(
                f"{store.uri}: the first line of a session is not its header ({exc})"
            ) from None
        if header.version != 3:
            raise SessionStoreError(
                f"{store.uri}: session {header.id} is in session format version {header.version or 1}; "
                "import it again with `pi-host sessions import FILE`, which migrates it to version 3"
            )
        data = _file_bytes(lines)
        start = data.index(b"\n") + 1

        def warn(message: str, offset: int | None) -> None:
            # A byte offset means nothing in a store: name the line instead.
            where = f"session {header.id} in {store.uri}"
            if offset is not None:
                line = data.count(b"\n", 0, offset) + 1
                where = f"line {line} of {where}"
            self._warn(f"{message} ({where})", None)

        self._init_state(header, None)
        self._on_disk = True
        self._leaf_settings = None
        self._labels = None
        self._index = FileIndex(Path(store.uri), start, len(data), warn, data=data)
        leaf = self._index.leaf()
        self._leaf_id = leaf.id if leaf is not None else None

    @classmethod
    def open(
        cls,
        path: PathArg,
        session_dir: PathArg | None = None,
        *,
        cwd_override: PathArg | None = None,
        cache_dir: CacheDir = None,
    ) -> SessionManager:
        """Open a session file (a missing file starts a new session that will be saved there).

        :param session_dir: where sessions made from this one go; defaults to the file's directory.
        :param cwd_override: use this working directory instead of the one in the header.
        """
        file = Path(os.path.abspath(path))
        directory = Path(session_dir) if session_dir is not None else file.parent
        manager = cls(
            os.fspath(cwd_override) if cwd_override is not None else os.getcwd(),
            directory,
            persist=True,
            session_file=file,
            cache_dir=cache_dir,
        )
        if cwd_override is None and manager._header.cwd:
            manager._cwd = manager._header.cwd
        return manager

    @classmethod
    def continue_recent(
        cls, cwd: PathArg, session_dir: PathArg | None = None, *, cache_dir: CacheDir = None
    ) -> SessionManager:
        """Open the most recently modified session in the directory, or start a new one."""
        cwd_text = os.fspath(cwd)
        from ._listing import find_most_recent_session  # listing sessions is rare; import it then

        directory = Path(session_dir) if session_dir is not None else default_session_dir(cwd_text)
        recent = find_most_recent_session(directory)
        return cls(cwd_text, directory, persist=True, session_file=recent, cache_dir=cache_dir)

    @classmethod
    def in_memory(cls, cwd: PathArg | None = None) -> SessionManager:
        """A session that is never written to disk."""
        return cls(os.fspath(cwd) if cwd is not None else os.getcwd(), None, persist=False)

    @classmethod
    def fork_from(
        cls,
        source_path: PathArg,
        target_cwd: PathArg,
        session_dir: PathArg | None = None,
        *,
        cache_dir: CacheDir = None,
    ) -> SessionManager:
        """Copy a session (from any project) into a new session file for ``target_cwd``.

        The new file gets a new id, ``target_cwd`` and ``parentSession`` = the source; every
        readable entry line is copied unchanged (an old-format source is migrated on the way).

        :raises ValueError: when the source has no valid header or no entries.
        """
        source = Path(source_path)
        try:
            objects, raw_lines = _read_all(source, lambda message, offset: None)
        except FileNotFoundError:
            objects, raw_lines = [], []
        if not objects or not _is_header(objects[0]):
            raise ValueError(f"Cannot fork: source session file is empty or invalid: {source}")
        tree = len(objects) > 1 and isinstance(objects[1], dict) and isinstance(objects[1].get("id"), str)
        version, problem = _infer_version(objects[0].get("version", _MISSING_VERSION), tree)
        if problem is not None:
            logger.warning("%s: %s", source, problem)
        if version < 3:
            objects[0]["version"] = version  # what migrate_entries reads: the file's real version
            migrate_entries(objects)
            raw_lines = [js_dumps(obj) for obj in objects]
        target = os.fspath(target_cwd)
        directory = Path(session_dir) if session_dir is not None else default_session_dir(target)
        directory.mkdir(parents=True, exist_ok=True)
        session_id = new_session_id()
        timestamp = iso_now()
        file = directory / session_file_name(timestamp, session_id)
        header = SessionHeader(
            id=session_id, timestamp=timestamp, cwd=target, parent_session=os.fspath(source)
        )
        lines = [header.to_json()]
        lines.extend(line for obj, line in zip(objects, raw_lines, strict=True) if not _is_header(obj))
        with open(file, "xb") as f:
            f.write(("\n".join(lines) + "\n").encode("utf-8"))
        return cls(target, directory, persist=True, session_file=file, cache_dir=cache_dir)

    # -- files -------------------------------------------------------------------------

    def next_session(self, id: str | None = None) -> NextSession:
        """Choose the id, timestamp and file of a session to start later in this manager.

        Pass the result to :meth:`new_session` or :meth:`create_branched_session`.

        :raises ValueError: when ``id`` is not a valid session id.
        """
        session_id = validate_session_id(id) if id is not None else new_session_id()
        timestamp = iso_now()
        file = None
        if self._persist and self._session_dir is not None:
            file = self._session_dir / session_file_name(timestamp, session_id)
        return NextSession(session_id, timestamp, file)

    def new_session(
        self,
        *,
        id: str | None = None,
        parent_session: PathArg | None = None,
        planned: NextSession | None = None,
    ) -> Path | None:
        """Start a fresh, empty session in this manager; returns its future file (None in memory).

        :param planned: the session chosen beforehand by :meth:`next_session` (``id`` is then
            ignored).
        :raises ValueError: when ``id`` is not a valid session id.
        """
        self._warnings.clear()
        self._warning_set.clear()
        return self._start_new(planned or self.next_session(id), parent_session)

    def _start_new(
        self, planned: NextSession | None = None, parent_session: PathArg | None = None
    ) -> Path | None:
        planned = planned or self.next_session()
        header = SessionHeader(
            id=planned.id,
            timestamp=planned.timestamp,
            cwd=self._cwd,
            parent_session=os.fspath(parent_session) if parent_session is not None else None,
        )
        self._init_state(header, planned.file)
        return planned.file

    def set_session_file(self, path: PathArg) -> None:
        """Switch to the session in file ``path`` (a missing file starts a new session there).

        :raises SessionFileError: when ``path`` is not a session file (a directory, a device,
            an unreadable file, or a file whose first line is not a session header). Nothing is
            changed then: neither the file nor this manager.
        """
        self._load(Path(os.path.abspath(path)), clear_warnings=True)

    def _load(self, file: Path, *, clear_warnings: bool) -> None:
        size = _check_openable(file)
        if size is None:
            self._warnings.clear()
            self._warning_set.clear()
            self._start_new()
            self._file = file
            return
        # The file index (and its module) is only needed once a session is read from disk:
        # a new session, the -p default, never loads it.
        from ._index import FileIndex, read_header

        ends_with_newline = True
        found_warnings: builtins.list[tuple[str, int]] = []
        try:
            with open(file, "rb") as f:
                found = read_header(f, lambda message, offset: found_warnings.append((message, offset)))
                blank = found is None and _is_blank(f, size)
                if size:
                    f.seek(size - 1)
                    ends_with_newline = f.read(1) == b"\n"
        except OSError as exc:
            raise SessionFileError(file, f"cannot be read ({_os_error_text(exc)})") from exc
        if found is None and not blank:
            raise SessionFileError(file, _NOT_A_SESSION)
        if clear_warnings:
            self._warnings.clear()
            self._warning_set.clear()
        for message, offset in found_warnings:
            self._warn(message, offset, file)
        if found is None:
            self._restart_blank(file)
            return
        header, start = found
        version = self._format_version(header, file, start)
        if version < 3:
            self._migrate_file(file, version)
            self._load(file, clear_warnings=False)
            return
        self._init_state(header, file)
        self._on_disk = True
        self._ends_with_newline = ends_with_newline
        self._leaf_settings = None
        self._labels = None
        self._index = FileIndex(file, start, size, lambda message, offset: self._warn(message, offset, file))
        leaf = self._index.leaf()
        self._leaf_id = leaf.id if leaf is not None else None
        if self._cache_dir is not None:
            self._resume_cache = ResumeCache(self._cache_dir, header.id)
            self._index.id_cache = self._resume_cache

    def _restart_blank(self, file: Path) -> None:
        """An empty (or blank) file starts a new session in its place, as in pi."""
        self._start_new()
        self._file = file
        try:
            with open(file, "wb") as f:
                f.write((self._header.to_json() + "\n").encode("utf-8"))
        except OSError as exc:
            self._write_failed(exc)
            return
        self._on_disk = True

    def _format_version(self, header: SessionHeader, file: Path, start: int) -> int:
        """The format the file's entries are in, from the header's ``version``, checked
        against the entries.

        pi trusts the header: a missing or ``null`` version means version 1, whose migration
        gives every entry a new id and a linear parent, which flattens a tree. Only a version 1
        file has entries without ids, so the first entry decides when the header is wrong.
        """
        raw = _raw_version(header)
        if _is_int(raw) and 2 <= raw <= 3:
            return int(raw)
        version, problem = _infer_version(raw, _first_entry_has_id(file, start))
        if problem is not None:
            self._warn(problem, None, file)
        return version

    def _migrate_file(self, file: Path, version: int) -> None:
        """Rewrite an old-format file as version 3 (atomically; pi rewrites it in place).

        The original is copied beside it first (``<name>.v<version>.bak``): migration drops
        lines that are not JSON, as pi's does, and they must not be lost with it.
        """
        import shutil

        objects, _ = _read_all(file, lambda message, offset: self._warn(message, offset, file))
        if objects:
            objects[0]["version"] = version  # what migrate_entries reads: the file's real version
        migrate_entries(objects)
        content = "".join(js_dumps(obj) + "\n" for obj in objects)
        backup = _free_name(file.with_name(f"{file.name}.v{version}.bak"))
        temp = file.with_name(f".{file.name}.migrating")
        try:
            shutil.copyfile(file, backup)
            temp.write_bytes(content.encode("utf-8"))
            os.replace(temp, file)
        except OSError as exc:
            temp.unlink(missing_ok=True)
            raise SessionFileError(
                file,
                f"is in session format version {version} and could not be migrated to version 3 "
                f"({_os_error_text(exc)}); make its directory writable and try again",
            ) from exc
        self._warn(
            f"migrated from session format version {version} to version 3; the original is kept as {backup}",
            None,
            file,
        )

    # -- accessors ---------------------------------------------------------------------

    @property
    def cwd(self) -> str:
        """The session's working directory."""
        return self._cwd

    @property
    def session_dir(self) -> Path | None:
        """Where this session's file and the sessions made from it live (None in memory)."""
        return self._session_dir

    @property
    def session_id(self) -> str:
        """The session id (the header's ``id``)."""
        return self._header.id

    @property
    def session_file(self) -> Path | None:
        """The session file (None in memory). It may not exist yet: see the class docs."""
        return self._file

    @property
    def header(self) -> SessionHeader:
        """The session header."""
        return self._header

    @property
    def is_persisted(self) -> bool:
        """Whether entries are saved to a file."""
        return self._persist

    @property
    def leaf_id(self) -> str | None:
        """The current leaf entry's id; None before the first entry."""
        return self._leaf_id

    @property
    def warnings(self) -> builtins.list[SessionWarning]:
        """Problems found in the session file, in the order they were found."""
        return builtins.list(self._warnings)

    @property
    def session_name(self) -> str | None:
        """The display name from the latest ``session_info`` entry (an empty name clears it)."""
        for entry in reversed(self._new):
            if isinstance(entry, SessionInfoEntry):
                return _clean_name(entry.name)
        if self._index is None:
            return None
        if self._file_name is _UNKNOWN:
            # The file's part never changes: search it (from the end) once.
            found = self._index.last_of_type("session_info")
            self._file_name = _clean_name(found.name) if isinstance(found, SessionInfoEntry) else None
        return self._file_name if isinstance(self._file_name, str) else None

    def _warn(self, message: str, offset: int | None, file: Path | None = None) -> None:
        from ._index import SessionWarning

        where = file or self._file
        warning = SessionWarning(message, os.fspath(where) if where else None, offset)
        if warning in self._warning_set:
            return  # found again by a later walk
        self._warning_set.add(warning)
        self._warnings.append(warning)
        if offset is not None:
            logger.warning("%s (byte %d): %s", where, offset, message)
        else:
            logger.warning("%s: %s", where, message)

    # -- reading the tree --------------------------------------------------------------

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """For operations that may parse many entries: keep the file open, and pause the
        cyclic garbage collector. Entries hold no reference cycles, and every collection
        would walk all the entries parsed so far, which makes reading a long session
        quadratic (nearly half the time at 100,000 entries)."""
        paused = gc.isenabled()
        if paused:
            gc.disable()
        try:
            with self._index.reading() if self._index is not None else nullcontext():
                yield
        finally:
            if paused:
                gc.enable()

    def _get(self, entry_id: str) -> SessionEntry | None:
        entry = self._new_by_id.get(entry_id)
        if entry is None and self._index is not None:
            entry = self._index.entry(entry_id)
        return entry

    def get_entry(self, entry_id: str) -> SessionEntry | None:
        """The entry with id ``entry_id``, or None."""
        return self._get(entry_id)

    def get_leaf_entry(self) -> SessionEntry | None:
        """The current leaf entry (None before the first entry)."""
        return self._get(self._leaf_id) if self._leaf_id is not None else None

    def get_branch(self, from_id: str | None = None) -> builtins.list[SessionEntry]:
        """The entries from the root down to ``from_id`` (default: the leaf); [] if unknown."""
        start = from_id if from_id is not None else self._leaf_id
        if start is None:
            return []
        with self._reading():
            leaf = self._get(start)
            if leaf is None:
                return []
            return path_to_root(leaf, self._get)

    def iter_branch(self, from_id: str | None = None) -> Iterator[SessionEntry]:
        """The entries from ``from_id`` (default: the leaf) up to the root, read as you go.

        The lazy counterpart of :meth:`get_branch` (which lists root first): stop early, for
        instance at the last compaction, and the lines above it are never read.
        """
        current = self._get(from_id) if from_id is not None else self.get_leaf_entry()
        seen: set[str] = set()
        while current is not None:
            yield current
            seen.add(current.id)
            current = self._parent(current, seen)

    def get_entries(self) -> builtins.list[SessionEntry]:
        """Every entry (not the header) in file order. Reads the whole file."""
        with self._reading():
            loaded = self._index.entries() if self._index is not None else []
        return loaded + self._new

    def get_children(self, parent_id: str) -> builtins.list[SessionEntry]:
        """The entries whose parent is ``parent_id``, in file order. Reads the whole file."""
        children: builtins.list[SessionEntry] = []
        if self._index is not None:
            from ._index import PARENT

            with self._reading():
                for slot in self._index.slots_in_file_order():
                    if slot[PARENT] == parent_id:
                        entry = self._index.parse_slot(slot)
                        if entry is not None and entry.parent_id == parent_id:
                            children.append(entry)
        children.extend(entry for entry in self._new if entry.parent_id == parent_id)
        return children

    def get_label(self, entry_id: str) -> str | None:
        """The label of entry ``entry_id``, if one is set."""
        found = self._label_map().get(entry_id)
        return found[0] if found else None

    def _label_map(self) -> dict[str, tuple[str, str]]:
        if self._labels is None:
            labels: dict[str, tuple[str, str]] = {}
            if self._index is not None:
                from ._index import TYPE

                with self._reading():
                    for slot in self._index.slots_in_file_order():
                        if slot[TYPE] == "label":
                            entry = self._index.parse_slot(slot)
                            if isinstance(entry, LabelEntry):
                                _apply_label(labels, entry)
            for entry in self._new:
                if isinstance(entry, LabelEntry):
                    _apply_label(labels, entry)
            self._labels = labels
        return self._labels

    def get_tree(self) -> builtins.list[SessionTreeNode]:
        """The whole session as a forest (normally one root), children oldest first.

        An entry whose parent is missing is returned as a root too. Reads the whole file.
        """
        with self._reading():
            entries = self.get_entries()
            labels = self._label_map()
            nodes: dict[str, SessionTreeNode] = {}
            for entry in entries:
                label = labels.get(entry.id)
                nodes[entry.id] = SessionTreeNode(entry, [], *(label or (None, None)))
            roots: builtins.list[SessionTreeNode] = []
            for entry in entries:
                node = nodes[entry.id]
                parent_id = entry.parent_id
                parent = nodes.get(parent_id) if parent_id is not None and parent_id != entry.id else None
                (parent.children if parent is not None else roots).append(node)
            stack = builtins.list(roots)
            while stack:
                node = stack.pop()
                node.children.sort(key=lambda child: iso_to_ms(child.entry.timestamp or ""))
                stack.extend(node.children)
            return roots

    # -- context -----------------------------------------------------------------------

    def build_session_context(self) -> SessionContext:
        """The messages, thinking level and model at the leaf (what the model is sent).

        Reads the path from the leaf back to the last compaction's first kept entry; the
        settings in force there come from the resume cache, or from a walk further up.
        """
        if self._leaf_id is None:
            self._leaf_settings = ResolvedSettings(None, None)
            return SessionContext()
        with self._reading():
            leaf = self._get(self._leaf_id)
            if leaf is None:
                self._warn(f"the leaf entry {self._leaf_id} can no longer be read", None)
                return SessionContext()
            # Each entry's id and message, not the entry: the index keeps no entry nobody holds,
            # so the walk's entries go as it passes them (the messages live on in the context).
            walked: builtins.list[tuple[str, AgentMessage | None]] = []
            found = _Found()
            at_compaction: _Found | None = None
            compaction: CompactionEntry | None = None
            compaction_pos = -1
            reached_kept = False
            seen: set[str] = set()
            entry = leaf
            while True:
                walked.append((entry.id, entry_to_message(entry)))
                seen.add(entry.id)
                found.observe(entry)
                if compaction is None:
                    if isinstance(entry, CompactionEntry):
                        compaction, compaction_pos = entry, len(walked) - 1
                        at_compaction = _Found(self._resume_key(entry))
                else:
                    assert at_compaction is not None
                    at_compaction.observe(entry)
                    if entry.id == compaction.first_kept_entry_id:
                        reached_kept = True
                        break
                next_entry = self._parent(entry, seen)
                if next_entry is None:
                    break
                entry = next_entry
            if reached_kept and not found.complete:
                assert at_compaction is not None
                self._resolve_above(entry.parent_id, [found, at_compaction], seen)
        walked.reverse()
        position = len(walked) - 1 - compaction_pos if compaction is not None else -1
        settings = found.settings()
        self._leaf_settings = settings
        return SessionContext(
            messages=messages_from_items(walked, compaction, position),
            thinking_level=settings.thinking_level or "off",
            model=settings.model,
            has_thinking_entry=settings.thinking_level is not None,
        )

    def _parent(self, entry: SessionEntry, seen: set[str]) -> SessionEntry | None:
        parent_id = entry.parent_id
        if parent_id is None:
            return None
        if parent_id in seen:
            self._warn(f"entry {entry.id} closes a parent cycle through {parent_id}; stopped there", None)
            return None
        parent = self._get(parent_id)
        if parent is None:
            self._warn_missing_parent(entry.id, parent_id)
        return parent

    def _warn_missing_parent(self, entry_id: str, parent_id: str) -> None:
        self._warn(f"entry {entry_id} refers to a missing parent {parent_id}; its branch starts there", None)

    def _resume_key(self, entry: CompactionEntry) -> str:
        return f"{entry.id}:{zlib.crc32(entry.to_json().encode('utf-8', 'surrogatepass')):08x}"

    def _resolve_above(self, start_id: str | None, trackers: builtins.list[_Found], seen: set[str]) -> None:
        """Finish resolving ``trackers`` walking up from ``start_id``, parsing only what decides.

        ``trackers[0]`` is the leaf's; the others belong to compactions on the way, whose
        settings are saved in the resume cache once known. The walk stops as soon as the leaf's
        settings are known, at a compaction the resume cache knows, or where the path ends.
        """
        from ._index import ID, PARENT, ROLE, TYPE

        cache = self._resume_cache
        first = trackers[0]
        for tracker in trackers[1:]:
            cached = cache.get(tracker.key) if cache is not None and tracker.key else None
            if cached is not None:
                for other in trackers:
                    other.fill(cached)
                return
        index = self._index
        current = start_id
        child: str | None = None
        path_ended = False
        while not first.complete:
            if current is None:
                path_ended = True
                break
            if current in seen:
                self._warn(f"entry {child} closes a parent cycle through {current}; stopped there", None)
                path_ended = True
                break
            seen.add(current)
            entry: SessionEntry | None = self._new_by_id.get(current)
            key: str | None = None
            if entry is not None:
                parent = entry.parent_id
                if isinstance(entry, CompactionEntry):
                    key = self._resume_key(entry)
            else:
                slot = index.slot(current) if index is not None else None
                if slot is None or index is None:
                    if child is not None:
                        self._warn_missing_parent(child, current)
                    path_ended = True
                    break
                kind = slot[TYPE]
                # Parse only lines that can still decide something: an assistant message is
                # costly and matters only while some walker still lacks a model.
                if (kind == "thinking_level_change" and not all(t.thinking_done for t in trackers)) or (
                    not all(t.model_done for t in trackers)
                    and (kind == "model_change" or (kind == "message" and slot[ROLE] in (None, "assistant")))
                ):
                    entry = index.parse_slot(slot)
                    if entry is None:  # unreadable: as in pi, the path ends below it
                        path_ended = True
                        break
                elif kind == "compaction":
                    key = f"{slot[ID]}:{index.checksum(slot):08x}"
                parent = entry.parent_id if entry is not None else slot[PARENT]
            if entry is not None:
                for tracker in trackers:
                    tracker.observe(entry)
            if key is not None:
                cached = cache.get(key) if cache is not None else None
                if cached is not None:
                    for tracker in trackers:
                        tracker.fill(cached)
                    break
                trackers.append(_Found(key))
            child, current = current, parent
        if path_ended:
            nothing_above = ResolvedSettings(None, None)
            for tracker in trackers:
                tracker.fill(nothing_above)
        done = {t.key: t.settings() for t in trackers[1:] if t.key is not None and t.complete}
        if cache is not None and done:
            cache.put(done)

    def _settings_at_leaf(self) -> ResolvedSettings:
        if self._leaf_settings is None:
            found = _Found()
            with self._reading():
                self._resolve_above(self._leaf_id, [found], set())
            self._leaf_settings = found.settings()
        return self._leaf_settings

    # -- appending ---------------------------------------------------------------------

    def _taken(self, candidate: str) -> bool:
        if candidate in self._new_by_id:
            return True
        return self._index is not None and self._index.has_id(candidate)

    def _next_id(self) -> str:
        return new_entry_id(self._taken)

    def _append(self, entry: SessionEntry) -> str:
        self._new.append(entry)
        self._new_by_id[entry.id] = entry
        self._leaf_id = entry.id
        if isinstance(entry, SessionMessageEntry) and entry.message.role == "assistant":
            self._has_assistant = True
        if self._leaf_settings is not None:
            tracker = _Found()
            tracker.observe(entry)
            self._leaf_settings = ResolvedSettings(
                tracker.thinking if tracker.thinking_done else self._leaf_settings.thinking_level,
                tracker.model if tracker.model_done else self._leaf_settings.model,
            )
        self._flush()
        return entry.id

    def _flush(self) -> None:
        """Write what is not on disk yet, creating the file with the first assistant message.

        A failed write (disk full, a read-only file, a directory that cannot be made) never
        ends the turn: it is reported once (:attr:`write_error`, a warning, the log), the
        entries stay in memory, and the next append tries again to write all that is missing.
        """
        if self._store is not None:
            self._flush_to_store()
            return
        if not self._persist or self._file is None:
            return
        if not self._on_disk and not self._has_assistant:
            return
        with_header = not self._on_disk
        lines = [self._header.to_json()] if with_header else []
        lines.extend(entry.to_json() for entry in self._new[self._written :])
        if not lines:
            return
        data = ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")
        skip = 0
        if not self._ends_with_newline:
            data, skip = b"\n" + data, 1  # never continue a torn line: start on a fresh one
        written = 0
        try:
            fd = self._open_for_append()
            try:
                view = memoryview(data)
                while written < len(data):
                    written += os.write(fd, view[written:])
            finally:
                os.close(fd)
        except OSError as exc:
            self._count_written(data, written, skip, with_header)
            self._write_failed(exc)
            return
        except BaseException:
            self._count_written(data, written, skip, with_header)
            raise
        self._count_written(data, written, skip, with_header)
        if self._write_error is not None:
            self._write_error = None
            logger.warning("%s: the session is saved again (every entry held back is written)", self._file)

    def _flush_to_store(self) -> None:
        """Append what the store lacks. Appends are idempotent, so after a failure the next
        one simply sends every line held back again.

        With :meth:`write_in_background`, the append is queued to the session's writer
        thread instead, and sends what is held back when it runs (appends made meanwhile
        join it); a write already queued covers a new entry, so nothing is queued twice.
        """
        assert self._store is not None
        if not self._on_disk and not self._has_assistant:
            return
        if self._writer is None:
            self._write_to_store()
            return
        with self._write_lock:
            if self._write_queued:
                return
            self._write_queued = True
        self._writer.submit(self._write_to_store)

    def _write_to_store(self) -> None:
        from ._backend import SessionStoreError

        assert self._store is not None
        with self._write_lock:
            self._write_queued = False  # entries appended from now on need another write
            header, on_disk, pending = self._header, self._on_disk, self._new[self._written :]
            upto = self._written + len(pending)
        lines = [] if on_disk else [header.to_json()]
        lines.extend(entry.to_json() for entry in pending)
        if not lines:
            return
        try:
            self._store.append(header.id, lines)
        except OSError as exc:
            self._write_failed(exc)
            return
        except SessionStoreError as exc:
            self._write_failed(OSError(errno.EIO, str(exc)))
            return
        with self._write_lock:
            self._on_disk = True
            self._written = max(self._written, upto)
        if self._write_error is not None:
            self._write_error = None
            logger.warning(
                "%s: the session is saved again (every entry held back is written)", self._store.uri
            )

    def write_in_background(self) -> None:
        """Send this session's store appends from a thread of its own, in order, so that a
        slow store (a PostgreSQL round trip and commit per append) does not block the event
        loop other sessions share. Sessions in files are written directly (a file append
        does not wait on a server). Call :meth:`wait_for_writes` before reading the session
        back from the store; switching to another session waits for them itself.
        """
        if self._store is not None and self._writer is None:
            self._writer = BackgroundWriter(f"pi-host session writes {self._store.uri}")

    def wait_for_writes(self, timeout: float | None = None) -> bool:
        """Block until the appends asked for so far were sent to the store (successfully or
        not: see :attr:`write_error`); returns whether they were within ``timeout`` seconds.
        Immediate without :meth:`write_in_background`."""
        return True if self._writer is None else self._writer.wait(timeout)

    @property
    def session_store(self) -> SessionStore | None:
        """The store this session is kept in; None for a session file (or in memory)."""
        return self._store

    @property
    def session_reference(self) -> str | None:
        """How another session's header names this one as its ``parentSession``: the session
        file's path, or ``<store URI>#<session id>`` for a session kept in a store (pi-host's
        ``--session`` opens either); None in memory."""
        if self._store is not None:
            from ._uri import session_reference

            return session_reference(self._store.uri, self._header.id)
        return None if self._file is None else os.fspath(self._file)

    def _open_for_append(self) -> int:
        assert self._file is not None
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0)
        try:
            return os.open(self._file, flags, 0o644)
        except FileNotFoundError:
            # The directory is made when first needed (or again, if it went away), not
            # checked before every append: that was a failing mkdir per entry.
            self._file.parent.mkdir(parents=True, exist_ok=True)
            return os.open(self._file, flags, 0o644)

    def _count_written(self, data: bytes, written: int, skip: int, with_header: bool) -> None:
        """Account for the first ``written`` bytes of ``data`` being on disk: the lines they
        complete are saved, a line they tear is written again in full on a fresh line."""
        if written <= 0:
            return
        complete = data.count(b"\n", skip, written) if written > skip else 0
        if with_header and complete:
            self._on_disk = True
            complete -= 1
        self._written += complete
        self._ends_with_newline = data[written - 1 : written] == b"\n"

    def _write_failed(self, exc: OSError) -> None:
        first = self._write_error is None
        self._write_error = exc
        if first:
            self._warn(
                f"could not save the session ({_os_error_text(exc)}); the conversation goes on "
                "unsaved, and every later entry tries again to write what is missing",
                None,
            )

    @property
    def write_error(self) -> OSError | None:
        """Why the last write to the session file failed; None when everything is saved."""
        return self._write_error

    def append_message(self, message: AgentMessage) -> str:
        """Append a message; returns the new entry's id.

        :raises ValueError: for compaction and branch summary messages, which are entries of
            their own (:meth:`append_compaction`, :meth:`branch_with_summary`).
        """
        if message.role in ("compactionSummary", "branchSummary"):
            raise ValueError(
                f"{message.role} messages are not appended as messages: "
                "use append_compaction() or branch_with_summary()"
            )
        return self._append(
            SessionMessageEntry(
                id=self._next_id(), parent_id=self._leaf_id, timestamp=iso_now(), message=message
            )
        )

    def append_thinking_level_change(self, thinking_level: str) -> str:
        """Record a thinking level change; returns the new entry's id."""
        return self._append(
            ThinkingLevelChangeEntry(
                id=self._next_id(),
                parent_id=self._leaf_id,
                timestamp=iso_now(),
                thinking_level=thinking_level,
            )
        )

    def append_model_change(self, provider: str, model_id: str) -> str:
        """Record a model switch; returns the new entry's id."""
        return self._append(
            ModelChangeEntry(
                id=self._next_id(),
                parent_id=self._leaf_id,
                timestamp=iso_now(),
                provider=provider,
                model_id=model_id,
            )
        )

    def append_compaction(
        self,
        summary: str,
        first_kept_entry_id: str,
        tokens_before: int,
        details: Any = None,
        from_hook: bool | None = None,
    ) -> str:
        """Record a compaction: ``summary`` replaces the path before ``first_kept_entry_id``."""
        settings = self._settings_at_leaf() if self._cache_dir is not None else None
        entry = CompactionEntry(
            id=self._next_id(),
            parent_id=self._leaf_id,
            timestamp=iso_now(),
            summary=summary,
            first_kept_entry_id=first_kept_entry_id,
            tokens_before=tokens_before,
            details=details,
            from_hook=from_hook,
        )
        entry_id = self._append(entry)
        if settings is not None and self._cache_dir is not None:
            if self._resume_cache is None:
                self._resume_cache = ResumeCache(self._cache_dir, self._header.id)
            self._resume_cache.put({self._resume_key(entry): settings})
        return entry_id

    def append_custom_entry(self, custom_type: str, data: Any = None) -> str:
        """Store plugin state (never sent to the model); returns the new entry's id."""
        return self._append(
            CustomEntry(
                custom_type=custom_type,
                data=data,
                id=self._next_id(),
                parent_id=self._leaf_id,
                timestamp=iso_now(),
            )
        )

    def append_session_info(self, name: str) -> str:
        """Set the session's display name (surrounding whitespace dropped; empty clears it)."""
        return self._append(
            SessionInfoEntry(
                id=self._next_id(), parent_id=self._leaf_id, timestamp=iso_now(), name=name.strip()
            )
        )

    def append_custom_message_entry(
        self, custom_type: str, content: str | builtins.list[UserContent], display: bool, details: Any = None
    ) -> str:
        """Append a plugin message that the model sees as a user message."""
        return self._append(
            CustomMessageEntry(
                custom_type=custom_type,
                content=content,
                display=display,
                details=details,
                id=self._next_id(),
                parent_id=self._leaf_id,
                timestamp=iso_now(),
            )
        )

    def append_label_change(self, target_id: str, label: str | None) -> str:
        """Set the label of entry ``target_id``, or clear it with None or "".

        :raises EntryNotFoundError: when there is no such entry.
        """
        if self._get(target_id) is None:
            raise EntryNotFoundError(target_id)
        entry = LabelEntry(
            id=self._next_id(), parent_id=self._leaf_id, timestamp=iso_now(), target_id=target_id, label=label
        )
        self._append(entry)
        if self._labels is not None:  # else built from the entries when first needed
            _apply_label(self._labels, entry)
        return entry.id

    # -- branching ---------------------------------------------------------------------

    def branch(self, entry_id: str) -> None:
        """Move the leaf to ``entry_id``: the next append continues from there.

        :raises EntryNotFoundError: when there is no such entry.
        """
        if self._get(entry_id) is None:
            raise EntryNotFoundError(entry_id)
        self._leaf_id = entry_id
        self._leaf_settings = None

    def reset_leaf(self) -> None:
        """Move the leaf before the first entry: the next append starts a new root."""
        self._leaf_id = None
        self._leaf_settings = ResolvedSettings(None, None)

    def branch_with_summary(
        self, entry_id: str | None, summary: str, details: Any = None, from_hook: bool | None = None
    ) -> str:
        """Move the leaf to ``entry_id`` (None: before the first entry) and append a
        ``branch_summary`` entry describing the branch left behind; returns its id.

        :raises EntryNotFoundError: when there is no such entry.
        """
        if entry_id is not None and self._get(entry_id) is None:
            raise EntryNotFoundError(entry_id)
        if entry_id is None:
            self.reset_leaf()
        else:
            self.branch(entry_id)
        return self._append(
            BranchSummaryEntry(
                id=self._next_id(),
                parent_id=entry_id,
                timestamp=iso_now(),
                from_id=entry_id if entry_id is not None else "root",
                summary=summary,
                details=details,
                from_hook=from_hook,
            )
        )

    def create_branched_session(self, leaf_id: str, *, planned: NextSession | None = None) -> Path | None:
        """Make the root-to-``leaf_id`` path a new session of its own, and switch to it.

        Labels on the path are re-created after it; the new header records this session's
        file as ``parentSession``. The file is written now if the path holds an assistant
        message, else with the first one. Returns the new file (None in memory).

        :param planned: the new session's identity, chosen beforehand by :meth:`next_session`.
        :raises EntryNotFoundError: when there is no such entry.
        """
        previous_file = self.session_reference
        path = self.get_branch(leaf_id)
        if not path:
            raise EntryNotFoundError(leaf_id)
        # Labels leave the path (they are re-created after it). An entry whose parent was a
        # label is re-attached to the label's nearest non-label ancestor: pi 0.73 leaves it
        # pointing at the missing label, which cuts the branched session's history there.
        kept: builtins.list[SessionEntry] = []
        last_kept: str | None = None
        for entry in path:
            if isinstance(entry, LabelEntry):
                continue
            if entry.parent_id != last_kept:
                entry = entry.model_copy(update={"parent_id": last_kept})
            kept.append(entry)
            last_kept = entry.id
        taken = {entry.id for entry in kept}
        label_entries: builtins.list[SessionEntry] = []
        parent = kept[-1].id if kept else None
        for target_id, (label, label_timestamp) in self._label_map().items():
            if target_id not in taken:
                continue
            entry = LabelEntry(
                id=new_entry_id(taken.__contains__),
                parent_id=parent,
                timestamp=label_timestamp,
                target_id=target_id,
                label=label,
            )
            taken.add(entry.id)
            label_entries.append(entry)
            parent = entry.id
        planned = planned or self.next_session()
        header = SessionHeader(
            id=planned.id,
            timestamp=planned.timestamp,
            cwd=self._cwd,
            parent_session=previous_file if self._persist else None,
        )
        file = planned.file
        self._init_state(header, file)
        self._leaf_settings = None
        self._labels = None
        self._new = [*kept, *label_entries]
        self._new_by_id = {entry.id: entry for entry in self._new}
        self._leaf_id = self._new[-1].id if self._new else None
        self._has_assistant = any(
            isinstance(entry, SessionMessageEntry) and entry.message.role == "assistant" for entry in kept
        )
        self._flush()
        return file

    # -- listing -----------------------------------------------------------------------

    @staticmethod
    def list(
        cwd: PathArg,
        session_dir: PathArg | None = None,
        on_progress: Callable[[int, int], None] | None = None,
    ) -> builtins.list[SessionInfo]:
        """The sessions of a project, most recently active first (see :func:`list_sessions`)."""
        from ._listing import list_sessions

        directory = Path(session_dir) if session_dir is not None else default_session_dir(os.fspath(cwd))
        return list_sessions(directory, on_progress)

    @staticmethod
    def list_all(
        base: PathArg | None = None, on_progress: Callable[[int, int], None] | None = None
    ) -> builtins.list[SessionInfo]:
        """The sessions of every project under the agent directory, most recent first."""
        from ._listing import list_all_sessions

        return list_all_sessions(base, on_progress)


def _apply_label(labels: dict[str, tuple[str, str]], entry: LabelEntry) -> None:
    if entry.label:
        labels[entry.target_id] = (entry.label, entry.timestamp)
    else:
        labels.pop(entry.target_id, None)


def _clean_name(name: str | None) -> str | None:
    return (name or "").strip() or None


def session_version_of(header: SessionHeader) -> int:
    """A header's format version (1 when it has none)."""
    return header.version if header.version is not None else 1


def _is_header(obj: Any) -> bool:
    return isinstance(obj, dict) and obj.get("type") == "session" and isinstance(obj.get("id"), str)


def _read_all(file: Path, warn: Callable[[str, int], None]) -> tuple[builtins.list[Any], builtins.list[str]]:
    """Every JSON line of a file (parsed, and as text), skipping malformed lines like pi."""
    objects: builtins.list[Any] = []
    lines: builtins.list[str] = []
    offset = 0
    with open(file, "rb") as f:
        for raw in f:
            text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            if text.strip():
                try:
                    objects.append(json.loads(text))
                    lines.append(text)
                except ValueError:
                    warn("skipped a malformed line", offset)
            offset += len(raw)
    if objects and not _is_header(objects[0]):
        return [], []
    return objects, lines


def _free_name(path: Path) -> Path:
    candidate, number = path, 1
    while candidate.exists():
        number += 1
        candidate = path.with_name(f"{path.name}.{number}")
    return candidate


def _file_bytes(lines: builtins.list[str]) -> bytes:
    """The bytes of a file holding ``lines``: the bytes a :class:`JsonlStore` read them from
    (it decodes with ``surrogateescape``), or the manager's own encoding for lines with other
    lone surrogates (it writes with ``surrogatepass``)."""
    text = "".join(line + "\n" for line in lines)
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return b"".join(_line_bytes(line) + b"\n" for line in lines)


def _line_bytes(line: str) -> bytes:
    try:
        return line.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return line.encode("utf-8", "surrogatepass")
