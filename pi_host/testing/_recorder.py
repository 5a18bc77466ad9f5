"""The hook recorder: every lifecycle dispatch, each implementation's arguments, result or error.

pluggy's hook-call monitoring does not see lifecycle hooks (pi-host's dispatcher calls the
implementations itself, to await them), so the recorder sits in the dispatcher:
:class:`RecordingDispatcher` wraps each implementation when the dispatcher prepares a hook,
and wraps each dispatch to note its arguments and combined result.
"""

from __future__ import annotations

import contextvars
import fnmatch
import functools
import inspect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TextIO

from pi_host.plugin import Dispatcher, ExtensionError, PluginManager

if TYPE_CHECKING:
    from pi_host.plugin._loop import Hook as _Hook

__all__ = ["HookCall", "HookRecorder", "ImplCall", "RecordingDispatcher"]

_UNSET: Any = object()


@dataclass(eq=False)
class ImplCall:
    """One implementation's part in a dispatch.

    :ivar plugin: the plugin's registered name.
    :ivar hook: the hook name.
    :ivar args: the arguments it declared and received.
    :ivar result: what it returned (``None`` too); unset while it runs or when it raised.
    :ivar error: the exception it raised, or ``None``.
    """

    plugin: str
    hook: str
    args: Mapping[str, Any]
    result: Any = None
    error: BaseException | None = None

    @property
    def raised(self) -> bool:
        return self.error is not None


@dataclass(eq=False)
class HookCall:
    """One dispatch of a lifecycle hook.

    Arguments are also attributes: ``call.tool_name`` is ``call.kwargs["tool_name"]``.

    :ivar hook: the hook name.
    :ivar kwargs: every argument of the dispatch.
    :ivar impls: the implementations that were reached, in call order.
    :ivar result: the combined result the runtime received (``None`` while running).
    :ivar finished: whether the dispatch completed (it may have been cancelled).
    """

    hook: str
    kwargs: Mapping[str, Any]
    impls: list[ImplCall] = field(default_factory=list)
    result: Any = None
    finished: bool = False

    def __getattr__(self, name: str) -> Any:
        kwargs = self.__dict__.get("kwargs", {})
        if name in kwargs:
            return kwargs[name]
        raise AttributeError(f"{self.hook} call has no argument {name!r} (it has: {', '.join(kwargs)})")

    def impl(self, plugin: str) -> ImplCall:
        """The part ``plugin`` played.

        :raises LookupError: if ``plugin`` was not reached in this dispatch.
        """
        for impl in self.impls:
            if impl.plugin == plugin:
                return impl
        reached = ", ".join(impl.plugin for impl in self.impls) or "none"
        raise LookupError(f"plugin {plugin!r} was not reached in this {self.hook} call (reached: {reached})")


_current: contextvars.ContextVar[HookCall | None] = contextvars.ContextVar(
    "pi_host_testing_call", default=None
)


class HookRecorder:
    """Records the lifecycle hooks a host dispatches (pytester's ``HookRecorder`` for pi-host).

    Only hooks that reach at least one implementation are dispatched, so a hook nobody
    implements is never recorded; the plugin under test implementing a hook makes it visible.
    Registration and setup hooks (``pi_register_*``, ``pi_configure``) are plain pluggy calls
    and not recorded.
    """

    def __init__(self) -> None:
        self.calls: list[HookCall] = []
        self.errors: list[ExtensionError] = []

    # -- queries -----------------------------------------------------------------------------

    def names(self) -> list[str]:
        """The hooks dispatched so far, in the order they started."""
        return [call.hook for call in self.calls]

    def getcalls(self, pattern: str) -> list[HookCall]:
        """The dispatches of the hooks matching ``pattern`` (a name, or a glob: ``pi_tool_*``)."""
        return [call for call in self.calls if fnmatch.fnmatchcase(call.hook, pattern)]

    def getcall(self, hook: str) -> HookCall:
        """The only dispatch of ``hook``.

        :raises AssertionError: if it was dispatched zero times or more than once.
        """
        calls = self.getcalls(hook)
        assert len(calls) == 1, f"expected exactly one {hook} call, got {len(calls)}"
        return calls[0]

    def impl_calls(self, *, hook: str = "*", plugin: str | None = None) -> list[ImplCall]:
        """Every implementation call, optionally only for one hook pattern or plugin."""
        return [
            impl
            for call in self.getcalls(hook)
            for impl in call.impls
            if plugin is None or impl.plugin == plugin
        ]

    def raised(self) -> list[ImplCall]:
        """The implementation calls that raised, in order."""
        return [impl for call in self.calls for impl in call.impls if impl.error is not None]

    # -- assertions --------------------------------------------------------------------------

    def assert_called(self, hook: str, *, times: int | None = None) -> list[HookCall]:
        """Assert ``hook`` was dispatched (exactly ``times`` times, when given); return the calls."""
        calls = self.getcalls(hook)
        if times is None:
            assert calls, f"{hook} was never dispatched; dispatched: {self._summary()}"
        else:
            assert len(calls) == times, f"{hook} was dispatched {len(calls)} time(s), expected {times}"
        return calls

    def assert_not_called(self, hook: str) -> None:
        calls = self.getcalls(hook)
        assert not calls, f"{hook} was dispatched {len(calls)} time(s), expected none"

    def assert_order(self, *hooks: str) -> None:
        """Assert the hooks were dispatched in this order (others may come in between)."""
        names = self.names()
        position = 0
        for hook in hooks:
            try:
                position = names.index(hook, position) + 1
            except ValueError:
                raise AssertionError(
                    f"{hook} was not dispatched after {hooks[: hooks.index(hook)] or 'the start'}; "
                    f"dispatched: {self._summary()}"
                ) from None

    def assert_no_errors(self) -> None:
        """Assert no implementation raised or returned something its hook does not accept."""
        assert not self.errors, "plugin errors:\n" + "\n".join(
            f"  {error.plugin} in {error.hook}: {error.message}" for error in self.errors
        )

    def clear(self) -> None:
        """Forget everything recorded so far."""
        self.calls.clear()
        self.errors.clear()

    def _summary(self) -> str:
        names = self.names()
        return ", ".join(names[-30:]) if names else "nothing"

    def __iter__(self) -> Iterator[HookCall]:
        return iter(self.calls)

    def __len__(self) -> int:
        return len(self.calls)

    # -- recording (used by RecordingDispatcher) -------------------------------------------------

    def _begin(self, hook: str, kwargs: Mapping[str, Any]) -> HookCall:
        call = HookCall(hook, MappingProxyType(dict(kwargs)))
        self.calls.append(call)
        return call

    def _on_error(self, error: ExtensionError) -> None:
        self.errors.append(error)

    def _wrap(
        self, hook: str, plugin: str, function: Callable[..., Any], argnames: tuple[str, ...], is_async: bool
    ) -> Callable[..., Any]:
        def start(args: tuple[Any, ...]) -> ImplCall:
            record = ImplCall(plugin, hook, MappingProxyType(dict(zip(argnames, args, strict=False))))
            current = _current.get()
            if current is not None:
                current.impls.append(record)
            return record

        async def finish(record: ImplCall, awaitable: Any) -> Any:
            try:
                result = await awaitable
            except Exception as exc:
                record.error = exc
                raise
            record.result = result
            return result

        if is_async:

            @functools.wraps(function)
            async def recorded_async(*args: Any) -> Any:
                return await finish(start(args), function(*args))

            return recorded_async

        @functools.wraps(function)
        def recorded(*args: Any) -> Any:
            record = start(args)
            try:
                result = function(*args)
            except Exception as exc:
                record.error = exc
                raise
            if result is not None and inspect.isawaitable(result):
                return finish(record, result)
            record.result = result
            return result

        return recorded


class RecordingDispatcher(Dispatcher):
    """A :class:`~pi_host.Dispatcher` that reports every dispatch to a :class:`HookRecorder`."""

    def __init__(
        self, pm: PluginManager, recorder: HookRecorder, *, trace: bool | TextIO | None = False
    ) -> None:
        super().__init__(pm, trace=trace)
        self.recorder = recorder
        self.add_error_listener(recorder._on_error)

    def _prepare(self, name: str) -> _Hook:
        hook = super()._prepare(name)
        impls = tuple(
            impl._replace(
                function=self.recorder._wrap(name, impl.plugin, impl.function, impl.argnames, impl.is_async),
            )
            for impl in hook.impls
        )
        wrapped = hook._replace(impls=impls)
        self._hooks[name] = wrapped
        return wrapped

    async def _run(self, hook: _Hook, kwargs: Mapping[str, Any]) -> Any:
        call = self.recorder._begin(hook.name, kwargs)
        token = _current.set(call)
        try:
            result = await super()._run(hook, kwargs)
        finally:
            _current.reset(token)
        call.result = result
        call.finished = True
        return result
