"""Field types for models whose lists and mappings are read-only (see :mod:`pi_host._frozen`).

A module of their own, below every layer, so that the settings models use them without
importing the message models; it imports pydantic, which :mod:`pi_host._frozen` does not.
"""

from __future__ import annotations

from typing import Annotated, TypeVar

from pydantic import AfterValidator

from ._frozen import deep_freeze, freeze_list

__all__ = ["FrozenJson", "FrozenSeq"]

T = TypeVar("T")

FrozenSeq = Annotated[list[T], AfterValidator(freeze_list)]
"""A list field held as a read-only list (:class:`~pi_host._frozen.FrozenList`): a frozen
model alone leaves ``message.content.append(...)`` possible."""

FrozenJson = Annotated[T, AfterValidator(deep_freeze)]
"""A field of JSON-like data (tool arguments, ``details``, settings values) whose lists and
dicts are read-only all the way down."""
