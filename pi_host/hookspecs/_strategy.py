"""How a hook's results combine: the :class:`Strategy` of each spec and the ``hookspec`` marker."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from ._markers import hookspec_marker

if TYPE_CHECKING:
    from ._reducers import Reducer

__all__ = ["CONTRACT_ATTRIBUTE", "HookContract", "Strategy", "get_contract", "hookspec"]

F = TypeVar("F", bound=Callable[..., Any])

CONTRACT_ATTRIBUTE = "pi_contract"
"""The attribute :func:`hookspec` sets on a spec function; read it with :func:`get_contract`."""


class Strategy(enum.Enum):
    """How the implementations of one hook are called and how their results combine.

    Lifecycle hooks are awaited by pi-host's dispatcher one implementation at a time, in
    call order (a later tier first, then last registered first; ``tryfirst``/``trylast``
    move an implementation to the front or back). Implementations may be ``def`` or
    ``async def``.
    """

    NOTIFY = "notify"
    """Every implementation runs; return values are not expected (a non-``None`` one is reported)."""

    PIPELINE = "pipeline"
    """Every implementation runs; each result replaces the ``pipe`` argument the next one sees."""

    PIPELINE_UNTIL = "pipeline-until"
    """Like :attr:`PIPELINE`, but a result of a ``stop_on`` type ends the chain and is returned
    (``pi_input``'s ``InputHandled``)."""

    VETO = "veto"
    """The first blocking result (a ``stop_on`` type) ends the chain. Fails closed: an
    implementation that raises or returns a wrong type blocks (a ``VetoFailure``)."""

    FIRST = "first"
    """The first non-``None`` result wins and ends the chain (pluggy's ``firstresult``)."""

    COLLECT = "collect"
    """Every implementation runs; the results are gathered (and, for some hooks, partly chained)."""

    SYNC = "sync"
    """A synchronous setup or registration hook: every implementation runs, not awaited; one
    that fails fails its plugin's load (reported and unregistered)."""

    SYNC_FIRST = "sync-first"
    """A synchronous question asked whenever the host needs an answer (``pi_session_store``:
    which plugin opens this URI): implementations are called in call order, not awaited, and
    the first non-``None`` result wins (pluggy's ``firstresult``). One that fails or returns
    a wrong type ends the call with a :class:`~pi_host.HookError` naming it
    (``PluginManager.call_first``); the hook's spec says what that means for the caller."""

    @property
    def is_async(self) -> bool:
        """Whether hooks with this strategy are driven by the async dispatcher."""
        return self is not Strategy.SYNC and self is not Strategy.SYNC_FIRST


@dataclass(frozen=True)
class HookContract:
    """What a hookspec promises beyond its signature.

    :ivar strategy: how results combine.
    :ivar returns: the result types an implementation may return besides ``None``; ``()``
        for hooks whose results are ignored. ``object`` accepts anything. An entry may be a
        ``"module:Name"`` string, imported only when a result is checked (:meth:`result_types`),
        so a hookspec module need not import what its hooks return.
    :ivar pipe: for :attr:`Strategy.PIPELINE`, :attr:`~Strategy.PIPELINE_UNTIL` (and a
        rewriting :attr:`~Strategy.VETO`), the argument a result replaces before the next
        implementation is called.
    :ivar stop_on: for :attr:`~Strategy.PIPELINE_UNTIL` and :attr:`~Strategy.VETO`, the
        result types that end the chain (a VETO without it: every type in ``returns``).
    :ivar reducer: a :class:`~pi_host.hookspecs.Reducer` subclass with the hook's own rule,
        called as ``reducer(hook_name, returns)``; ``None`` uses the strategy's generic one.
    :ivar historic: whether past calls are replayed to plugins registered later.
    :ivar bounded: whether the hook timeout applies to each implementation (hooks that do
        long, abortable work, such as running the user's ``!command``, are not bounded).
    """

    strategy: Strategy
    returns: tuple[type | str, ...] = ()
    pipe: str | None = None
    stop_on: tuple[type, ...] = ()
    reducer: type[Reducer[Any, Any]] | None = None
    historic: bool = False
    bounded: bool = True

    @property
    def sync(self) -> bool:
        """A synchronous hook (``PluginManager.call_setup`` or ``call_first``), not awaited."""
        return not self.strategy.is_async

    def result_types(self) -> tuple[type, ...]:
        """:attr:`returns` with its ``"module:Name"`` strings imported.

        :raises ImportError: for a string that names nothing importable.
        """
        if all(isinstance(entry, type) for entry in self.returns):
            return self.returns  # type: ignore[return-value]  # checked just above
        return tuple(_resolve(entry) for entry in self.returns)

    @property
    def fails_load(self) -> bool:
        """An implementation that fails fails its plugin (reported and unregistered)."""
        return self.strategy is Strategy.SYNC


def _resolve(entry: type | str) -> type:
    if isinstance(entry, type):
        return entry
    import importlib

    module_name, _, name = entry.partition(":")
    try:
        found = getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError) as exc:
        raise ImportError(
            f"a hookspec's returns= names {entry!r}, which does not import ({exc}); "
            "write it as 'package.module:ClassName'"
        ) from exc
    if not isinstance(found, type):
        raise TypeError(f"a hookspec's returns= names {entry!r}, a {type(found).__name__}, not a class")
    return found


def hookspec(
    *,
    strategy: Strategy,
    returns: type | str | tuple[type | str, ...] = (),
    pipe: str | None = None,
    stop_on: type | tuple[type, ...] = (),
    reducer: type[Reducer[Any, Any]] | None = None,
    historic: bool = False,
    bounded: bool = True,
) -> Callable[[F], F]:
    """Declare a ``pi`` hook specification and how its results combine.

    The combination rule lives with the spec, for pi's hooks and for a plugin's own hooks
    added through ``pi_addhooks`` alike; the dispatcher applies it. pluggy's own flags are
    set where they apply (``firstresult`` for :attr:`Strategy.FIRST` and
    :attr:`~Strategy.SYNC_FIRST`, ``historic``), so a
    plain ``pm.hook.name(...)`` call of a synchronous implementation behaves the same::

        @hookspec(strategy=Strategy.FIRST, returns=MyDecision)
        def pi_myplugin_decide(question: str, ctx: PluginContext) -> MyDecision | None:
            \"\"\"...\"\"\"

        @hookspec(strategy=Strategy.VETO, returns=(Deny, Rewrite), stop_on=Deny, pipe="request")
        def pi_myplugin_check(request: Request, ctx: PluginContext) -> Deny | Rewrite | None:
            \"\"\"...\"\"\"

    :param strategy: how the implementations' results combine.
    :param returns: the result types an implementation may return besides ``None`` (a
        ``"module:Name"`` string is imported when the first result is checked).
    :param pipe: the argument each result replaces (PIPELINE, PIPELINE_UNTIL, VETO rewrites).
    :param stop_on: the result types that end the chain (PIPELINE_UNTIL, VETO).
    :param reducer: a :class:`~pi_host.hookspecs.Reducer` subclass for a rule of the hook's own.
    :param historic: replay past calls to late plugins (only with :attr:`Strategy.SYNC`).
    :param bounded: whether the hook timeout applies (``False`` for long, abortable work).
    :raises ValueError: for combinations the dispatcher cannot honour.
    """
    types: tuple[type | str, ...] = returns if isinstance(returns, tuple) else (returns,)
    stops = stop_on if isinstance(stop_on, tuple) else (stop_on,)
    if historic and strategy is not Strategy.SYNC:
        raise ValueError("historic hooks must use Strategy.SYNC: past calls are replayed synchronously")
    if reducer is None:
        if pipe is not None and strategy not in (Strategy.PIPELINE, Strategy.PIPELINE_UNTIL, Strategy.VETO):
            raise ValueError("pipe= is only meaningful with Strategy.PIPELINE, PIPELINE_UNTIL or VETO")
        if strategy is Strategy.PIPELINE and pipe is None:
            raise ValueError("Strategy.PIPELINE needs pipe=: the argument each result replaces")
        if strategy is Strategy.PIPELINE_UNTIL and (pipe is None or not stops):
            raise ValueError(
                "Strategy.PIPELINE_UNTIL needs pipe= and stop_on= (the types that end the chain)"
            )
    if stops and strategy not in (Strategy.PIPELINE_UNTIL, Strategy.VETO):
        raise ValueError("stop_on= is only meaningful with Strategy.PIPELINE_UNTIL or VETO")
    contract = HookContract(
        strategy=strategy,
        returns=types,
        pipe=pipe,
        stop_on=stops,
        reducer=reducer,
        historic=historic,
        bounded=bounded,
    )
    first = strategy is Strategy.FIRST or strategy is Strategy.SYNC_FIRST
    mark = hookspec_marker(historic=historic, firstresult=first)

    def decorate(function: F) -> F:
        setattr(function, CONTRACT_ATTRIBUTE, contract)
        return mark(function)

    return decorate


def get_contract(spec_function: object) -> HookContract | None:
    """The contract :func:`hookspec` attached to a spec function, or ``None`` for a plain pluggy spec."""
    contract = getattr(spec_function, CONTRACT_ATTRIBUTE, None)
    return contract if isinstance(contract, HookContract) else None
