"""The async dispatcher over real plugin managers: order, arguments, strategies, errors, tracing."""

from __future__ import annotations

import functools
import inspect
import io
import logging
import types
import typing
from collections.abc import Callable
from typing import Any, cast

import anyio
import pytest

from pi_host.errors import HookError, PluginValidationError
from pi_host.hookspecs import (
    BeforeAgentStartResult,
    CompactionResult,
    InputHandled,
    InputTransform,
    Strategy,
    ToolCallBlock,
    ToolCallRewrite,
    ToolResultPatch,
    hookimpl,
    hookspec,
    iter_hookspecs,
)
from pi_host.messages import AgentEvent, AssistantMessage, CustomMessage, TextContent, UserMessage
from pi_host.plugin import Dispatcher, ExtensionError, PluginManager

CTX: Any = types.SimpleNamespace(cwd="/project")


def plugin(**impls: Callable[..., Any]) -> types.SimpleNamespace:
    """A plugin object whose attributes are the given (already @hookimpl-marked) functions."""
    return types.SimpleNamespace(**impls)


def host(*named: tuple[str, object]) -> tuple[PluginManager, Dispatcher, list[ExtensionError]]:
    pm = PluginManager()
    for name, obj in named:
        pm.register(obj, name=name)
    errors: list[ExtensionError] = []
    return pm, Dispatcher(pm, on_error=errors.append, trace=False), errors


def recorder(log: list[str], label: str, result: Any = None, *, is_async: bool = False, **opts: Any) -> Any:
    if is_async:

        async def impl_async(ctx: Any) -> Any:
            await anyio.lowlevel.checkpoint()
            log.append(label)
            return result

        return hookimpl(**opts)(impl_async)

    def impl(ctx: Any) -> Any:
        log.append(label)
        return result

    return hookimpl(**opts)(impl)


# -- order --------------------------------------------------------------------------------------


async def test_last_registered_runs_first_with_sync_and_async_mixed() -> None:
    log: list[str] = []
    _, dispatcher, errors = host(
        ("a", plugin(pi_agent_start=recorder(log, "a"))),
        ("b", plugin(pi_agent_start=recorder(log, "b", is_async=True))),
        ("c", plugin(pi_agent_start=recorder(log, "c"))),
    )
    await dispatcher.call("pi_agent_start", ctx=CTX)
    assert log == ["c", "b", "a"]
    assert dispatcher.implementations("pi_agent_start") == ["c", "b", "a"]
    assert errors == []


async def test_tryfirst_and_trylast_override_registration_order() -> None:
    log: list[str] = []
    _, dispatcher, _ = host(
        ("first", plugin(pi_agent_start=recorder(log, "first", tryfirst=True))),
        ("plain1", plugin(pi_agent_start=recorder(log, "plain1", is_async=True))),
        ("last", plugin(pi_agent_start=recorder(log, "last", trylast=True, is_async=True))),
        ("plain2", plugin(pi_agent_start=recorder(log, "plain2"))),
    )
    await dispatcher.call("pi_agent_start", ctx=CTX)
    assert log == ["first", "plain2", "plain1", "last"]


async def test_async_implementations_are_awaited_one_at_a_time() -> None:
    running = 0
    peak = 0

    def make() -> Any:
        @hookimpl
        async def pi_agent_start() -> None:
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            await anyio.sleep(0)
            running -= 1

        return pi_agent_start

    _, dispatcher, _ = host(*[(f"p{i}", plugin(pi_agent_start=make())) for i in range(5)])
    await dispatcher.call("pi_agent_start", ctx=CTX)
    assert peak == 1


async def test_a_sync_implementation_returning_an_awaitable_is_awaited() -> None:
    async def decide(tool_name: str) -> ToolCallBlock:
        return ToolCallBlock(reason=f"no {tool_name}")

    @hookimpl
    def pi_tool_call(tool_name: str) -> Any:
        return decide(tool_name)

    _, dispatcher, errors = host(("p", plugin(pi_tool_call=pi_tool_call)))
    result = await dispatcher.tool_call(tool_call_id="1", tool_name="bash", input={}, ctx=CTX)
    assert result == ToolCallBlock(reason="no bash")
    assert errors == []


# -- arguments -------------------------------------------------------------------------------------


async def test_each_implementation_receives_only_the_arguments_it_declares() -> None:
    seen: dict[str, tuple[Any, ...]] = {}

    @hookimpl
    def nothing() -> None:
        seen["nothing"] = ()

    @hookimpl
    def name_only(tool_name: str) -> None:
        seen["name_only"] = (tool_name,)

    @hookimpl
    async def everything(tool_call_id: str, tool_name: str, args: Any, ctx: Any) -> None:
        seen["everything"] = (tool_call_id, tool_name, args, ctx)

    _, dispatcher, errors = host(
        ("a", plugin(pi_tool_execution_start=nothing)),
        ("b", plugin(pi_tool_execution_start=name_only)),
        ("c", plugin(pi_tool_execution_start=everything)),
    )
    await dispatcher.call(
        "pi_tool_execution_start", tool_call_id="t1", tool_name="read", args={"path": "x"}, ctx=CTX
    )
    assert seen == {"nothing": (), "name_only": ("read",), "everything": ("t1", "read", {"path": "x"}, CTX)}
    assert errors == []


async def test_a_call_missing_an_argument_is_the_callers_bug() -> None:
    _, dispatcher, _ = host(("p", plugin(pi_agent_start=recorder([], "p"))))
    with pytest.raises(HookError, match="pi_tool_call must be called with ctx, input"):
        await dispatcher.call("pi_tool_call", tool_call_id="1", tool_name="x")


async def test_implementations_declaring_unknown_arguments_are_refused_at_registration() -> None:
    @hookimpl
    def pi_agent_start(ctx: Any, bogus: Any) -> None: ...

    pm = PluginManager()
    with pytest.raises(PluginValidationError, match="bogus"):
        pm.register(plugin(pi_agent_start=pi_agent_start), name="bad")
    assert pm.get_plugin("bad") is None


# -- strategies end to end ----------------------------------------------------------------------


async def test_pipeline_until_input() -> None:
    @hookimpl
    def upper(text: str) -> InputTransform:
        return InputTransform(text=text.upper())

    @hookimpl
    async def exclaim(text: str) -> InputTransform:
        return InputTransform(text=text + "!")

    @hookimpl
    def handle(text: str) -> InputHandled | None:
        return InputHandled() if text == "STOP!" else None

    _, dispatcher, _ = host(
        ("handle", plugin(pi_input=handle)),
        ("exclaim", plugin(pi_input=exclaim)),
        ("upper", plugin(pi_input=upper)),
    )
    assert await dispatcher.input(text="hi", ctx=CTX) == InputTransform(text="HI!", images=())
    assert await dispatcher.input(text="stop", ctx=CTX) == InputHandled()


async def test_input_with_no_plugins_is_unchanged() -> None:
    _, dispatcher, _ = host()
    assert await dispatcher.input(text="hi", ctx=CTX) is None


async def test_collect_before_agent_start() -> None:
    note = CustomMessage(custom_type="note", content="remember", display=False)

    @hookimpl
    def add_note() -> BeforeAgentStartResult:
        return BeforeAgentStartResult(message=note)

    @hookimpl
    async def extend(system_prompt: str) -> BeforeAgentStartResult:
        return BeforeAgentStartResult(system_prompt=system_prompt + " Be brief.")

    _, dispatcher, _ = host(
        ("note", plugin(pi_before_agent_start=add_note)), ("extend", plugin(pi_before_agent_start=extend))
    )
    outcome = await dispatcher.before_agent_start(prompt="hi", system_prompt="Base.", ctx=CTX)
    assert outcome.messages == (note,)
    assert outcome.system_prompt == "Base. Be brief."


async def test_pipeline_context_never_touches_the_callers_list() -> None:
    one, two = UserMessage(content="1"), UserMessage(content="2")

    @hookimpl
    def drop_first(messages: Any) -> list[Any]:
        return list(messages[1:])

    _, dispatcher, _ = host(("drop", plugin(pi_context=drop_first)))
    original = [one, two]
    assert await dispatcher.context(messages=original, ctx=CTX) == [two]
    assert original == [one, two]
    _, empty, _ = host()
    result = await empty.context(messages=original, ctx=CTX)
    assert result == original and result is not original


async def test_before_provider_request_chains_payloads() -> None:
    @hookimpl
    def add_a(payload: dict[str, Any]) -> dict[str, Any]:
        return {**payload, "a": 1}

    @hookimpl
    def add_b(payload: dict[str, Any], model: Any) -> dict[str, Any]:
        return {**payload, "b": model}

    _, dispatcher, _ = host(
        ("b", plugin(pi_before_provider_request=add_b)), ("a", plugin(pi_before_provider_request=add_a))
    )
    assert await dispatcher.before_provider_request(payload={}, model="m", ctx=CTX) == {"a": 1, "b": "m"}


async def test_argument_listeners_see_each_threaded_argument_set() -> None:
    @hookimpl
    def add_a(payload: dict[str, Any]) -> dict[str, Any]:
        return {**payload, "a": 1}

    @hookimpl
    def add_b(payload: dict[str, Any]) -> dict[str, Any]:
        return {**payload, "b": 2}

    _, dispatcher, _ = host(
        ("b", plugin(pi_before_provider_request=add_b)), ("a", plugin(pi_before_provider_request=add_a))
    )
    seen: list[tuple[str, Any]] = []
    remove = dispatcher.add_argument_listener(lambda hook, args: seen.append((hook, args["payload"])))
    await dispatcher.before_provider_request(payload={}, model="m", ctx=CTX)
    assert seen == [
        ("pi_before_provider_request", {"a": 1}),
        ("pi_before_provider_request", {"a": 1, "b": 2}),
    ]
    remove()
    await dispatcher.before_provider_request(payload={}, model="m", ctx=CTX)
    assert len(seen) == 2


async def test_veto_tool_call_sees_rewrites_and_first_block_wins() -> None:
    seen: list[Any] = []

    @hookimpl
    def rewrite(input: Any) -> ToolCallRewrite:
        return ToolCallRewrite(input={**input, "command": "ls -la"})

    @hookimpl(trylast=True)
    def guard(input: Any) -> ToolCallBlock | None:
        seen.append(dict(input))
        return ToolCallBlock(reason="no ls") if input["command"].startswith("ls") else None

    _, dispatcher, _ = host(("guard", plugin(pi_tool_call=guard)), ("rewrite", plugin(pi_tool_call=rewrite)))
    result = await dispatcher.tool_call(tool_call_id="1", tool_name="bash", input={"command": "ls"}, ctx=CTX)
    assert result == ToolCallBlock(reason="no ls")
    assert seen == [{"command": "ls -la"}]


async def test_tool_result_patches_accumulate() -> None:
    @hookimpl
    def redact(content: Any) -> ToolResultPatch:
        return ToolResultPatch(content=[TextContent(text=content[0].text.replace("secret", "***"))])

    @hookimpl
    async def flag(content: Any, is_error: bool) -> ToolResultPatch:
        return ToolResultPatch(is_error="***" in content[0].text)

    _, dispatcher, _ = host(("flag", plugin(pi_tool_result=flag)), ("redact", plugin(pi_tool_result=redact)))
    patch = await dispatcher.tool_result(
        tool_call_id="1",
        tool_name="read",
        input={},
        content=[TextContent(text="a secret")],
        details={"lines": 1},
        is_error=False,
        ctx=CTX,
    )
    assert patch == ToolResultPatch(content=(TextContent(text="a ***"),), details={"lines": 1}, is_error=True)


async def test_first_session_before_compact() -> None:
    compaction = CompactionResult(summary="short", first_kept_entry_id="e1", tokens_before=10)
    log: list[str] = []
    _, dispatcher, _ = host(
        ("default", plugin(pi_session_before_compact=recorder(log, "default", None, trylast=True))),
        ("custom", plugin(pi_session_before_compact=recorder(log, "custom", compaction, is_async=True))),
        ("observer", plugin(pi_session_before_compact=recorder(log, "observer"))),
    )
    result = await dispatcher.session_before_compact(
        preparation=None,  # type: ignore[arg-type]
        branch_entries=[],
        reason="manual",
        signal=None,  # type: ignore[arg-type]
        ctx=CTX,
    )
    assert result is compaction
    assert log == ["observer", "custom"]


async def test_will_continue_run_without_answer_is_false() -> None:
    _, dispatcher, _ = host()
    assert await dispatcher.will_continue_run(message=AssistantMessage(), ctx=CTX) is False


async def test_message_end_replacement() -> None:
    original = AssistantMessage(content=[TextContent(text="sk-live-1")])

    @hookimpl
    def redact(message: Any) -> Any:
        return message.model_copy(update={"content": [TextContent(text="sk-****")]})

    _, dispatcher, errors = host(("redact", plugin(pi_message_end=redact)))
    result = await dispatcher.call("pi_message_end", message=original, ctx=CTX)
    assert result.content == [TextContent(text="sk-****")]
    _, empty, _ = host()
    assert await empty.call("pi_message_end", message=original, ctx=CTX) is original
    assert errors == []


# -- errors ----------------------------------------------------------------------------------------


async def test_a_raising_implementation_is_reported_and_skipped(caplog: pytest.LogCaptureFixture) -> None:
    log: list[str] = []

    @hookimpl
    def broken(turn_index: int) -> None:
        raise ValueError(f"bad turn {turn_index}")

    _, dispatcher, errors = host(
        ("before", plugin(pi_turn_start=recorder(log, "before"))),
        ("broken", plugin(pi_turn_start=broken)),
        ("after", plugin(pi_turn_start=recorder(log, "after", is_async=True))),
    )
    with caplog.at_level(logging.WARNING, logger="pi_host.plugin"):
        await dispatcher.call("pi_turn_start", turn_index=3, timestamp=0, ctx=CTX)
    assert log == ["after", "before"]
    [error] = errors
    assert (error.plugin, error.hook, error.message) == ("broken", "pi_turn_start", "ValueError: bad turn 3")
    assert error.traceback is not None and "raise ValueError" in error.traceback
    assert caplog.messages == ['plugin "broken" failed in pi_turn_start: ValueError: bad turn 3']


async def test_a_pipeline_keeps_the_value_from_before_the_failing_implementation() -> None:
    @hookimpl(tryfirst=True)
    def upper(text: str) -> InputTransform:
        return InputTransform(text=text.upper())

    @hookimpl
    def broken(text: str) -> InputTransform:
        raise RuntimeError

    @hookimpl(trylast=True)
    def exclaim(text: str) -> InputTransform:
        return InputTransform(text=text + "!")

    _, dispatcher, errors = host(
        ("u", plugin(pi_input=upper)), ("b", plugin(pi_input=broken)), ("e", plugin(pi_input=exclaim))
    )
    assert await dispatcher.input(text="hi", ctx=CTX) == InputTransform(text="HI!", images=())
    assert [e.message for e in errors] == ["RuntimeError"]


async def test_async_error_listeners_are_awaited_and_a_failing_listener_is_contained(
    caplog: pytest.LogCaptureFixture,
) -> None:
    received: list[str] = []

    async def listener(error: ExtensionError) -> None:
        await anyio.lowlevel.checkpoint()
        received.append(error.plugin)

    def bad_listener(error: ExtensionError) -> None:
        raise OSError("listener broke")

    @hookimpl
    def broken() -> None:
        raise ValueError("x")

    _, dispatcher, _ = host(("broken", plugin(pi_agent_start=broken)))
    dispatcher.add_error_listener(bad_listener)
    remove = dispatcher.add_error_listener(listener)
    await dispatcher.call("pi_agent_start", ctx=CTX)
    remove()
    await dispatcher.call("pi_agent_start", ctx=CTX)
    assert received == ["broken"]
    assert any("listener broke" in (record.exc_text or "") for record in caplog.records)


async def test_tool_call_fails_closed_when_an_implementation_raises() -> None:
    log: list[str] = []

    @hookimpl
    def broken(input: Any) -> None:
        raise KeyError("command")

    _, dispatcher, errors = host(
        ("later", plugin(pi_tool_call=recorder(log, "later"))),
        ("broken", plugin(pi_tool_call=broken)),
    )
    result = await dispatcher.tool_call(tool_call_id="1", tool_name="bash", input={}, ctx=CTX)
    assert result == ToolCallBlock(reason="Plugin \"broken\" failed, blocking execution: KeyError: 'command'")
    assert log == []  # the chain stopped at the failure
    assert [(e.plugin, e.hook) for e in errors] == [("broken", "pi_tool_call")]


async def test_tool_call_fails_closed_on_a_wrong_return_type() -> None:
    @hookimpl
    def sloppy() -> dict[str, bool]:
        return {"block": True}

    _, dispatcher, errors = host(("sloppy", plugin(pi_tool_call=sloppy)))
    result = await dispatcher.tool_call(tool_call_id="1", tool_name="bash", input={}, ctx=CTX)
    expected = "pi_tool_call returned dict; expected ToolCallBlock, ToolCallRewrite or None"
    assert result == ToolCallBlock(reason=f'Plugin "sloppy" failed, blocking execution: {expected}')
    assert [(e.plugin, e.message, e.traceback) for e in errors] == [("sloppy", expected, None)]


async def test_wrong_return_types_elsewhere_are_reported_and_ignored() -> None:
    @hookimpl
    def chatty() -> str:
        return "I ran"

    @hookimpl
    def wrong_role(message: Any) -> UserMessage:
        return UserMessage(content="replaced")

    @hookimpl
    def not_a_list() -> str:
        return "messages"

    original = AssistantMessage()
    _, dispatcher, errors = host(
        ("chatty", plugin(pi_turn_start=chatty)),
        ("wrong_role", plugin(pi_message_end=wrong_role)),
        ("not_a_list", plugin(pi_context=not_a_list)),
    )
    await dispatcher.call("pi_turn_start", turn_index=0, timestamp=0, ctx=CTX)
    assert await dispatcher.call("pi_message_end", message=original, ctx=CTX) is original
    assert await dispatcher.context(messages=[original], ctx=CTX) == [original]
    assert [(e.plugin, e.message) for e in errors] == [
        ("chatty", "pi_turn_start is a notification and ignores results; return None instead of str"),
        ("wrong_role", "pi_message_end must return a message with the same role ('assistant'), not 'user'"),
        ("not_a_list", "pi_context returned str; expected list, tuple or None"),
    ]


async def test_cancellation_is_not_swallowed_or_reported() -> None:
    started = anyio.Event()

    @hookimpl
    async def slow() -> None:
        started.set()
        await anyio.sleep_forever()

    _, dispatcher, errors = host(("slow", plugin(pi_agent_start=slow)))
    async with anyio.create_task_group() as group:
        group.start_soon(functools.partial(dispatcher.call, "pi_agent_start", ctx=CTX))
        await started.wait()
        group.cancel_scope.cancel()
    assert errors == []


# -- the registry behind the dispatcher -----------------------------------------------------------


async def test_registration_changes_are_seen_by_the_next_dispatch() -> None:
    log: list[str] = []
    pm, dispatcher, _ = host(("a", plugin(pi_agent_start=recorder(log, "a"))))
    await dispatcher.call("pi_agent_start", ctx=CTX)
    b = plugin(pi_agent_start=recorder(log, "b"))
    pm.register(b, name="b")
    await dispatcher.call("pi_agent_start", ctx=CTX)
    pm.unregister(name="a")
    await dispatcher.call("pi_agent_start", ctx=CTX)
    pm.set_blocked("b")
    await dispatcher.call("pi_agent_start", ctx=CTX)
    assert log == ["a", "b", "a", "b"]


async def test_wrappers_on_pi_hooks_are_rejected() -> None:
    @hookimpl(wrapper=True)
    def pi_tool_call() -> Any:
        return (yield)

    pm = PluginManager()
    with pytest.raises(PluginValidationError) as info:
        pm.register(plugin(pi_tool_call=pi_tool_call), name="wrapping")
    assert str(info.value).startswith(
        "Plugin 'wrapping' hook 'pi_tool_call': wrapper=True is not supported on pi hooks"
    )
    assert pm.get_plugin("wrapping") is None
    assert pm.hook.pi_tool_call.get_hookimpls() == []


async def test_unknown_and_synchronous_hooks_cannot_be_dispatched() -> None:
    _, dispatcher, _ = host()
    with pytest.raises(HookError, match="unknown hook 'pi_nope'"):
        await dispatcher.call("pi_nope")
    with pytest.raises(HookError, match=r"call it with PluginManager\.call_setup"):
        await dispatcher.call("pi_register_tools", register=print)


class _ThirdPartySpecs:
    @hookspec(strategy=Strategy.FIRST, returns=str)
    def pi_greeting(self, name: str, ctx: Any) -> str | None:
        """Return a greeting."""


async def test_hooks_added_by_plugins_through_pi_addhooks_are_dispatched() -> None:
    @hookimpl
    def pi_addhooks(pluginmanager: Any) -> None:
        pluginmanager.add_hookspecs(_ThirdPartySpecs)

    @hookimpl
    async def pi_greeting(name: str) -> str:
        return f"hello {name}"

    # The implementing plugin may register before the plugin that publishes the spec.
    pm, dispatcher, _ = host(("greeter", plugin(pi_greeting=pi_greeting)))
    pm.register(plugin(pi_addhooks=pi_addhooks), name="publisher")
    assert pm.check_pending_plugins() == []
    assert await dispatcher.call("pi_greeting", name="pi", ctx=CTX) == "hello pi"


# -- tracing ---------------------------------------------------------------------------------------


async def test_trace_lists_implementations_in_call_order_with_results() -> None:
    stream = io.StringIO()

    @hookimpl
    def allow() -> None:
        return None

    @hookimpl
    async def block() -> ToolCallBlock:
        return ToolCallBlock(reason="no")

    @hookimpl(trylast=True)
    def last() -> None:
        return None

    pm = PluginManager()
    for name, impl in (("last", last), ("blocker", block), ("allow", allow)):
        pm.register(plugin(pi_tool_call=impl), name=name)
    dispatcher = Dispatcher(pm, trace=stream)
    await dispatcher.tool_call(tool_call_id="1", tool_name="bash", input={}, ctx=CTX)
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("[pi-host] pi_tool_call (veto) ")
    assert lines[0].endswith(" ms -> ToolCallBlock(reason='no')")
    assert lines[1].startswith("  1. allow") and lines[1].endswith("-> None")
    assert lines[2].startswith("  2. blocker (async)") and lines[2].endswith(
        "-> ToolCallBlock(reason='no')  [stop]"
    )
    assert lines[3].startswith("  3. last") and lines[3].endswith("not reached")
    assert len(lines) == 4


async def test_trace_follows_the_environment_and_writes_to_stderr(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    @hookimpl
    def broken() -> None:
        raise ValueError("boom")

    monkeypatch.setenv("PI_HOST_TRACE_HOOKS", "1")
    pm = PluginManager()
    pm.register(plugin(pi_agent_start=broken), name="broken")
    await Dispatcher(pm).call("pi_agent_start", ctx=CTX)
    err = capsys.readouterr().err
    assert "[pi-host] pi_agent_start (notify)" in err
    assert "1. broken" in err and "ERROR: ValueError: boom" in err
    monkeypatch.setenv("PI_HOST_TRACE_HOOKS", "0")
    await Dispatcher(pm).call("pi_agent_start", ctx=CTX)
    assert "[pi-host]" not in capsys.readouterr().err


def test_the_dispatchers_copy_of_the_trace_variable_is_the_tracers() -> None:
    from pi_host.plugin import _dispatch, _trace

    assert _dispatch._TRACE_ENV == _trace.TRACE_ENV


# -- the typed façade --------------------------------------------------------------------------------


def _event_hooks() -> set[str]:
    """The hooks agent events reach through the generic bridge, which have no typed method."""
    return {f"pi_{event.model_fields['type'].default}" for event in typing.get_args(AgentEvent)}


def test_the_facade_has_a_typed_method_for_every_lifecycle_hook_but_the_events() -> None:
    events = _event_hooks()
    assert {"pi_agent_start", "pi_message_update", "pi_tool_execution_end"} <= events
    for _, function, contract in iter_hookspecs():
        if contract.sync or function.__name__ in events:
            assert not hasattr(Dispatcher, function.__name__.removeprefix("pi_")), function.__name__
            continue
        method = getattr(Dispatcher, function.__name__.removeprefix("pi_"))
        assert inspect.iscoroutinefunction(method), function.__name__
        parameters = inspect.signature(method).parameters
        assert list(parameters)[1:] == list(inspect.signature(function).parameters), function.__name__
        assert all(p.kind is p.KEYWORD_ONLY for name, p in parameters.items() if name != "self")
        assert function.__name__ in (method.__doc__ or ""), function.__name__


async def test_facade_methods_dispatch_to_their_hooks() -> None:
    events = _event_hooks()
    for _, function, contract in iter_hookspecs():
        if contract.sync or function.__name__ in events:
            continue
        calls: list[dict[str, Any]] = []
        names = list(inspect.signature(function).parameters)
        impl = hookimpl(specname=function.__name__)(_with_signature(calls.append, names))
        pm = PluginManager()
        pm.register(plugin(impl=impl), name="recorder")
        errors: list[ExtensionError] = []
        dispatcher = Dispatcher(pm, on_error=errors.append, trace=False)
        arguments = {name: _sample(name) for name in names}
        method = getattr(dispatcher, function.__name__.removeprefix("pi_"))
        await method(**arguments)
        assert calls == [arguments], function.__name__
        assert errors == [], function.__name__


def _with_signature(record: Callable[[dict[str, Any]], None], names: list[str]) -> Callable[..., Any]:
    """A function taking exactly ``names`` (pluggy reads the code object) that records its call."""
    source = f"def impl({', '.join(names)}):\n    record(dict({', '.join(f'{n}={n}' for n in names)}))\n"
    namespace: dict[str, Any] = {"record": record}
    exec(source, namespace)
    return cast("Callable[..., Any]", namespace["impl"])


def _sample(name: str) -> Any:
    samples: dict[str, Any] = {
        "text": "hi",
        "images": (),
        "messages": [UserMessage(content="x")],
        "message": AssistantMessage(),
        "content": [TextContent(text="x")],
        "system_prompt": "base",
        "payload": {"p": 1},
        "input": {"a": 1},
        "is_error": False,
        "ctx": CTX,
    }
    return samples.get(name, f"<{name}>")


def test_the_dispatcher_is_cheap_to_skip(benchmark_rounds: int = 2000) -> None:
    """Guard the hot path loosely (bench/bench_dispatch.py measures it properly)."""
    import time

    _, dispatcher, _ = host()

    async def loop() -> float:
        start = time.perf_counter()
        for _ in range(benchmark_rounds):
            await dispatcher.call("pi_message_update", message=None, assistant_message_event=None, ctx=CTX)
        return (time.perf_counter() - start) / benchmark_rounds

    per_call = min(anyio.run(loop) for _ in range(3))
    assert per_call < 20e-6, f"{per_call * 1e6:.2f} µs per dispatch without implementations"
