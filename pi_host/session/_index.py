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

import json
import logging
import re
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ._entries import ENTRY_TYPES, SessionEntry, SessionHeader, UnknownEntry, parse_entry, parse_header

__all__ = ["FileIndex", "SessionWarning", "read_header"]

logger = logging.getLogger("pi_host.session")

_FIRST_BLOCK = 64 * 1024
_MAX_BLOCK = 4 * 1024 * 1024
_TAIL_WINDOW = 512

_HEAD = re.compile(
    rb'\{"type":"([A-Za-z_]+)","id":"([^"\\]*)","parentId":(?:null|"([^"\\]*)"),'
    rb'"timestamp":"[^"\\]*"(?:,"message":\{"role":"([A-Za-z]+)")?'
)
_TYPE = re.compile(rb'\{"type":"([A-Za-z_]+)"')
_TAIL = re.compile(rb'"id":"([^"\\]*)","parentId":(?:null|"([^"\\]*)"),"timestamp":"[^"\\]*"\}\s*\Z')
_TYPE_NAMES = {name.encode(): name for name in ENTRY_TYPES}
_ROLE_NAMES = {
    name.encode(): name
    for name in ("user", "assistant", "toolResult", "bashExecution", "custom", "hookMessage")
}


@dataclass(frozen=True, slots=True)
class SessionWarning:
    """Something wrong in a session file that was skipped rather than failing the load."""

    message: str
    path: str | None = None
    offset: int | None = None

    def __str__(self) -> str:
        return self.message


class _Slot:
    """What the index knows about one entry line before (and after) parsing it."""

    __slots__ = ("entry", "id", "length", "offset", "parent_id", "role", "type")

    def __init__(
        self, offset: int, length: int, id: str, parent_id: str | None, type: str, role: str | None
    ) -> None:
        self.offset = offset
        self.length = length
        self.id = id
        self.parent_id = parent_id
        self.type = type
        self.role = role
        self.entry: SessionEntry | None = None


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
    """

    def __init__(self, path: Path, start: int, end: int, warn: Callable[[str, int | None], None]) -> None:
        self.path = path
        self._start = start
        self._end = end
        self._warn = warn
        self._slots: dict[str, _Slot] = {}
        self._shadowed: dict[str, list[_Slot]] = {}  # earlier lines reusing an id
        self._order: list[_Slot] = []  # every indexed slot, latest line first
        self._lo = end  # [lo, end) is indexed, except the carry
        self._carry = b""  # the end of a line whose start lies before lo
        self._block = _FIRST_BLOCK
        self._f: BinaryIO | None = None

    # -- file access -------------------------------------------------------------------

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Keep the file open across several lookups (each lookup otherwise opens it)."""
        if self._f is not None:
            yield
            return
        with open(self.path, "rb") as f:
            self._f = f
            try:
                yield
            finally:
                self._f = None

    def _read(self, offset: int, length: int) -> bytes:
        assert self._f is not None
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
        pieces = data.split(b"\n")
        offsets = []
        offset = base
        for piece in pieces:
            offsets.append(offset)
            offset += len(piece) + 1
        for index in range(len(pieces) - 1, -1, -1):
            self._index_line(offsets[index], pieces[index])
        return True

    def _index_line(self, offset: int, line: bytes) -> None:
        match = _HEAD.match(line)
        role: str | None = None
        if match is not None:
            raw_type, raw_id, raw_parent, raw_role = match.groups()
            type_ = _TYPE_NAMES.get(raw_type) or raw_type.decode()
            if raw_role is not None:
                role = _ROLE_NAMES.get(raw_role) or raw_role.decode()
        else:
            type_match = _TYPE.match(line)
            tail = _TAIL.search(line, max(0, len(line) - _TAIL_WINDOW)) if type_match else None
            if type_match is not None and tail is not None:
                raw_id, raw_parent = tail.groups()
                type_ = _TYPE_NAMES.get(type_match.group(1)) or type_match.group(1).decode()
            else:
                self._index_odd_line(offset, line)
                return
        parent = raw_parent.decode() if raw_parent is not None else None
        self._add(_Slot(offset, len(line), raw_id.decode(), parent, type_, role))

    def _index_odd_line(self, offset: int, line: bytes) -> None:
        """A line not in pi's key order: blank, foreign-ordered, a stray header, or garbage."""
        if not line.strip():
            return
        text = line.decode("utf-8", errors="replace")
        try:
            obj = json.loads(text)
        except ValueError:
            torn = offset + len(line) >= self._end and not line.endswith(b"}")
            what = "an incomplete last line (torn write)" if torn else "a malformed line"
            self._warn(f"skipped {what}", offset)
            return
        if not isinstance(obj, dict) or obj.get("type") == "session":
            if isinstance(obj, dict):
                self._warn("ignored a second session header", offset)
            else:
                self._warn("skipped a line that is not a JSON object", offset)
            return
        kind, ident, parent = obj.get("type"), obj.get("id"), obj.get("parentId")
        if not isinstance(kind, str) or not isinstance(ident, str):
            self._warn("skipped a line without string 'type' and 'id'", offset)
            return
        message = obj.get("message")
        role = message.get("role") if isinstance(message, dict) else None
        slot = _Slot(
            offset,
            len(line),
            ident,
            parent if isinstance(parent, str) else None,
            kind,
            role if isinstance(role, str) else None,
        )
        self._add(slot)

    def _add(self, slot: _Slot) -> None:
        self._order.append(slot)
        if slot.id in self._slots:
            # Scanning runs backwards, so the slot already held is the later line: as in pi,
            # the later line with an id wins.
            self._shadowed.setdefault(slot.id, []).append(slot)
            self._warn(f"duplicate entry id {slot.id}: an earlier line with it is ignored", slot.offset)
            return
        self._slots[slot.id] = slot

    def scan_all(self) -> None:
        """Index every line of the file."""
        with self.reading():
            while self._scan_block():
                pass

    # -- lookups -----------------------------------------------------------------------

    def slot(self, entry_id: str) -> _Slot | None:
        """The skeleton of entry ``entry_id``, scanning further back until it is found."""
        found = self._slots.get(entry_id)
        if found is not None or self.complete:
            return found
        with self.reading():
            while found is None and self._scan_block():
                found = self._slots.get(entry_id)
        return found

    def has_id(self, entry_id: str) -> bool:
        """Whether a line of the file uses ``entry_id`` (readable or not)."""
        if entry_id in self._slots:
            return True
        if not self.complete:
            self.scan_all()
        return entry_id in self._slots

    def entry(self, entry_id: str) -> SessionEntry | None:
        """Entry ``entry_id`` parsed, or None if no readable line has that id."""
        with self.reading():
            while True:
                slot = self.slot(entry_id)
                if slot is None:
                    return None
                entry = self._parse(slot)
                if entry is not None:
                    return entry

    def parse_slot(self, slot: _Slot) -> SessionEntry | None:
        """Parse an indexed slot (see :meth:`entry`)."""
        with self.reading():
            return self._parse(slot)

    def _parse(self, slot: _Slot) -> SessionEntry | None:
        if slot.entry is not None:
            return slot.entry
        try:
            text = self._read(slot.offset, slot.length).decode("utf-8", errors="replace")
            entry = parse_entry(text)
        except (OSError, ValueError) as error:
            self._drop(slot, f"skipped an unreadable entry line ({_reason(error)})")
            return None
        if entry.id != slot.id:
            self._drop(slot, f"skipped an entry line whose id is ambiguous ({slot.id} / {entry.id})")
            return None
        if entry.parent_id != slot.parent_id:
            slot.parent_id = entry.parent_id
        if isinstance(entry, UnknownEntry) and entry.type in ENTRY_TYPES:
            self._warn(
                f"entry {entry.id} of type {entry.type} is invalid and was kept as unknown", slot.offset
            )
        slot.entry = entry
        return entry

    def _drop(self, slot: _Slot, message: str) -> None:
        self._warn(message, slot.offset)
        if self._slots.get(slot.id) is slot:
            earlier = self._shadowed.get(slot.id)
            if earlier:
                self._slots[slot.id] = earlier.pop(0)
            else:
                del self._slots[slot.id]

    def slots_from_end(self) -> Iterator[_Slot]:
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
            if self._slots.get(slot.id) is slot:
                yield slot

    def leaf(self) -> SessionEntry | None:
        """The entry of the last readable line (pi's leaf after loading)."""
        with self.reading():
            for slot in self.slots_from_end():
                entry = self._parse(slot)
                if entry is not None:
                    return entry
        return None

    def slots_in_file_order(self) -> list[_Slot]:
        """Every live slot of the file, first line first (scans the whole file)."""
        self.scan_all()
        live = [slot for slot in self._order if self._slots.get(slot.id) is slot]
        live.reverse()
        return live

    def entries(self) -> list[SessionEntry]:
        """Every readable entry in file order (parses the whole file)."""
        out: list[SessionEntry] = []
        with self.reading():
            for slot in self.slots_in_file_order():
                entry = self._parse(slot)
                if entry is not None and self._slots.get(slot.id) is slot:
                    out.append(entry)
        return out

    def last_of_type(self, type_name: str) -> SessionEntry | None:
        """The entry of the last line of type ``type_name``, searching from the end.

        Lines not yet indexed are searched for pi's line prefix ``{"type":"<type_name>"``
        without indexing them.
        """
        with self.reading():
            for slot in self._order:
                if slot.type == type_name and self._slots.get(slot.id) is slot:
                    entry = self._parse(slot)
                    if entry is not None:
                        return entry
            needle = b'\n{"type":"' + type_name.encode() + b'"'
            hi = self._lo + len(self._carry)
            while True:
                found = self._search_back(needle, self._start - 1, hi)
                if found < 0:
                    return None
                line_start = found + 1
                line = self._read_line(line_start, hi)
                hi = found
                try:
                    entry = parse_entry(line.decode("utf-8", errors="replace"))
                except ValueError:
                    continue
                if self._slots.get(entry.id) is None:
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

    def checksum(self, slot: _Slot) -> int:
        """CRC-32 of the slot's line, identifying its exact content."""
        with self.reading():
            return zlib.crc32(self._read(slot.offset, slot.length))


def _reason(error: Exception) -> str:
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return text[:200]
