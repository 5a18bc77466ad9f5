"""A typed, collision-free store for per-plugin state (pytest's ``Stash``)."""

from __future__ import annotations

from typing import Any, Generic, TypeVar, cast

__all__ = ["Stash", "StashKey"]

T = TypeVar("T")
D = TypeVar("D")


class StashKey(Generic[T]):
    """A key into a :class:`Stash`; the type parameter is the type of the stored value.

    Create one per piece of state at module level, so no other plugin can reach the value::

        seen_tools = StashKey[set[str]]()
    """

    __slots__ = ()


class Stash:
    """Per-session state for plugins, keyed by :class:`StashKey` objects instead of strings.

    Plugins keep their state here instead of setting attributes on host objects: keys are
    objects, so two plugins can never collide, and the value type travels with the key.
    """

    __slots__ = ("_storage",)

    def __init__(self) -> None:
        self._storage: dict[StashKey[Any], object] = {}

    def __setitem__(self, key: StashKey[T], value: T) -> None:
        self._storage[key] = value

    def __getitem__(self, key: StashKey[T]) -> T:
        """:raises KeyError: if nothing is stored under ``key``."""
        return cast(T, self._storage[key])

    def get(self, key: StashKey[T], default: D) -> T | D:
        """The value stored under ``key``, or ``default``."""
        try:
            return self[key]
        except KeyError:
            return default

    def setdefault(self, key: StashKey[T], default: T) -> T:
        """The value stored under ``key``, storing ``default`` first if there is none."""
        try:
            return self[key]
        except KeyError:
            self[key] = default
            return default

    def __delitem__(self, key: StashKey[T]) -> None:
        del self._storage[key]

    def __contains__(self, key: StashKey[T]) -> bool:
        return key in self._storage

    def __len__(self) -> int:
        return len(self._storage)
