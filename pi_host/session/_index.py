"""A lazy, read-only index over the entry lines of a session file.

pi parses a whole session file to resume it. This index reads the file from the end
backwards, one block at a time, and learns each line's ``type``, ``id`` and ``parentId`` from a
cheap match on the start of the line (pi writes ``{"type":…,"id":…,"parentId":…`` first; the
``custom`` types write them last, and anything else falls back to a JSON parse). A line is
parsed into a model only when someone asks for its entry. Resuming therefore reads the lines of
the active branch back to the last compaction, not the file.

The file is opened for each operation and never mapped: a file truncated or rewritten under us
gives short reads and warnings, not a crash.
"""

from __future__ import annotations

import functools
import io
import json
import re
import weakref
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Final, TypeAlias

from ._entries import ENTRY_TYPES, SessionEntry, SessionHeader, UnknownEntry, parse_entry, parse_header
from ._resume_cache import ResumeCache

__all__ = ["ID", "PARENT", "ROLE", "TYPE", "FileIndex", "SessionWarning", "Slot", "read_header"]

_FIRST_BLOCK = 64 * 1024
_MAX_BLOCK = 4 * 1024 * 1024

# The patterns are compiled by the first session read (_compiled): a run that only writes a new
# session never needs them.
# One entry line, preceded by its "\n": either pi's usual layout, type, id, parentId and
# timestamp first (and for messages the role right after), or the layout of "custom" and
# "custom_message", whose id, parentId and timestamp close the line.
_LINE = (
    rb'\n(?:\{"type":"([A-Za-z_]+)","id":"([^"\\\n]*)","parentId":(?:null|"([^"\\\n]*)"),'
    rb'"timestamp":"[^"\\\n]*"(?:,"message":\{"role":"([A-Za-z]+)")?'
    rb'|\{"type":"([A-Za-z_]+)",.*"id":"([^"\\\n]*)","parentId":(?:null|"([^"\\\n]*)"),'
    rb'"timestamp":"[^"\\\n]*"\}[ \t\r]*(?=\n|\Z))'
)
_ENTRY_ID = rb'"id":"([^"\\\n]*)","parentId":'
_TYPE_NAMES = {name.encode(): name for name in ENTRY_TYPES}
_ROLE_NAMES = {
    name.encode(): name
    for name in ("user", "assistant", "toolResult", "bashExecution", "custom", "hookMessage")
}


@functools.cache
def _compiled(pattern: bytes) -> re.Pattern[bytes]:
    return re.compile(pattern)


# A slot is what the index knows of one entry line without parsing it, as a plain tuple
# (cheap to make by the hundred thousand): offset, length, id, parentId, type, message role.
Slot: TypeAlias = tuple[int, int, str, "str | None", str, "str | None"]
OFFSET: Final = 0
LENGTH: Final = 1
ID: Final = 2
PARENT: Final = 3
TYPE: Final = 4
ROLE: Final = 5


@dataclass(frozen=True, slots=True)
class SessionWarning:
    """Something wrong in a session file that was skipped rather than failing the load."""

    message: str
    path: str | None = None
    offset: int | None = None

    def __str__(self) -> str:
        return self.message


def read_header(f: BinaryIO, warn: Callable[[str, int], None]) -> tuple[SessionHeader, int] | None:
    """Read the header: the first line that is valid JSON, if it is a session header.

    :returns: the header and the offset just after its line, or None when the file has no
        valid header (pi then treats it as empty).
    """
    offset = 0
    f.seek(0)
    buffered = b""
    while True:
        newline = buffered.find(b"\n")
        while newline < 0:
            more = f.read(_FIRST_BLOCK)
            if not more:
                break
            buffered += more
            newline = buffered.find(b"\n")
        if newline < 0:
            line, rest = buffered, b""
        else:
            line, rest = buffered[:newline], buffered[newline + 1 :]
        if not line.strip():
            if newline < 0:
                return None
            offset += newline + 1
            buffered = rest
            continue
        text = line.decode("utf-8", errors="replace")
        try:
            obj = json.loads(text)
        except ValueError:
            if newline < 0:
                return None
            warn("skipped a malformed line before the session header", offset)
            offset += newline + 1
            buffered = rest
            continue
        try:
            header = parse_header(text) if isinstance(obj, dict) else None
        except ValueError:
            header = None
        if header is None:
            return None
        return header, offset + len(line) + (1 if newline >= 0 else 0)


class FileIndex:
    """The entries of one session file as it was when opened, read lazily from the end.

    :param path: the session file.
    :param start: offset of the first entry line (just after the header line).
    :param end: file size at open; later appends are the session manager's business.
    :param warn: called with a message and a byte offset for every problem found.
    :param data: the file's bytes when they are in memory already (a session loaded from a
        :class:`~pi_host.session.SessionStore`), read instead of ``path``: a store's session
        is then parsed as lazily as a file, back to the last compaction.
    """

    def __init__(
        self,
        path: Path,
        start: int,
        end: int,
        warn: Callable[[str, int | None], None],
        *,
        data: bytes | None = None,
    ) -> None:
        self.path = path
        self._data = data
        self._start = start
        self._end = end
        self._warn = warn
        self._slots: dict[str, Slot] = {}  # the live line of each id
        self._shadowed: dict[str, list[Slot]] = {}  # earlier lines reusing an id, latest first
        self._order: list[Slot] = []  # every indexed line, latest first
        # Parsed entries by line offset, kept only while someone holds them: a resumed
        # session's messages live on in the agent's history, but nothing reads the entries
        # around them again (their ids, timestamps and pydantic's fields set took 11.7 MiB of
        # a 10,000-entry session's ~50 for a `-p` run). A later walk parses a line again.
        self._parsed: weakref.WeakValueDictionary[int, SessionEntry] = weakref.WeakValueDictionary()
        self._lo = end  # [lo, end) is indexed, except the carry
        self._carry = b""  # the end of a line whose start lies before lo
        self._block = _FIRST_BLOCK
        self._f: BinaryIO | None = None
        self._unscanned_ids: set[bytes] | None = None
        self.id_cache: ResumeCache | None = None  # where harvested ids are kept
        # The block scanned last: a walk up the tree reads its lines right after indexing them.
        self._buf = b""
        self._buf_lo = 0

    # -- file access -------------------------------------------------------------------

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Keep the file open across several lookups (each lookup otherwise opens it)."""
        if self._f is not None:
            yield
            return
        with io.BytesIO(self._data) if self._data is not None else open(self.path, "rb") as f:
            self._f = f
            try:
                yield
            finally:
                self._f = None
                # The block scanned last serves the reads that follow its scan; kept, it would
                # hold up to 4 MiB of the file for the rest of the session.
                self._buf, self._buf_lo = b"", 0

    def _read(self, offset: int, length: int) -> bytes:
        at = offset - self._buf_lo
        if at >= 0 and at + length <= len(self._buf):
            return self._buf[at : at + length]
        if self._f is None:
            with self.reading():
                return self._read(offset, length)
        self._f.seek(offset)
        data = self._f.read(length)
        if len(data) < length:
            raise OSError(f"{self.path} is shorter than when it was opened (was it rewritten?)")
        return data

    @property
    def complete(self) -> bool:
        """Whether every line of the file has been indexed."""
        return self._lo <= self._start and not self._carry

    # -- scanning ----------------------------------------------------------------------

    def _scan_block(self) -> bool:
        """Index the lines of one more block, going backwards. False when nothing is left."""
        if self.complete:
            return False
        hi = self._lo
        lo = max(self._start, hi - self._block)
        self._block = min(self._block * 2, _MAX_BLOCK)
        try:
            data = self._read(lo, hi - lo) + self._carry
        except OSError as error:
            self._warn(f"stopped reading: {error}", lo)
            self._lo, self._carry = self._start, b""
            return False
        self._buf, self._buf_lo = data, lo
        base = lo
        if lo > self._start:
            cut = data.find(b"\n")
            if cut < 0:
                self._lo, self._carry = lo, data
                return True
            self._carry = data[:cut]
            data = data[cut + 1 :]
            base = lo + cut + 1
        else:
            self._carry = b""
        self._lo = lo
        self._index_lines(b"\n" + data, base - 1)
        return True

    def _index_lines(self, buf: bytes, origin: int) -> None:
        """Index the lines of ``buf`` ("\\n" + whole lines; ``buf[0]`` is at file offset ``origin``)."""
        records: list[Slot] = []
        append = records.append
        find = buf.find
        types = _TYPE_NAMES
        roles = _ROLE_NAMES
        expected = 1  # where the next line starts
        for match in _compiled(_LINE).finditer(buf):
            line_start = match.start() + 1
            if line_start != expected:
                self._index_odd_lines(buf, expected, line_start - 1, origin, records)
            line_end = find(b"\n", match.end())
            if line_end < 0:
                line_end = len(buf)
            raw_type, raw_id, raw_parent, raw_role, custom_type, custom_id, custom_parent = match.groups()
            if raw_type is None:
                raw_type, raw_id, raw_parent = custom_type, custom_id, custom_parent
            append(
                (
                    origin + line_start,
                    line_end - line_start,
                    raw_id.decode(),
                    raw_parent.decode() if raw_parent is not None else None,
                    types.get(raw_type) or raw_type.decode(),
                    (roles.get(raw_role) or raw_role.decode()) if raw_role is not None else None,
                )
            )
            expected = line_end + 1
        if expected < len(buf):
            self._index_odd_lines(buf, expected, len(buf), origin, records)
        for record in reversed(records):
            self._add(record)

    def _index_odd_lines(self, buf: bytes, lo: int, hi: int, origin: int, records: list[Slot]) -> None:
        offset = lo
        for line in buf[lo:hi].split(b"\n"):
            self._index_odd_line(origin + offset, line, records)
            offset += len(line) + 1

    def _index_odd_line(self, offset: int, line: bytes, records: list[Slot]) -> None:
        """A line not in pi's key order: blank, foreign-ordered, a stray header, or garbage."""
        if not line.strip():
            return
        try:
            obj = json.loads(line.decode("utf-8", errors="replace"))
        except ValueError:
            torn = offset + len(line) >= self._end
            what = "an incomplete last line (a torn write)" if torn else "a malformed line"
            self._warn(f"skipped {what}", offset)
            return
        if not isinstance(obj, dict):
            self._warn("skipped a line that is not a JSON object", offset)
            return
        if obj.get("type") == "session":
            self._warn("ignored a second session header", offset)
            return
        kind, ident, parent = obj.get("type"), obj.get("id"), obj.get("parentId")
        if not isinstance(kind, str) or not isinstance(ident, str):
            self._warn("skipped a line without string 'type' and 'id'", offset)
            return
        message = obj.get("message")
        role = message.get("role") if isinstance(message, dict) else None
        records.append(
            (
                offset,
                len(line),
                ident,
                parent if isinstance(parent, str) else None,
                kind,
                role if isinstance(role, str) else None,
            )
        )

    def _add(self, slot: Slot) -> None:
        self._order.append(slot)
        ident = slot[ID]
        if ident in self._slots:
            # Scanning runs backwards, so the slot already held is the later line: as in pi,
            # the later line with an id wins.
            self._shadowed.setdefault(ident, []).append(slot)
            self._warn(f"duplicate entry id {ident}: an earlier line with it is ignored", slot[OFFSET])
            return
        self._slots[ident] = slot

    def scan_all(self) -> None:
        """Index every line of the file."""
        with self.reading():
            while self._scan_block():
                pass

    # -- lookups -----------------------------------------------------------------------

    def slot(self, entry_id: str) -> Slot | None:
        """The skeleton of entry ``entry_id``, scanning further back until it is found."""
        found = self._slots.get(entry_id)
        if found is not None or self.complete:
            return found
        if self._f is None:
            with self.reading():
                return self.slot(entry_id)
        while found is None and self._scan_block():
            found = self._slots.get(entry_id)
        return found

    def has_id(self, entry_id: str) -> bool:
        """Whether a line of the file may use ``entry_id`` (for picking unused ids).

        Lines not yet indexed are searched for ids with one pattern match per block, without
        indexing them; the answer can be a false "yes", never a false "no".
        """
        if entry_id in self._slots:
            return True
        if self.complete:
            return False
        if self._unscanned_ids is None:
            self._unscanned_ids = self._harvest_ids(self._start, self._lo + len(self._carry))
        return entry_id.encode() in self._unscanned_ids

    def _harvest_ids(self, lo: int, hi: int) -> set[bytes]:
        with self.reading():
            cached = self.id_cache.get_ids() if self.id_cache is not None else None
            if cached is not None:
                end, crc, known = cached
                if lo <= end <= self._end and self._tail_crc(end) == crc:
                    if end >= hi:
                        return known
                    return known | self._find_ids(end, hi)
            ids = self._find_ids(lo, hi)
            if self.id_cache is not None:
                self.id_cache.put_ids(hi, self._tail_crc(hi), ids)
            return ids

    def _tail_crc(self, end: int) -> int:
        start = max(0, end - 256)
        return zlib.crc32(self._read(start, end - start))

    def _find_ids(self, lo: int, hi: int) -> set[bytes]:
        ids: set[bytes] = set()
        with self.reading():
            carry = b""
            position = lo
            while position < hi:
                size = min(_MAX_BLOCK, hi - position)
                data = carry + self._read(position, size)
                position += size
                cut = data.rfind(b"\n") if position < hi else len(data)
                if cut < 0:
                    carry = data
                    continue
                ids.update(_compiled(_ENTRY_ID).findall(data, 0, cut))
                carry = data[cut:]
        return ids

    def entry(self, entry_id: str) -> SessionEntry | None:
        """Entry ``entry_id`` parsed, or None if no readable line has that id."""
        if self._f is None:
            with self.reading():
                return self.entry(entry_id)
        while True:
            slot = self.slot(entry_id)
            if slot is None:
                return None
            entry = self._parse(slot)
            if entry is not None:
                return entry

    def parse_slot(self, slot: Slot) -> SessionEntry | None:
        """Parse an indexed slot (see :meth:`entry`); None if the line is unreadable."""
        return self._parse(slot)

    def _parse(self, slot: Slot) -> SessionEntry | None:
        offset = slot[OFFSET]
        entry = self._parsed.get(offset)
        if entry is not None:
            return entry
        live = self._slots.get(slot[ID])
        if live is None or live[OFFSET] != offset:
            return None  # dropped, or shadowed by a later line
        slot = live
        try:
            data = self._read(offset, slot[LENGTH])
            entry = parse_entry(data)
        except (OSError, ValueError) as error:
            self._drop(slot, f"skipped an unreadable entry line ({_reason(error)})")
            return None
        if entry.id != slot[ID]:
            self._drop(slot, f"skipped an entry line whose id is ambiguous ({slot[ID]} / {entry.id})")
            return None
        if entry.parent_id != slot[PARENT]:
            fixed: Slot = (offset, slot[LENGTH], slot[ID], entry.parent_id, slot[TYPE], slot[ROLE])
            self._slots[slot[ID]] = fixed
        # Keep a way back to the line rather than the line: the file already holds it.
        entry._with_source(_LineRef(self, offset, slot[LENGTH], zlib.crc32(data)))
        if isinstance(entry, UnknownEntry) and entry.type in ENTRY_TYPES:
            self._warn(f"kept invalid {entry.type} entry {entry.id} as unknown: {entry.reason}", offset)
        self._parsed[offset] = entry
        return entry

    def _drop(self, slot: Slot, message: str) -> None:
        self._warn(message, slot[OFFSET])
        ident = slot[ID]
        live = self._slots.get(ident)
        if live is not None and live[OFFSET] == slot[OFFSET]:
            earlier = self._shadowed.get(ident)
            if earlier:
                self._slots[ident] = earlier.pop(0)
            else:
                del self._slots[ident]

    def slots_from_end(self) -> Iterator[Slot]:
        """The live slots, last line first, scanning further back as they are consumed.

        Use inside :meth:`reading`.
        """
        position = 0
        while True:
            while position >= len(self._order):
                if not self._scan_block():
                    return
            slot = self._order[position]
            position += 1
            live = self._slots.get(slot[ID])
            if live is not None and live[OFFSET] == slot[OFFSET]:
                yield live

    def leaf(self) -> SessionEntry | None:
        """The entry of the last readable line (pi's leaf after loading)."""
        with self.reading():
            for slot in self.slots_from_end():
                entry = self._parse(slot)
                if entry is not None:
                    return entry
        return None

    def slots_in_file_order(self) -> list[Slot]:
        """Every live slot of the file, first line first (scans the whole file)."""
        self.scan_all()
        live = []
        for slot in reversed(self._order):
            current = self._slots.get(slot[ID])
            if current is not None and current[OFFSET] == slot[OFFSET]:
                live.append(current)
        return live

    def entries(self) -> list[SessionEntry]:
        """Every readable entry in file order (parses the whole file)."""
        out: list[SessionEntry] = []
        with self.reading():
            for slot in self.slots_in_file_order():
                entry = self._parse(slot)
                if entry is not None:
                    out.append(entry)
        return out

    def last_of_type(self, type_name: str) -> SessionEntry | None:
        """The entry of the last line of type ``type_name``, searching from the end.

        Lines not yet indexed are searched for pi's line prefix ``{"type":"<type_name>"``
        without indexing them.
        """
        with self.reading():
            for slot in self._order:
                if slot[TYPE] == type_name:
                    entry = self._parse(slot)
                    if entry is not None:
                        return entry
            needle = b'\n{"type":"' + type_name.encode() + b'"'
            hi = self._lo + len(self._carry)
            while True:
                found = self._search_back(needle, self._start - 1, hi)
                if found < 0:
                    return None
                line = self._read_line(found + 1, hi)
                hi = found
                try:
                    entry = parse_entry(line)
                except ValueError:
                    continue
                if entry.id not in self._slots:
                    return entry

    def _read_line(self, start: int, limit: int) -> bytes:
        chunks = []
        position = start
        while position < limit:
            chunk = self._read(position, min(_FIRST_BLOCK, limit - position))
            newline = chunk.find(b"\n")
            if newline >= 0:
                chunks.append(chunk[:newline])
                break
            chunks.append(chunk)
            position += len(chunk)
        return b"".join(chunks)

    def _search_back(self, needle: bytes, lo: int, hi: int) -> int:
        """Offset of the last occurrence of ``needle`` within [lo, hi), or -1."""
        lo = max(lo, 0)
        overlap = len(needle) - 1
        while hi - lo >= len(needle):
            start = max(lo, hi - _MAX_BLOCK)
            found = self._read(start, hi - start).rfind(needle)
            if found >= 0:
                return start + found
            if start == lo:
                return -1
            hi = start + overlap
        return -1

    def checksum(self, slot: Slot) -> int:
        """CRC-32 of the slot's line, identifying its exact content."""
        return zlib.crc32(self._read(slot[OFFSET], slot[LENGTH]))


class _LineRef:
    """An entry's line in the file, re-read (and checked) when the entry is serialised."""

    __slots__ = ("_crc", "_index", "_length", "_offset")

    def __init__(self, index: FileIndex, offset: int, length: int, crc: int) -> None:
        self._index = index
        self._offset = offset
        self._length = length
        self._crc = crc

    def read(self) -> bytes | None:
        try:
            data = self._index._read(self._offset, self._length)
        except OSError:
            return None
        return data if zlib.crc32(data) == self._crc else None


def _reason(error: Exception) -> str:
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return text[:200]
