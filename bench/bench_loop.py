"""Agent-loop overhead: microseconds per turn and message_update events per second.

Run with ``uv run python bench/bench_loop.py``. Figures are the median of several rounds, in
CPU time of this process (steadier than wall time on a shared machine; for this CPU-bound code
the two agree on an idle one).

- *turn*: one assistant reply carrying one tool call, the (trivial) tool, its result. Measured
  with the faux provider at zero delay (which streams and yields to the event loop per chunk)
  and with a minimal stream function that yields only the final event, which isolates the host.
- *message_update/s*: deltas pushed through the loop with no listeners, from a stream function
  that yields pre-built events (the loop's own cost) and from the faux provider (provider and
  loop together).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import anyio
from pydantic import BaseModel

from pi_host.agent import Agent, AgentContext, AgentLoopConfig, Tool, ToolCallContext, run_agent_loop
from pi_host.messages import (
    AgentEvent,
    AssistantMessage,
    AssistantMessageEvent,
    DoneEvent,
    StartEvent,
    TextContent,
    TextDeltaEvent,
    ToolCall,
    ToolResult,
    UserMessage,
)
from pi_host.providers import LlmContext, Model, StreamOptions
from pi_host.providers._faux import FauxProvider, faux_assistant_message, faux_tool_call


class Nothing(BaseModel):
    pass


async def noop(params: Nothing, ctx: ToolCallContext) -> ToolResult:
    return ToolResult.text("ok")


NOOP = Tool(name="noop", description="Does nothing.", parameters=Nothing, execute=noop)
MODEL = Model(id="bench", api="bench", provider="bench")


async def discard(event: AgentEvent) -> None:
    pass


def median_of(rounds: int, measure: Callable[[], Coroutine[Any, Any, float]]) -> float:
    async def run() -> list[float]:
        return [await measure() for _ in range(rounds)]

    return statistics.median(anyio.run(run))


# -- per-turn overhead ----------------------------------------------------------------------


def turns_with_faux(turns: int) -> Callable[[], Coroutine[Any, Any, float]]:
    async def measure() -> float:
        replies = [
            faux_assistant_message([faux_tool_call("noop", {}, id=f"c{i}")], stop_reason="toolUse")
            for i in range(turns - 1)
        ]
        faux = FauxProvider([*replies, faux_assistant_message("done")])
        agent = Agent(stream_fn=faux.stream, model=faux.model, tools=[NOOP])
        start = time.process_time()
        await agent.prompt("go")
        elapsed = time.process_time() - start
        assert faux.call_count == turns
        return elapsed / turns * 1e6

    return measure


def turns_with_minimal_stream(turns: int) -> Callable[[], Coroutine[Any, Any, float]]:
    tool_reply = AssistantMessage(content=[ToolCall(id="c", name="noop")], stop_reason="toolUse")
    final_reply = AssistantMessage(content=[TextContent(text="done")])

    async def measure() -> float:
        count = 0

        async def events(message: AssistantMessage) -> AsyncIterator[AssistantMessageEvent]:
            yield DoneEvent(reason=message.stop_reason, message=message)  # type: ignore[arg-type]

        def stream(model: Model, context: LlmContext, options: StreamOptions) -> AsyncIterator[Any]:
            nonlocal count
            count += 1
            return events(tool_reply if count < turns else final_reply)

        agent = Agent(stream_fn=stream, model=MODEL, tools=[NOOP])
        start = time.process_time()
        await agent.prompt("go")
        return (time.process_time() - start) / turns * 1e6

    return measure


# -- message_update throughput --------------------------------------------------------------


def updates_prebuilt(deltas: int, through_agent: bool) -> Callable[[], Coroutine[Any, Any, float]]:
    partial = AssistantMessage(content=[TextContent(text="x")])
    prebuilt = [TextDeltaEvent(content_index=0, delta="x", partial=partial) for _ in range(deltas)]
    final = AssistantMessage(content=[TextContent(text="x" * deltas)])

    async def events() -> AsyncIterator[AssistantMessageEvent]:
        yield StartEvent(partial=partial)
        for event in prebuilt:
            yield event
        yield DoneEvent(reason="stop", message=final)

    def stream(model: Model, context: LlmContext, options: StreamOptions) -> AsyncIterator[Any]:
        return events()

    async def measure() -> float:
        start = time.process_time()
        if through_agent:
            await Agent(stream_fn=stream, model=MODEL).prompt("go")
        else:
            config = AgentLoopConfig(model=MODEL, stream_fn=stream)
            await run_agent_loop([UserMessage(content="go")], AgentContext(), config, discard)
        return deltas / (time.process_time() - start)

    return measure


def updates_faux(deltas: int, through_agent: bool) -> Callable[[], Coroutine[Any, Any, float]]:
    async def measure() -> float:
        # token_size (1, 1): one 4-character chunk per delta.
        faux = FauxProvider([faux_assistant_message("abcd" * deltas)], token_size=(1, 1))
        start = time.process_time()
        if through_agent:
            await Agent(stream_fn=faux.stream, model=faux.model).prompt("go")
        else:
            config = AgentLoopConfig(model=faux.model, stream_fn=faux.stream)
            await run_agent_loop([UserMessage(content="go")], AgentContext(), config, discard)
        return deltas / (time.process_time() - start)

    return measure


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--turns", type=int, default=20, help="turns per run (the transcript grows with each)"
    )
    parser.add_argument("--deltas", type=int, default=20_000, help="message_update events per run")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()

    rounds = args.rounds
    rows = [
        ("per turn, minimal stream fn", median_of(rounds, turns_with_minimal_stream(args.turns)), "us/turn"),
        ("per turn, faux provider", median_of(rounds, turns_with_faux(args.turns)), "us/turn"),
        (
            "message_update, pre-built events, loop",
            median_of(rounds, updates_prebuilt(args.deltas, False)),
            "/s",
        ),
        (
            "message_update, pre-built events, Agent",
            median_of(rounds, updates_prebuilt(args.deltas, True)),
            "/s",
        ),
        ("message_update, faux provider, loop", median_of(rounds, updates_faux(args.deltas, False)), "/s"),
        ("message_update, faux provider, Agent", median_of(rounds, updates_faux(args.deltas, True)), "/s"),
    ]
    print(f"{args.turns} turns a run (one no-op tool call each), {args.deltas} deltas a run, no listeners;")
    print(f"CPU time of this process, median of {rounds} rounds")
    for label, value, unit in rows:
        print(f"  {label:40s} {value:12,.0f} {unit}")


if __name__ == "__main__":
    main()
