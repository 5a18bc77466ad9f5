"""How a hook's results combine: the :class:`Strategy` of each spec and the ``hookspec`` marker."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ._markers import hookspec_marker

__all__ = ["CONTRACT_ATTRIBUTE", "HookContract", "Strategy", "get_contract", "hookspec"]

F = TypeVar("F", bound=Callable[..., Any])

CONTRACT_ATTRIBUTE = "pi_contract"
"""The attribute :func:`hookspec` sets on a spec function; read it with :func:`get_contract`."""


class Strategy(enum.Enum):
    """How the implementations of one hook are called and how their results combine.

    Lifecycle hooks are awaited by pi-host's dispatcher one implementation at a time, in
    pluggy's call order (last registered first; ``tryfirst``/``trylast`` move an
    implementation to the front or back). Implementations may be ``def`` or ``async def``.
    """

    NOTIFY = "notify"
    """Every implementation runs; return values are not expected (a non-``None`` one is reported)."""

    PIPELINE = "pipeline"
    """Every implementation runs; each result replaces (part of) the value the next one sees."""

    PIPELINE_UNTIL = "pipeline-until"
    """Like :attr:`PIPELINE`, but one kind of result ends the chain (``pi_input``'s ``InputHandled``)."""

    VETO = "veto"
    """The first blocking result ends the chain. Fails closed: an implementation that raises or
    returns a wrong type blocks."""

    FIRST = "first"
    """The first non-``None`` result wins and ends the chain."""

    COLLECT = "collect"
    """Every implementation runs; the results are gathered (and, for some hooks, partly chained)."""

    SYNC = "sync"
    """A synchronous setup or registration hook, called through plain pluggy; not awaited."""

    @property
    def is_async(self) -> bool:
        """Whether hooks with this strategy are driven by the async dispatcher."""
        return self is not Strategy.SYNC


@dataclass(frozen=True)
class HookContract:
    """What a hookspec promises beyond its signature.

    :ivar strategy: how results combine.
    :ivar returns: the result types an implementation may return besides ``None``; ``()``
        for hooks whose results are ignored. ``object`` accepts anything.
    :ivar pipe: for :attr:`Strategy.PIPELINE` hooks, the argument
        a result replaces before the next implementation is called.
    :ivar historic: whether pluggy replays past calls to plugins registered later.
    """

    strategy: Strategy
    returns: tuple[type, ...] = ()
    pipe: str | None = None
    historic: bool = False


def hookspec(
    *,
    strategy: Strategy,
    returns: type | tuple[type, ...] = (),
    pipe: str | None = None,
    historic: bool = False,
) -> Callable[[F], F]:
    """Declare a ``pi`` hook specification and how its results combine.

    pluggy's ``firstresult`` and hook wrappers do not work on awaited values, so the
    combination rule lives here instead and the dispatcher applies it::

        @hookspec(strategy=Strategy.FIRST, returns=MyDecision)
        def pi_myplugin_decide(question: str, ctx: PluginContext) -> MyDecision | None:
            \"\"\"...\"\"\"

    :param strategy: how the implementations' results combine.
    :param returns: the result types an implementation may return besides ``None``.
    :param pipe: for :attr:`Strategy.PIPELINE`, the argument each result replaces.
    :param historic: replay past calls to late plugins (only with :attr:`Strategy.SYNC`).
    :raises ValueError: for combinations the dispatcher cannot honour.
    """
    types = returns if isinstance(returns, tuple) else (returns,)
    if historic and strategy is not Strategy.SYNC:
        raise ValueError("historic hooks must use Strategy.SYNC: pluggy replays them synchronously")
    if pipe is not None and strategy is not Strategy.PIPELINE:
        raise ValueError("pipe= is only meaningful with Strategy.PIPELINE")
    contract = HookContract(strategy=strategy, returns=types, pipe=pipe, historic=historic)
    mark = hookspec_marker(historic=historic)

    def decorate(function: F) -> F:
        setattr(function, CONTRACT_ATTRIBUTE, contract)
        return mark(function)

    return decorate


def get_contract(spec_function: object) -> HookContract | None:
    """The contract :func:`hookspec` attached to a spec function, or ``None`` for a plain pluggy spec."""
    contract = getattr(spec_function, CONTRACT_ATTRIBUTE, None)
    return contract if isinstance(contract, HookContract) else None
