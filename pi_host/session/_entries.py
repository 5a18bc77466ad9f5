"""The lines of a session file: the header and pi's nine entry types, as pydantic models.

Field order follows the object literals in pi's ``session-manager.ts`` (``custom`` and
``custom_message`` put their payload before ``id``), so a new entry serialises to the bytes pi
would write. An entry read from a file remembers the line it came from and serialises back to
exactly that line, whatever key order or number formatting the writer used; any change
(``model_copy(update=...)``) drops the remembered line.
"""

from __future__ import annotations

import functools
import json
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal, Protocol, Self, TypeAlias

from pydantic import Discriminator, Field, PrivateAttr, Tag, TypeAdapter, ValidationError

from pi_host._frozen_fields import FrozenJson, FrozenSeq
from pi_host.messages import (
    AgentMessage,
    UserContent,
    WireModel,
)

from ._jsjson import js_dumps

__all__ = [
    "CURRENT_SESSION_VERSION",
    "ENTRY_TYPES",
    "BranchSummaryEntry",
    "CompactionEntry",
    "CustomEntry",
    "CustomMessageEntry",
    "FileEntry",
    "LabelEntry",
    "ModelChangeEntry",
    "SessionEntry",
    "SessionHeader",
    "SessionInfoEntry",
    "SessionMessageEntry",
    "ThinkingLevelChangeEntry",
    "UnknownEntry",
    "iso_now",
    "iso_to_ms",
    "parse_entry",
    "parse_header",
]

CURRENT_SESSION_VERSION = 3
"""The session file format version pi 0.73 writes (and pi-host reads and writes)."""


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MILLISECOND = timedelta(milliseconds=1)


def iso_now() -> str:
    """The current time as JavaScript's ``new Date().toISOString()`` writes it."""
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def iso_to_ms(timestamp: str) -> int:
    """Milliseconds since the epoch for an ISO timestamp (``new Date(ts).getTime()``).

    An unreadable timestamp gives 0, where JavaScript would give ``NaN``.
    """
    try:
        moment = datetime.fromisoformat(timestamp)
    except (TypeError, ValueError):
        return 0
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // _MILLISECOND


class LineSource(Protocol):
    """Where an entry's original line can be read back from (None once it is gone)."""

    def read(self) -> bytes | None: ...


class _Line(WireModel):
    """A model that is one line of a session file."""

    # A plain slot, not a pydantic private attribute: those cost as much again as validating
    # the line. Copies (``model_copy``) and pickles do not carry it, so a changed entry can
    # never serialise as its old line. It holds the line, or a LineSource for entries of a
    # large file that should not be kept in memory twice.
    __slots__ = ("_source",)

    def to_json(self) -> str:
        """The line's JSON text: the original line for an unchanged entry read from a file."""
        try:
            # The slot itself: an entry made here has it unset, and ``getattr(self, "_source",
            # None)`` took that miss through pydantic's ``__getattr__`` (~2 µs an append).
            source = _SOURCE_SLOT.__get__(self, type(self))
        except AttributeError:
            source = None
        if source is not None and not isinstance(source, str | bytes):
            source = source.read()
        if source is not None:
            return source if isinstance(source, str) else source.decode("utf-8", errors="replace")
        return js_dumps(self.to_json_dict())

    def _with_source(self, line: str | bytes | LineSource) -> Self:
        object.__setattr__(self, "_source", line)
        return self


_SOURCE_SLOT = _Line.__dict__["_source"]


class SessionHeader(_Line):
    """The first line of a session file; metadata, not part of the entry tree.

    Provisional public API (the embedding SDK): it may change before pi-host 1.0.
    """

    type: Literal["session"] = "session"
    version: int | None = CURRENT_SESSION_VERSION
    id: str
    timestamp: str = Field(default_factory=iso_now)
    cwd: str = ""
    parent_session: str | None = None


class _Entry(_Line):
    """Behaviour shared by the entry types. pi writes ``"parentId":null`` for a root entry,
    while every other unset optional field is left out."""

    def to_json_dict(self) -> dict[str, Any]:
        data = super().to_json_dict()
        if "parentId" in data:
            return data
        # Root entry: put the explicit null back where pi's object literal has it, after "id".
        out: dict[str, Any] = {}
        for key, value in data.items():
            out[key] = value
            if key == "id":
                out["parentId"] = None
        return out


class SessionMessageEntry(_Entry):
    """A conversation message (user, assistant, tool result, bash execution, custom)."""

    type: Literal["message"] = "message"
    id: str
    parent_id: str | None = None
    timestamp: str = Field(default_factory=iso_now)
    # AgentMessage's plain "role" discriminator lets pydantic pick the message class inside
    # its JSON reader, which halves the cost of reading a message line. The v2 role name
    # "hookMessage" never gets here: old files are migrated before they are read, and
    # parse_entry renames it on its fallback path.
    message: AgentMessage


class ThinkingLevelChangeEntry(_Entry):
    """The user changed the thinking level."""

    type: Literal["thinking_level_change"] = "thinking_level_change"
    id: str
    parent_id: str | None = None
    timestamp: str = Field(default_factory=iso_now)
    thinking_level: str


class ModelChangeEntry(_Entry):
    """The user switched models."""

    type: Literal["model_change"] = "model_change"
    id: str
    parent_id: str | None = None
    timestamp: str = Field(default_factory=iso_now)
    provider: str
    model_id: str


class CompactionEntry(_Entry):
    """A compaction: ``summary`` stands in for the path before ``first_kept_entry_id``."""

    type: Literal["compaction"] = "compaction"
    id: str
    parent_id: str | None = None
    timestamp: str = Field(default_factory=iso_now)
    summary: str
    first_kept_entry_id: str
    tokens_before: int
    details: FrozenJson[Any] = None
    from_hook: bool | None = None


class BranchSummaryEntry(_Entry):
    """A summary of the branch left behind when navigating the tree (``from_id`` may be "root")."""

    type: Literal["branch_summary"] = "branch_summary"
    id: str
    parent_id: str | None = None
    timestamp: str = Field(default_factory=iso_now)
    from_id: str
    summary: str
    details: FrozenJson[Any] = None
    from_hook: bool | None = None


class CustomEntry(_Entry):
    """Plugin state kept in the session; never part of the model's context."""

    type: Literal["custom"] = "custom"
    custom_type: str
    data: FrozenJson[Any] = None
    id: str
    parent_id: str | None = None
    timestamp: str = Field(default_factory=iso_now)


class CustomMessageEntry(_Entry):
    """A plugin message that is part of the model's context (as a user message)."""

    type: Literal["custom_message"] = "custom_message"
    custom_type: str
    content: str | FrozenSeq[UserContent]
    display: bool
    details: FrozenJson[Any] = None
    id: str
    parent_id: str | None = None
    timestamp: str = Field(default_factory=iso_now)


class LabelEntry(_Entry):
    """Sets (or, with ``label`` None, clears) the label of entry ``target_id``."""

    type: Literal["label"] = "label"
    id: str
    parent_id: str | None = None
    timestamp: str = Field(default_factory=iso_now)
    target_id: str
    label: str | None = None


class SessionInfoEntry(_Entry):
    """Session metadata; the latest one's ``name`` is the session's display name."""

    type: Literal["session_info"] = "session_info"
    id: str
    parent_id: str | None = None
    timestamp: str = Field(default_factory=iso_now)
    name: str | None = None


class UnknownEntry(_Entry):
    """An entry pi-host cannot read: a type from a newer pi, or a known type with bad fields.

    It keeps its place in the tree (so its children stay reachable) and every field it was
    written with, but contributes nothing to the model's context.
    """

    type: str
    id: str
    parent_id: str | None = None
    timestamp: str | None = None

    _reason: str | None = PrivateAttr(default=None)

    @property
    def reason(self) -> str | None:
        """Why the entry could not be read as its type (None for a type pi-host does not know)."""
        return self._reason


ENTRY_TYPES: dict[str, type[_Entry]] = {
    "message": SessionMessageEntry,
    "thinking_level_change": ThinkingLevelChangeEntry,
    "model_change": ModelChangeEntry,
    "compaction": CompactionEntry,
    "branch_summary": BranchSummaryEntry,
    "custom": CustomEntry,
    "custom_message": CustomMessageEntry,
    "label": LabelEntry,
    "session_info": SessionInfoEntry,
}
"""The entry types of session format version 3, by their ``type`` value."""


def _entry_tag(value: Any) -> str:
    if isinstance(value, dict):
        kind = value.get("type")
    elif isinstance(value, UnknownEntry):
        return "unknown"
    else:
        kind = getattr(value, "type", None)
    return kind if isinstance(kind, str) and kind in ENTRY_TYPES else "unknown"


SessionEntry: TypeAlias = Annotated[
    Annotated[SessionMessageEntry, Tag("message")]
    | Annotated[ThinkingLevelChangeEntry, Tag("thinking_level_change")]
    | Annotated[ModelChangeEntry, Tag("model_change")]
    | Annotated[CompactionEntry, Tag("compaction")]
    | Annotated[BranchSummaryEntry, Tag("branch_summary")]
    | Annotated[CustomEntry, Tag("custom")]
    | Annotated[CustomMessageEntry, Tag("custom_message")]
    | Annotated[LabelEntry, Tag("label")]
    | Annotated[SessionInfoEntry, Tag("session_info")]
    | Annotated[UnknownEntry, Tag("unknown")],
    Discriminator(_entry_tag),
]
"""Any entry of the session tree (everything in a session file but the header)."""

FileEntry: TypeAlias = SessionHeader | SessionEntry
"""Any line of a session file."""


# Parsing goes through a union of the nine known types with a plain string discriminator,
# which pydantic resolves inside its JSON reader (a callable one needs a Python object first);
# lines it rejects take the slower path that tells invalid entries from unknown types. Built on
# first use: a run that never reads a session (``-p`` without ``--session``) skips the ~40 ms.
@functools.cache
def _known_entry() -> TypeAdapter[SessionEntry]:
    return TypeAdapter(
        Annotated[
            SessionMessageEntry
            | ThinkingLevelChangeEntry
            | ModelChangeEntry
            | CompactionEntry
            | BranchSummaryEntry
            | CustomEntry
            | CustomMessageEntry
            | LabelEntry
            | SessionInfoEntry,
            Field(discriminator="type"),
        ]
    )


def parse_entry(data: str | bytes | dict[str, Any]) -> SessionEntry:
    """Read one entry from its JSON line (remembered for exact re-serialisation) or object.

    A line of a known type whose fields do not validate, or of a type pi-host does not know,
    becomes an :class:`UnknownEntry` as long as it has a string ``id``.

    :raises ValueError: when the line is not JSON, not an object, or has no string ``id`` and
        ``type``.
    """
    line = data if isinstance(data, str | bytes) else None
    entry: SessionEntry | None = None
    known = _known_entry()
    try:
        entry = known.validate_json(line) if line is not None else known.validate_python(data)
    except ValidationError as error:
        obj = _as_object(data)
        if not isinstance(obj.get("type"), str) or not isinstance(obj.get("id"), str):
            raise ValueError("not a session entry: needs string 'type' and 'id'") from None
        if obj["type"] not in ENTRY_TYPES:
            entry = _unknown(obj, None)
        else:
            reason = _first_error(error)
            message = obj.get("message")
            if isinstance(message, dict) and message.get("role") == "hookMessage":
                obj = {**obj, "message": {**message, "role": "custom"}}
                line = None  # the line no longer describes the entry
            if line is not None or obj is not data:
                # pydantic's JSON reader refuses some text JavaScript accepts (lone
                # surrogates, invalid UTF-8 that JavaScript reads as U+FFFD).
                try:
                    entry = known.validate_python(obj)
                except ValidationError as again:
                    reason = _first_error(again)
            if entry is None:
                entry = _unknown(obj, reason)
    if line is not None:
        entry._with_source(line)
    return entry


def _first_error(error: ValidationError) -> str:
    first = error.errors(include_url=False)[0]
    where = ".".join(str(part) for part in first["loc"])
    return f"{where}: {first['msg']}" if where else first["msg"]


def _unknown(obj: dict[str, Any], reason: str | None) -> UnknownEntry:
    parent = obj.get("parentId")
    timestamp = obj.get("timestamp")
    fields = {
        **obj,
        "parentId": parent if isinstance(parent, str) else None,
        "timestamp": timestamp if isinstance(timestamp, str) else None,
    }
    entry = UnknownEntry.model_validate(fields)
    entry._reason = reason
    return entry


def _as_object(data: str | bytes | dict[str, Any]) -> dict[str, Any]:
    if isinstance(data, bytes):
        data = data.decode("utf-8", errors="replace")
    obj = json.loads(data) if isinstance(data, str) else data
    if not isinstance(obj, dict):
        raise ValueError("not a session entry: a JSON object is expected")
    return obj


def parse_header(data: str | bytes | dict[str, Any]) -> SessionHeader:
    """Read a session header line.

    :raises ValueError: when it is not ``{"type":"session","id":<string>,...}``.
    """
    obj = _as_object(data)
    if obj.get("type") != "session" or not isinstance(obj.get("id"), str):
        raise ValueError("not a session header: needs type 'session' and a string 'id'")
    fields = dict(obj)
    # A version or parent path of the wrong type must not cost the conversation: the header
    # is still a header (the session manager reads the raw version and reports it).
    version = fields.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        fields["version"] = None
    if not isinstance(fields.get("parentSession"), str):
        fields.pop("parentSession", None)
    if not isinstance(fields.get("timestamp"), str):
        fields["timestamp"] = ""
    if not isinstance(fields.get("cwd"), str):
        fields["cwd"] = ""
    header = SessionHeader.model_validate(fields)
    if isinstance(data, str | bytes):
        header._with_source(data)
    return header
