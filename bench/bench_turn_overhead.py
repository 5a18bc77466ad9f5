"""Host overhead per turn through the whole runtime, with 0 and 20 no-op plugins.

Each prompt is one turn on the faux provider with a one-word reply, so provider and tool time
are near zero and what remains is pi-host: the prompt pipeline, the loop, event dispatch to
every plugin hook, persistence bookkeeping (in-memory session).

    uv run python bench/bench_turn_overhead.py [--turns 300]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from typing import Any

import anyio

from pi_host import hookimpl
from pi_host.messages import AssistantMessage, TextContent
from pi_host.runtime import SessionOptions, create_session


class NoOpPlugin:
    """Implements the per-turn lifecycle hooks and does nothing."""

    @hookimpl
    def pi_agent_start(self) -> None: ...

    @hookimpl
    def pi_turn_start(self) -> None: ...

    @hookimpl
    def pi_message_start(self) -> None: ...

    @hookimpl
    def pi_message_update(self) -> None: ...

    @hookimpl
    def pi_message_end(self) -> None: ...

    @hookimpl
    def pi_turn_end(self) -> None: ...

    @hookimpl
    def pi_agent_end(self) -> None: ...

    @hookimpl
    def pi_context(self) -> None: ...

    @hookimpl
    def pi_before_agent_start(self) -> None: ...


async def measure(plugins: int, turns: int) -> list[float]:
    with tempfile.TemporaryDirectory() as agent_dir:
        os.environ["PI_HOST_PLUGINS"] = ""  # essentials only: the faux provider
        session = await create_session(
            SessionOptions(
                agent_dir=agent_dir,
                provider="faux",
                no_session=True,
                no_tools=True,
                extra_plugins=[NoOpPlugin() for _ in range(plugins)],
            )
        )
        from pi_host.builtins.faux import _scripted

        scripted = _scripted()
        reply = AssistantMessage(
            content=[TextContent(text="ok")], api="faux", provider="faux", model="faux-1"
        )
        scripted.set_responses([reply] * (turns + 20))
        times = []
        async with anyio.create_task_group() as tg:
            session.bind_task_group(tg)
            for i in range(turns + 20):
                # Each turn starts from an empty transcript: the figure is the cost of a turn,
                # not of a conversation growing over hundreds of turns.
                session.agent.state.messages = []
                start = time.perf_counter()
                await session.prompt(f"turn {i}")
                if i >= 20:  # warm-up
                    times.append(time.perf_counter() - start)
            tg.cancel_scope.cancel()
        return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=300)
    args = parser.parse_args()
    results: dict[int, Any] = {}
    for plugins in (0, 20):
        times = anyio.run(measure, plugins, args.turns)
        results[plugins] = times
        print(
            f"{plugins:>2} no-op plugins: median {statistics.median(times) * 1e6:8.0f} µs/turn, "
            f"p90 {sorted(times)[int(len(times) * 0.9)] * 1e6:8.0f} µs/turn ({len(times)} turns)"
        )


if __name__ == "__main__":
    main()
