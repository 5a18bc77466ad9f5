"""The one loop over a hook's implementations: preparation, each step, and its error policy.

Every call of a ``pi`` hook walks the same prepared list (:func:`prepare`: the spec's
contract and reducer, the implementations in :meth:`PluginManager.call_order`) and settles
each implementation the same way:

- it is called with only the arguments it declares; a blocking ``def`` of a bounded hook is
  labelled for the hook watchdog, and fails once it returns if the watchdog found it past
  the timeout (:func:`call_blocking`);
- whatever it raises, ``BaseException`` included, is contained by :func:`contain` unless it
  is not the plugin's fault (cancellation of the caller, the host's own shutdown);
- its result is folded with the reducer its spec declares (:func:`settle`), a failure or a
  rejected result through the reducer's fail-closed rule (:func:`fail`).

Two drivers run it: :func:`run_sync` here, for the synchronous setup and registration hooks
and their historic replay (a failure there fails the plugin's load, as those specs state),
and the dispatcher's async loop for lifecycle hooks (a failure is reported as an
``extension_error`` and skipped), which also awaits and times ``async def`` implementations.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from pi_host.errors import HookError
from pi_host.hookspecs._strategy import HookContract, Strategy, get_contract

from ._containment import is_plugin_fault

if TYPE_CHECKING:
    import pluggy

    from pi_host.hookspecs._reducers import Reducer

    from ._manager import PluginManager
    from ._timeouts import HookGuard

__all__ = [
    "Hook",
    "Impl",
    "Settled",
    "call_blocking",
    "contain",
    "describe",
    "fail",
    "prepare",
    "reducer_of",
    "run_sync",
    "settle",
]


class Impl(NamedTuple):
    """One implementation, ready to call."""

    plugin: str
    function: Callable[..., Any]
    argnames: tuple[str, ...]
    is_async: bool
    label: tuple[str, str]  # (plugin, hook), what the watchdog reports
    owner: object  # the registered plugin object


class Hook(NamedTuple):
    """A hook's contract and implementations, prepared once per change of the registry.

    ``reducer`` is ``None`` for a synchronous hook whose spec names none: its results are
    never expected, and its reducer (with the message models it imports) is made only when
    an implementation returns one (:func:`reducer_of`), so ``--help`` stays light.
    """

    name: str
    strategy: Strategy
    reducer: Reducer[Any, Any] | None
    impls: tuple[Impl, ...]
    argnames: frozenset[str]
    bounded: bool
    sync: bool
    contract: HookContract


def prepare(pm: PluginManager, name: str) -> Hook:
    """``name``'s contract and its implementations in call order.

    :raises HookError: for a hook no hookspec declares, or one declared without
        :func:`pi_host.hookspecs.hookspec` (nothing says how to combine its results).
    """
    caller: pluggy.HookCaller | None = getattr(pm.hook, name, None)
    if caller is None or caller.spec is None:
        raise HookError(f"unknown hook {name!r}: no hookspec declares it", hook=name)
    contract = get_contract(caller.spec.function)
    if contract is None:
        raise HookError(
            f"hook {name!r} was not declared with pi_host.hookspecs.hookspec, so the dispatcher "
            "does not know how to combine its results",
            hook=name,
        )
    impls = tuple(
        Impl(
            plugin=impl.plugin_name,
            function=impl.function,
            argnames=tuple(impl.argnames),
            is_async=inspect.iscoroutinefunction(impl.function),
            label=(impl.plugin_name, name),
            owner=impl.plugin,
        )
        for impl in pm.call_order(caller)
    )
    return Hook(
        name=name,
        strategy=contract.strategy,
        reducer=None if contract.sync and contract.reducer is None else reducer_of(name, contract),
        impls=impls,
        argnames=frozenset(caller.spec.argnames),
        bounded=contract.bounded,
        sync=contract.sync,
        contract=contract,
    )


def reducer_of(name: str, contract: HookContract) -> Reducer[Any, Any]:
    """The reducer ``contract`` declares for ``name`` (see :func:`~pi_host.hookspecs.reducer_for`)."""
    from pi_host.hookspecs._reducers import reducer_for

    return reducer_for(name, contract)


def call_blocking(guard: HookGuard | None, hook: Hook, impl: Impl, args: Mapping[str, Any]) -> Any:
    """Call ``impl``; a ``def`` of a bounded hook runs under the watchdog's eye."""
    if impl.is_async or guard is None or guard.timeout is None or not hook.bounded:
        return impl.function(*[args[name] for name in impl.argnames])
    # The watchdog's view of the loop: what runs, and which call it is.
    if not guard.watching:
        guard.start_watchdog()
    guard.calls = serial = guard.calls + 1
    guard.current = impl.label
    try:
        result = impl.function(*[args[name] for name in impl.argnames])
    finally:
        guard.current = None
    # Past the timeout the call could not be stopped; it fails now instead (its result ignored).
    guard.check_overdue(serial, impl.label)
    return result


def contain(
    caught: BaseException, guard: HookGuard | None, entry: tuple[tuple[str, str], Any, int] | None
) -> BaseException:
    """The exception to report for a failed implementation (``BaseException`` too: a plugin's
    ``sys.exit`` or ``KeyboardInterrupt`` fails the plugin, not pi-host).

    A cancellation is the caller's, not the plugin's, and propagates, unless the hook guard
    stopped this very call (its timeout or the user's abort): then the guard's error is the
    one to report.
    """
    if is_plugin_fault(caught):
        return caught
    stopped = guard.stopped(entry) if guard is not None and guard.claims else None
    if stopped is None:
        raise caught
    return stopped


class Settled(NamedTuple):
    """The reducer's state after one implementation; ``rejected`` says why a result was refused."""

    state: Any
    stop: bool
    rejected: str | None = None


def settle(reducer: Reducer[Any, Any], state: Any, plugin: str, result: object) -> Settled:
    """Fold a non-``None`` result into ``state``; a result of the wrong kind is rejected."""
    from pi_host.hookspecs._reducers import ResultRejected

    try:
        step = reducer.step(state, result, plugin)
    except ResultRejected as rejected:
        return fail(reducer, state, plugin, str(rejected), rejected=str(rejected))
    return Settled(step.state, step.stop)


def fail(
    reducer: Reducer[Any, Any], state: Any, plugin: str, message: str, *, rejected: str | None = None
) -> Settled:
    """The state after an implementation failed: unchanged, unless the reducer fails closed."""
    if reducer.fail_closed:
        step = reducer.fail(state, plugin, message)
        return Settled(step.state, step.stop, rejected)
    return Settled(state, False, rejected)


def describe(exc: BaseException) -> str:
    """``ValueError: boom``, how a failure is reported."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def run_sync(
    hook: Hook,
    kwargs: Mapping[str, Any],
    *,
    on_failure: Callable[[Impl, BaseException], None],
    on_success: Callable[[Impl], None] | None = None,
    skip: Callable[[Impl], bool] | None = None,
    extra: Callable[[str], Mapping[str, Any]] | None = None,
    guard: HookGuard | None = None,
) -> Any:
    """The synchronous driver: call ``hook``'s implementations in order; returns the combined result.

    :param on_failure: told of each implementation that raised, returned an awaitable (a
        synchronous hook implemented with ``async def``) or returned what the reducer
        rejects; the caller applies the spec's policy (the plugin fails to load).
    :param on_success: told of each implementation that returned acceptably.
    :param skip: implementations to leave out (another plugin's, during a replay).
    :param extra: more arguments for each plugin, by name.
    """
    reducer = hook.reducer
    state = None if reducer is None else reducer.start(kwargs)
    for impl in hook.impls:
        if skip is not None and skip(impl):
            continue
        args = kwargs if extra is None else {**kwargs, **extra(impl.plugin)}
        try:
            result = call_blocking(guard, hook, impl, args)
            if result is not None and inspect.isawaitable(result):
                if inspect.iscoroutine(result):
                    result.close()
                raise HookError(
                    f"{hook.name} is synchronous: implement it with def, not async def",
                    hook=hook.name,
                    plugin=impl.plugin,
                )
        except BaseException as caught:
            exc = contain(caught, guard, None)
            on_failure(impl, exc)
            if reducer is None:
                continue
            settled = fail(reducer, state, impl.plugin, describe(exc))
        else:
            if result is None:
                if on_success is not None:
                    on_success(impl)
                continue
            if reducer is None:
                reducer = reducer_of(hook.name, hook.contract)
                state = reducer.start(kwargs)
            settled = settle(reducer, state, impl.plugin, result)
            if settled.rejected is not None:
                on_failure(impl, HookError(settled.rejected, hook=hook.name, plugin=impl.plugin))
            elif on_success is not None:
                on_success(impl)
        state = settled.state
        if settled.stop:
            break
    return None if reducer is None else reducer.finish(state)
