"""Agent events reach their hooks through one generic bridge (issue #14 point 4).

An event of type ``<kind>`` goes to ``pi_<kind>`` with the arguments its hookspec names, taken
from the event's fields or supplied by the session; nothing in the session or the dispatcher
is written per event, and the dispatcher has no method per event (they are dispatched with
``Dispatcher.call``). The typed methods of the other hooks are checked against the hookspecs
here, so a façade method cannot drift from the hook it calls.
"""

from __future__ import annotations

import importlib
import inspect
import sys
import types
import typing
from pathlib import Path
from typing import Any, Literal

import pytest

from pi_host import hookimpl
from pi_host.errors import HookError
from pi_host.hookspecs import Strategy, hookspec, iter_hookspecs
from pi_host.messages import (
    AgentEvent,
    AssistantMessage,
    MessageUpdateEvent,
    TextContent,
    TextDeltaEvent,
    ToolExecutionEndEvent,
    ToolResult,
    TurnStartEvent,
    WireModel,
)
from pi_host.plugin import Dispatcher, PluginManager
from pi_host.runtime._event_hooks import EventHooks, hook_name_for

AGENT_EVENTS: tuple[type[WireModel], ...] = typing.get_args(AgentEvent)
SUPPLIED = {"ctx": lambda: "the ctx", "turn_index": lambda: 7, "timestamp": lambda: 123}


async def dispatched(events: EventHooks, event: WireModel) -> Any:
    call = events.dispatch(event)
    return None if call is None else await call


def bridge(*plugins: object) -> tuple[EventHooks, PluginManager]:
    pm = PluginManager()
    for plugin in plugins:
        pm.register(plugin)
    return EventHooks(Dispatcher(pm, trace=False), SUPPLIED), pm


def test_every_agent_event_has_a_hook_whose_arguments_it_can_fill() -> None:
    events, _ = bridge()
    assert len(AGENT_EVENTS) == 10
    for event_type in AGENT_EVENTS:
        binding = events.binding(event_type)
        assert binding is not None, f"no hookspec {hook_name_for(event_type)} for {event_type.__name__}"
        assert binding.hook == f"pi_{event_type.model_fields['type'].default}"
        declared = {name for name in event_type.model_fields}
        assert set(binding.fields) <= declared
        assert {name for name, _ in binding.supplied} <= SUPPLIED.keys()


async def test_hooks_get_the_event_fields_and_the_supplied_values() -> None:
    seen: list[tuple[Any, ...]] = []

    class Plugin:
        @hookimpl
        def pi_turn_start(self, turn_index: int, timestamp: int, ctx: Any) -> None:
            seen.append(("turn_start", turn_index, timestamp, ctx))

        @hookimpl
        def pi_tool_execution_end(self, tool_name: str, result: Any, is_error: bool) -> None:
            seen.append(("tool_execution_end", tool_name, result.content[0].text, is_error))

        @hookimpl
        def pi_message_update(self, message: Any, assistant_message_event: Any) -> None:
            seen.append(("message_update", message.content[0].text, assistant_message_event.delta))

    events, _ = bridge(Plugin())
    partial = AssistantMessage(content=[TextContent(text="he")], api="a", provider="p", model="m")
    await dispatched(events, TurnStartEvent())
    await dispatched(
        events,
        ToolExecutionEndEvent(
            tool_call_id="t1", tool_name="read", result=ToolResult.text("ok"), is_error=False
        ),
    )
    # Built without validation on the hot path: read like any other event.
    await dispatched(
        events, MessageUpdateEvent.of(partial, TextDeltaEvent(content_index=0, delta="e", partial=partial))
    )
    assert seen == [
        ("turn_start", 7, 123, "the ctx"),
        ("tool_execution_end", "read", "ok", False),
        ("message_update", "he", "e"),
    ]


def test_without_an_implementation_nothing_is_computed_or_awaited() -> None:
    calls: list[str] = []
    supplied = {name: (lambda name=name: calls.append(name)) for name in ("ctx", "turn_index", "timestamp")}
    events = EventHooks(Dispatcher(PluginManager(), trace=False), supplied)
    assert events.dispatch(TurnStartEvent()) is None
    assert calls == []


# -- a new event: one module declares it and its hook; the bridge needs nothing --------------------

NEW_EVENT_MODULE = '''
from typing import Literal

from pi_host.hookspecs import Strategy, hookspec
from pi_host.messages import WireModel


class CheckpointEvent(WireModel):
    """A new pi agent event (as it would be added to pi_host/messages/_events.py)."""

    type: Literal["checkpoint"] = "checkpoint"
    label: str


@hookspec(strategy=Strategy.NOTIFY)
def pi_checkpoint(label: str, turn_index: int, ctx: object) -> None:
    """Its hook (as it would be added to a pi_host/hookspecs module)."""
'''


async def test_a_new_event_and_its_hookspec_need_no_bridge_session_or_dispatcher_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "new_pi_event.py").write_text(NEW_EVENT_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "new_pi_event", raising=False)
    module = importlib.import_module("new_pi_event")
    seen: list[tuple[str, int]] = []

    class Plugin:
        @hookimpl
        def pi_checkpoint(self, label: str, turn_index: int) -> None:
            seen.append((label, turn_index))

    events, pm = bridge()
    assert events.binding(module.CheckpointEvent) is None  # no hookspec yet: the event has no hook
    pm.add_hookspecs(module)
    pm.register(Plugin())
    await dispatched(events, module.CheckpointEvent(label="saved"))
    assert seen == [("saved", 7)]
    assert module.CheckpointEvent(label="saved").to_json() == '{"type":"checkpoint","label":"saved"}'


def test_a_hook_argument_the_event_cannot_fill_is_an_error_naming_both() -> None:
    class OddEvent(WireModel):
        type: Literal["odd"] = "odd"

    specs = types.ModuleType("odd_specs")

    @hookspec(strategy=Strategy.NOTIFY)
    def pi_odd(colour: str, ctx: object) -> None:
        """An event hook that asks for what nobody provides."""

    specs.pi_odd = pi_odd  # type: ignore[attr-defined]
    events, pm = bridge()
    pm.add_hookspecs(specs)
    with pytest.raises(HookError, match=r"pi_odd takes 'colour', which is neither a field of OddEvent"):
        events.binding(OddEvent)


# -- the typed façade, checked against the hookspecs ------------------------------------------------


def _parameters(function: Any) -> list[tuple[str, str]]:
    """Names and annotations (as written: both modules postpone annotations) but ``self``."""
    return [
        (name, " ".join(str(parameter.annotation).split()))
        for name, parameter in inspect.signature(function).parameters.items()
        if name != "self"
    ]


def test_every_typed_dispatcher_method_takes_exactly_its_hooks_arguments() -> None:
    checked = []
    for _, spec, contract in iter_hookspecs():
        method = getattr(Dispatcher, spec.__name__.removeprefix("pi_"), None)
        if method is None or not contract.strategy.is_async:
            continue
        kinds = {p.kind for name, p in inspect.signature(method).parameters.items() if name != "self"}
        assert kinds == {inspect.Parameter.KEYWORD_ONLY}, f"Dispatcher.{method.__name__} must be keyword-only"
        assert _parameters(method) == _parameters(spec), (
            f"Dispatcher.{method.__name__} differs from {spec.__name__}"
        )
        checked.append(spec.__name__)
    assert len(checked) >= 20


def test_no_agent_event_has_a_dispatcher_method_of_its_own() -> None:
    # Regression (#14): ten typed event methods outlived the bridge, a second way to
    # dispatch an event that nothing in the runtime used.
    per_event = [
        hook_name_for(event).removeprefix("pi_")
        for event in AGENT_EVENTS
        if hasattr(Dispatcher, hook_name_for(event).removeprefix("pi_"))
    ]
    assert per_event == []
