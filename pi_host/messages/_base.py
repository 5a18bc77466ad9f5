"""The pydantic base class shared by every wire model: camelCase JSON, frozen, lossless."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Self

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel
from pydantic_core import to_json

from pi_host._frozen import deep_freeze
from pi_host._frozen_fields import FrozenJson, FrozenSeq

__all__ = ["FrozenJson", "FrozenSeq", "WireModel", "json_bytes", "now_ms"]


class WireModel(BaseModel):
    """Base for models that cross a boundary in pi's camelCase JSON shape.

    Python attributes are snake_case (``tool_call_id``); JSON keys are pi's camelCase
    (``toolCallId``). Models are frozen, and their lists and mappings read-only
    (:data:`FrozenSeq`, :data:`FrozenJson`, and :meth:`model_copy` freezes what it is given),
    so a plugin that wants a different value returns a new one (``model_copy(update=...)``)
    instead of mutating what other plugins see. Unknown
    keys are kept (``extra="allow"``) so that a session written by a newer pi round-trips
    without losing fields.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
        extra="allow",
        ser_json_inf_nan="null",
        # Build validators on first use: a run touches a fraction of the models, and building
        # them all at import time was most of pi-host's start-up.
        defer_build=True,
    )

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """pydantic's copy, with the updated values' lists and dicts made read-only (pydantic
        does not validate ``update``, so a plain list would stay mutable in the copy)."""
        if update:
            update = {key: deep_freeze(value) for key, value in update.items()}
        return super().model_copy(update=update, deep=deep)

    def to_json_dict(self) -> dict[str, Any]:
        """Return the pi-shaped JSON object (camelCase keys, unset optional fields omitted)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def to_json(self) -> str:
        """Return compact JSON text, as pi writes it (no spaces)."""
        return self.model_dump_json(by_alias=True, exclude_none=True)

    def to_json_bytes(self) -> bytes:
        """:meth:`to_json` encoded as UTF-8, what JSON and RPC modes write."""
        if type(self).to_json is WireModel.to_json:
            # The serialiser's own bytes: no decoding to text and encoding back.
            return json_bytes(self)
        return self.to_json().encode("utf-8")


def json_bytes(model: BaseModel, exclude: set[str] | None = None) -> bytes:
    """``model``'s compact pi JSON (camelCase, no ``None`` fields) as UTF-8 bytes.

    What ``model_dump_json`` writes, without making a ``str`` and encoding it again (a
    streamed reply's snapshot is serialised at every delta). ``pydantic_core.to_json`` hands
    a model to the model's own serialiser, so its config (``ser_json_inf_nan``) applies;
    ``TypeAdapter(cls).serializer`` would build a second, slower serialiser per class.
    """
    return to_json(model, by_alias=True, exclude_none=True, exclude=exclude)


def now_ms() -> int:
    """Milliseconds since the epoch, the unit of every message ``timestamp``."""
    return int(time.time() * 1000)
