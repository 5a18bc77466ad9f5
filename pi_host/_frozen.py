"""Read-only containers, so that what plugins receive is immutable all the way down.

pydantic's ``frozen=True`` stops ``message.content = ...`` but not ``message.content.append``:
a list or dict field stays mutable. The models plugins receive hold their lists and mappings
as :class:`FrozenList` and :class:`FrozenDict` instead: subclasses of ``list`` and ``dict``
whose mutating methods raise ``TypeError``. Subclasses, not tuples and ``MappingProxyType``,
so that a value still is the ``list``/``dict`` pi's JSON shape and every reader expect
(``content == [block]``, ``isinstance(content, list)``, pydantic's fast serialisers), and
only writing fails.

Defined below every layer; importing it costs nothing.
"""

from __future__ import annotations

from typing import Any, NoReturn, SupportsIndex, TypeVar

__all__ = ["FrozenDict", "FrozenList", "deep_freeze", "empty_frozen_dict", "empty_frozen_list", "freeze_list"]

T = TypeVar("T")


def _refuse(self: object, *args: object, **kwargs: object) -> NoReturn:
    raise TypeError(
        f"{type(self).__name__} is read-only: values plugins receive are immutable; "
        "build a new one (model_copy(update=...)) instead of changing this one"
    )


class FrozenList(list[T]):
    """A ``list`` that refuses every change (``append``, ``x[i] = …``, ``+=`` …).

    Reading, iterating, comparing with lists and ``+`` (which makes a new plain list) work
    as for any list.
    """

    __slots__ = ()

    append = extend = insert = remove = pop = clear = sort = reverse = _refuse
    __setitem__ = __delitem__ = _refuse

    def __iadd__(self, other: object) -> NoReturn:  # type: ignore[misc]
        _refuse(self)

    def __imul__(self, other: SupportsIndex) -> NoReturn:
        _refuse(self)

    # pickle and copy rebuild a list subclass by appending to an empty one; rebuild it whole.
    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (list(self),))

    def __copy__(self) -> FrozenList[T]:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenList[T]:
        import copy

        return type(self)(copy.deepcopy(list(self), memo))


class FrozenDict(dict[str, Any]):
    """A ``dict`` that refuses every change (``d[k] = …``, ``update``, ``pop`` …)."""

    __slots__ = ()

    __setitem__ = __delitem__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __ior__(self, other: object) -> NoReturn:  # type: ignore[misc]
        _refuse(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (dict(self),))

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenDict:
        import copy

        return type(self)(copy.deepcopy(dict(self), memo))


def deep_freeze(value: Any) -> Any:
    """``value`` with every ``list`` a :class:`FrozenList` and every ``dict`` a :class:`FrozenDict`,
    all the way down (JSON-like data: tool arguments, ``details``). Other objects are kept as
    they are (pydantic models plugins receive are frozen themselves); frozen containers are
    returned unchanged, their contents having been frozen when they were made."""
    kind = type(value)
    if kind is FrozenList or kind is FrozenDict:
        return value
    if isinstance(value, dict):
        return FrozenDict({key: deep_freeze(item) for key, item in value.items()})
    if isinstance(value, list):
        return FrozenList([deep_freeze(item) for item in value])
    if isinstance(value, tuple) and type(value) is tuple:
        return tuple(deep_freeze(item) for item in value)
    return value


def freeze_list(value: list[T]) -> list[T]:
    """A validated list field's value as a :class:`FrozenList` (its items are models)."""
    return value if type(value) is FrozenList else FrozenList(value)


def empty_frozen_list() -> list[Any]:
    """``Field(default_factory=empty_frozen_list)``: an empty, read-only list (see
    :mod:`pi_host._factories` for why a function and not a class)."""
    return FrozenList()


def empty_frozen_dict() -> dict[str, Any]:
    """``Field(default_factory=empty_frozen_dict)``: an empty, read-only mapping."""
    return FrozenDict()
