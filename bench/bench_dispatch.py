"""Hook dispatch overhead: microseconds per notification with 0, 1 and 20 no-op plugins.

Run with ``uv run python bench/bench_dispatch.py``. Each figure is the median over several
rounds of CPU time per dispatch of ``pi_message_update`` (the hook that fires once per streamed
delta), through the session's event bridge (``EventHooks.dispatch(MessageUpdateEvent(...))``, the
runtime's path) and through the generic ``await dispatcher.call("pi_message_update", ...)``,
with:

- no implementation (the hot path: nobody listens to streaming deltas);
- 1 and 20 no-op plugins implemented as ``def``;
- 1 and 20 no-op plugins implemented as ``async def``.

For comparison it also times a plain pluggy call of the same hook (``pm.hook.pi_message_update``),
which does not await anything and so cannot run ``async def`` implementations.
"""

from __future__ import annotations

import argparse
import statistics
import time
import types
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from pi_host.hookspecs import hookimpl
from pi_host.messages import AssistantMessage, MessageUpdateEvent, StartEvent
from pi_host.plugin import Dispatcher, PluginManager
from pi_host.runtime._event_hooks import EventHooks

MESSAGE = AssistantMessage()
EVENT = StartEvent(partial=MESSAGE)
UPDATE = MessageUpdateEvent(message=MESSAGE, assistant_message_event=EVENT)
CTX: Any = types.SimpleNamespace()


def _sync_plugin() -> object:
    @hookimpl
    def pi_message_update(message: Any) -> None:
        return None

    return types.SimpleNamespace(pi_message_update=pi_message_update)


def _async_plugin() -> object:
    @hookimpl
    async def pi_message_update(message: Any) -> None:
        return None

    return types.SimpleNamespace(pi_message_update=pi_message_update)


def _setup(count: int, kind: str) -> tuple[PluginManager, Dispatcher]:
    pm = PluginManager()
    for index in range(count):
        pm.register(_sync_plugin() if kind == "sync" else _async_plugin(), name=f"noop{index}")
    return pm, Dispatcher(pm, trace=False)


def _time(dispatch: Callable[[], Awaitable[None]], calls: int, rounds: int) -> float:
    async def one_round() -> float:
        start = time.process_time()
        for _ in range(calls):
            await dispatch()
        return (time.process_time() - start) / calls

    async def all_rounds() -> list[float]:
        await one_round()  # warm caches
        return [await one_round() for _ in range(rounds)]

    return statistics.median(anyio.run(all_rounds)) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000, help="dispatches per round")
    parser.add_argument("--rounds", type=int, default=7)
    options = parser.parse_args()

    print(f"{'implementations':<24}{'bridge µs':>12}{'call() µs':>12}{'pluggy µs':>12}")
    for count, kind in ((0, "sync"), (1, "sync"), (20, "sync"), (1, "async"), (20, "async")):
        pm, dispatcher = _setup(count, kind)

        events = EventHooks(dispatcher, {"ctx": lambda: CTX})

        async def bridge(events: EventHooks = events) -> None:
            pending = events.dispatch(UPDATE)
            if pending is not None:
                await pending

        async def generic(dispatcher: Dispatcher = dispatcher) -> None:
            await dispatcher.call(
                "pi_message_update", message=MESSAGE, assistant_message_event=EVENT, ctx=CTX
            )

        async def plain(pm: PluginManager = pm) -> None:
            pm.hook.pi_message_update(message=MESSAGE, assistant_message_event=EVENT, ctx=CTX)

        calls = options.calls if count < 20 else max(options.calls // 10, 1000)
        label = "none" if count == 0 else f"{count} {kind} no-op"
        pluggy_figure = "n/a" if kind == "async" and count else f"{_time(plain, calls, options.rounds):.2f}"
        print(
            f"{label:<24}{_time(bridge, calls, options.rounds):>12.2f}"
            f"{_time(generic, calls, options.rounds):>12.2f}{pluggy_figure:>12}"
        )


if __name__ == "__main__":
    main()
