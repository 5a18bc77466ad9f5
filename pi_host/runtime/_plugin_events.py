"""Events plugins emit (``ctx.emit``): turned into pi's event lines before anyone sees them.

Every subscriber (the terminal UI, JSON mode's stdout, RPC's writer) receives one kind of
object, a :class:`~pi_host.messages.WireModel` that serialises to pi's camelCase JSON. A
plugin may emit pi's own event classes (``AutoRetryStartEvent`` …), a :class:`PluginEvent`
of its own, or any pydantic model with a ``type`` field:

- an event whose ``type`` is one of pi's session events becomes that event class, so a
  plugin's own ``auto_retry_start`` model is rendered by the terminal UI as pi's is;
- any other event is written as its JSON, keys by alias or else in camelCase.

An event that cannot be written (no ``type``, a value JSON cannot hold) never reaches a
subscriber: :func:`wire_event` returns the reason, which the context reports as an
``extension_error`` while the mode goes on.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_camel

from pi_host.messages import WireModel

__all__ = ["PluginEvent", "wire_event"]


class PluginEvent(WireModel):
    """Base for a plugin's own event types: pi's camelCase JSON, frozen.

    Give the subclass a ``type`` literal naming the event (JSON and RPC clients see it as the
    line's ``"type"``)::

        class CacheWarmedEvent(PluginEvent):
            type: Literal["cache_warmed"] = "cache_warmed"
            entries: int  # written as "entries"; ``hit_rate`` would be "hitRate"
    """

    type: str


class _JsonEvent(WireModel):
    """An already serialised event (a plain pydantic model's JSON, checked)."""

    data: dict[str, Any]

    def to_json_dict(self) -> dict[str, Any]:
        return dict(self.data)

    def to_json(self) -> str:
        return json.dumps(self.data, separators=(",", ":"), ensure_ascii=False)

    def to_json_bytes(self) -> bytes:
        return self.to_json().encode("utf-8")

    @property
    def type(self) -> str:
        return str(self.data.get("type"))


@functools.cache
def _pi_events() -> dict[str, type[WireModel]]:
    from . import _events

    classes = (
        _events.CompactionStartEvent,
        _events.CompactionEndEvent,
        _events.AutoRetryStartEvent,
        _events.AutoRetryEndEvent,
        _events.SessionInfoChangedEvent,
        _events.ThinkingLevelChangedEvent,
        _events.ExtensionErrorEvent,
        _events.QueueUpdateEvent,
    )
    return {cls.model_fields["type"].default: cls for cls in classes}


def _camel_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {to_camel(k) if isinstance(k, str) else k: _camel_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_camel_keys(v) for v in value]
    return value


def wire_event(event: object) -> WireModel | str:
    """``event`` as the model subscribers receive, or why it cannot be written."""
    name = type(event).__name__
    if not isinstance(event, BaseModel):
        return f"ctx.emit({name}): events are pydantic models with a 'type' field, not {name}"
    try:
        if isinstance(event, WireModel):
            data = event.to_json_dict()
            if type(event) in _pi_events().values():
                event.to_json_bytes()  # fails here, not in a mode's writer
                return event
        else:
            data = event.model_dump(mode="json", by_alias=True, exclude_none=True)
            if not any(
                field.alias or field.serialization_alias for field in type(event).model_fields.values()
            ):
                data = _camel_keys(data)
        json.dumps(data, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return f"ctx.emit({name}): the event cannot be written as JSON ({exc})"
    kind = data.get("type")
    if not isinstance(kind, str) or not kind:
        return f"ctx.emit({name}): the event needs a 'type' string field naming it (pi's event lines do)"
    known = _pi_events().get(kind)
    if known is not None:
        try:
            return known.model_validate(data)
        except ValidationError as exc:
            details = "; ".join(
                f"{'.'.join(str(p) for p in error['loc'])}: {error['msg']}" for error in exc.errors()
            )
            return f"ctx.emit({name}): not a valid {kind!r} event ({details})"
    return event if isinstance(event, WireModel) else _JsonEvent(data=data)
