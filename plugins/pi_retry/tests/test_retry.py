"""pi-retry against a real session on the scripted provider (pi's agent-session-retry-events)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import anyio
import pi_retry
import pytest
from pi_retry import RetrySettings
from pydantic import BaseModel

from pi_host import AssistantMessage, hookimpl
from pi_host.agent import Tool
from pi_host.messages import TextContent, ToolResult
from pi_host.providers import faux_assistant_message, faux_tool_call
from pi_host.testing import assert_entry_point, assert_hooks_match_specs, assert_public_imports_only

SessionFactory = Any  # conftest's make_session: (replies, settings=...) -> (session, faux, events)

FAST = {"retry": {"baseDelayMs": 1}}


def failure(text: str = "529 overloaded_error: Overloaded") -> AssistantMessage:
    return faux_assistant_message("", stop_reason="error", error_message=text)


def retry_events(events: list[Any]) -> list[tuple[Any, ...]]:
    summary: list[tuple[Any, ...]] = []
    for event in events:
        if event.type == "auto_retry_start":
            summary.append(("start", event.attempt, event.max_attempts, event.delay_ms))
        elif event.type == "auto_retry_end":
            summary.append(("end", event.success, event.attempt, event.final_error))
        elif event.type == "agent_end":
            summary.append(("agent_end", event.will_retry))
    return summary


async def test_retry_once_then_succeed(make_session: SessionFactory) -> None:
    session, faux, events = await make_session([failure(), faux_assistant_message("ok")], settings=FAST)
    await session.prompt("hi")
    assert retry_events(events) == [
        ("agent_end", True),
        ("start", 1, 3, 1),
        ("end", True, 1, None),
        ("agent_end", False),
    ]
    assert faux.call_count == 2
    # The failed reply left the model's context but stays in the session file.
    assert [m.role for m in session.messages] == ["user", "assistant"]
    assert session.messages[-1].stop_reason == "stop"
    stored = [e.message for e in session.session_manager.get_entries() if e.type == "message"]
    assert [getattr(m, "stop_reason", None) for m in stored] == [None, "error", "stop"]
    assert not pi_retry.is_retrying(session.ctx)


async def test_multiple_failures_back_off_exponentially(make_session: SessionFactory) -> None:
    session, faux, events = await make_session(
        [failure(), failure("503 service unavailable"), faux_assistant_message("ok")],
        settings={"retry": {"baseDelayMs": 2}},
    )
    await session.prompt("hi")
    starts = [e for e in retry_events(events) if e[0] == "start"]
    assert starts == [("start", 1, 3, 2), ("start", 2, 3, 4)]
    assert ("end", True, 2, None) in retry_events(events)
    assert faux.call_count == 3


async def test_exhausting_max_retries_reports_failure(make_session: SessionFactory) -> None:
    session, faux, events = await make_session(
        [failure() for _ in range(3)], settings={"retry": {"baseDelayMs": 1, "maxRetries": 2}}
    )
    await session.prompt("hi")
    assert retry_events(events) == [
        ("agent_end", True),
        ("start", 1, 2, 1),
        ("agent_end", True),
        ("start", 2, 2, 2),
        ("agent_end", False),
        ("end", False, 2, "529 overloaded_error: Overloaded"),
    ]
    assert faux.call_count == 3
    assert not pi_retry.is_retrying(session.ctx)


async def test_disabled_retry_does_nothing(make_session: SessionFactory) -> None:
    session, faux, events = await make_session(
        [failure(), faux_assistant_message("ok")], settings={"retry": {"enabled": False}}
    )
    await session.prompt("hi")
    assert retry_events(events) == [("agent_end", False)]
    assert faux.call_count == 1


@pytest.mark.parametrize(
    "error",
    [
        "401 invalid x-api-key",
        "429 insufficient_quota: check your billing details",
        "400 prompt is too long: 210000 tokens > 200000 maximum",
    ],
)
async def test_non_retryable_and_overflow_errors_are_not_retried(
    make_session: SessionFactory, error: str
) -> None:
    session, faux, events = await make_session([failure(error), faux_assistant_message("ok")], settings=FAST)
    await session.prompt("hi")
    assert retry_events(events) == [("agent_end", False)]
    assert faux.call_count == 1


async def test_abort_retry_cancels_the_wait(make_session: SessionFactory) -> None:
    session, faux, events = await make_session(
        [failure(), faux_assistant_message("ok")], settings={"retry": {"baseDelayMs": 60_000}}
    )
    waiting = anyio.Event()
    session.subscribe(lambda event: waiting.set() if event.type == "auto_retry_start" else None)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.prompt, "hi")
            await waiting.wait()
            assert pi_retry.is_retrying(session.ctx)
            assert pi_retry.abort_retry(session.ctx)
    assert retry_events(events)[-1] == ("end", False, 1, "Retry cancelled")
    assert faux.call_count == 1
    assert not pi_retry.is_retrying(session.ctx)
    assert not pi_retry.abort_retry(session.ctx)
    assert not pi_retry.is_retrying(session.ctx)


async def test_aborting_the_retry_scope_cancels_the_wait(make_session: SessionFactory) -> None:
    """RPC ``abort_retry`` aborts the session's ``retry`` abort scope: the wait ends at once."""
    session, faux, events = await make_session(
        [failure(), faux_assistant_message("ok")], settings={"retry": {"baseDelayMs": 60_000}}
    )
    waiting = anyio.Event()
    session.subscribe(lambda event: waiting.set() if event.type == "auto_retry_start" else None)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.prompt, "hi")
            await waiting.wait()
            assert session.abort_scope("retry")
    assert retry_events(events)[-1] == ("end", False, 1, "Retry cancelled")
    assert faux.call_count == 1
    assert not session.abort_scope("retry")


async def test_the_session_abort_cancels_the_wait(make_session: SessionFactory) -> None:
    """Escape in the TUI and RPC ``abort`` call ``AgentSession.abort()``: it ends the wait."""
    session, faux, events = await make_session(
        [failure(), faux_assistant_message("ok")], settings={"retry": {"baseDelayMs": 60_000}}
    )
    waiting = anyio.Event()
    session.subscribe(lambda event: waiting.set() if event.type == "auto_retry_start" else None)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.prompt, "hi")
            await waiting.wait()
            await session.abort()
    assert retry_events(events)[-1] == ("end", False, 1, "Retry cancelled")
    assert faux.call_count == 1
    assert not pi_retry.is_retrying(session.ctx)
    # The next prompt retries afresh, from attempt 1.
    faux.set_responses([failure(), faux_assistant_message("ok")])
    assert not pi_retry.is_retrying(session.ctx)
    events.clear()
    session.set_setting_value("retry.baseDelayMs", 1)
    await session.prompt("again")
    assert ("start", 1, 3, 1) in retry_events(events)
    assert session.messages[-1].content[0].text == "ok"


class _Echo(BaseModel):
    text: str


class _EchoTool:
    def __init__(self) -> None:
        self.calls: list[str] = []

    @hookimpl
    def pi_register_tools(self, register: Any) -> None:
        async def execute(params: _Echo, ctx: Any) -> ToolResult:
            self.calls.append(params.text)
            return ToolResult(content=[TextContent(text=params.text)])

        register(Tool(name="echo", description="Echo text.", parameters=_Echo, execute=execute))


async def test_a_retry_that_calls_tools_runs_the_whole_loop(make_session: SessionFactory) -> None:
    tool = _EchoTool()
    call = faux_assistant_message([faux_tool_call("echo", {"text": "ping"}, id="e1")], stop_reason="toolUse")
    session, faux, events = await make_session(
        [failure(), call, faux_assistant_message("done")], settings=FAST, extra_plugins=[tool]
    )
    await session.prompt("hi")
    # prompt() returned only after the retried run's tool call and its follow-up reply.
    assert tool.calls == ["ping"]
    assert faux.call_count == 3
    assert [m.role for m in session.messages] == ["user", "assistant", "toolResult", "assistant"]
    assert session.messages[-1].content[0].text == "done"
    assert retry_events(events) == [
        ("agent_end", True),
        ("start", 1, 3, 1),
        ("end", True, 1, None),
        ("agent_end", False),
    ]


async def test_server_retry_after_is_honoured(make_session: SessionFactory) -> None:
    slow = AssistantMessage.model_validate({**failure("429 rate limited").to_json_dict(), "retryAfterMs": 30})
    session, faux, events = await make_session([slow, faux_assistant_message("ok")], settings=FAST)
    await session.prompt("hi")
    assert ("start", 1, 3, 30) in retry_events(events)
    assert faux.call_count == 2


def test_delays_follow_pi_backoff() -> None:
    settings = RetrySettings()
    message = failure()
    assert [pi_retry.retry_delay_ms(message, n, settings) for n in (1, 2, 3)] == [2000, 4000, 8000]


def test_retry_after_is_capped_and_never_shortens_the_backoff() -> None:
    settings = RetrySettings.model_validate({"provider": {"maxRetryDelayMs": 10_000}})

    def asking(ms: int) -> AssistantMessage:
        return AssistantMessage.model_validate({**failure().to_json_dict(), "retryAfterMs": ms})

    assert pi_retry.retry_delay_ms(asking(5_000), 1, settings) == 5_000
    assert pi_retry.retry_delay_ms(asking(500_000), 1, settings) == 10_000
    assert pi_retry.retry_delay_ms(asking(100), 2, settings) == 4_000


def test_the_entry_point_names_the_package() -> None:
    assert_entry_point("retry", pi_retry, distribution="pi-retry")


def test_hooks_match_their_specs_and_retry_answers_before_compaction() -> None:
    hooks = {
        "pi_will_continue_run",
        "pi_after_agent_run",
        "pi_message_end",
        "pi_register_settings",
        "pi_register_abort_scopes",
    }
    manager = assert_hooks_match_specs(pi_retry, hooks, name="retry")
    (implementation,) = manager.hook.pi_after_agent_run.get_hookimpls()
    assert implementation.tryfirst


async def test_disabling_the_plugin_leaves_a_working_host(make_session: SessionFactory) -> None:
    session, faux, events = await make_session(
        [failure(), faux_assistant_message("ok")], settings=FAST, disabled=("compaction", "retry")
    )
    await session.prompt("hi")
    assert retry_events(events) == [("agent_end", False)]
    assert faux.call_count == 1


def test_imports_only_the_public_pi_host_api() -> None:
    assert_public_imports_only(pi_retry)


async def test_the_run_waits_for_the_retry_even_with_a_slow_message_end(make_session: SessionFactory) -> None:
    class SlowMessageEnd:
        @hookimpl
        async def pi_message_end(self, message: Any) -> None:
            await anyio.sleep(0.02)

    session, faux, events = await make_session(
        [failure(), faux_assistant_message("ok")], settings=FAST, extra_plugins=[SlowMessageEnd()]
    )
    await session.prompt("hi")
    assert faux.call_count == 2
    assert session.messages[-1].content[0].text == "ok"
    assert retry_events(events)[-2:] == [("end", True, 1, None), ("agent_end", False)]


async def test_an_abort_retry_before_the_wait_begins_still_cancels_it(make_session: SessionFactory) -> None:
    """Regression (#14): ``abort_retry`` that arrives while the failed run is still ending,
    before the wait opens, cancels the retry (it used to set a host-owned flag only pi_retry read)."""
    session, faux, events = await make_session(
        [failure(), faux_assistant_message("ok")], settings={"retry": {"baseDelayMs": 60_000}}
    )

    def abort_early(event: Any) -> None:
        if event.type == "agent_end":  # the run is over, the retry's wait has not begun
            assert not pi_retry.is_retrying(session.ctx)
            assert not session.abort_scope("retry")

    session.subscribe(abort_early)
    with anyio.fail_after(5):
        await session.prompt("hi")
    assert retry_events(events)[-1] == ("end", False, 1, "Retry cancelled")
    assert faux.call_count == 1


async def test_an_abort_from_an_earlier_run_does_not_stop_retries(make_session: SessionFactory) -> None:
    session, faux, events = await make_session([failure(), faux_assistant_message("ok")], settings=FAST)
    assert not session.abort_scope("retry")  # no run: nothing waits for it
    await session.abort()
    await session.prompt("hi")
    assert ("end", True, 1, None) in retry_events(events)
    assert faux.call_count == 2


def test_the_retry_section_migrates_pi_s_old_max_delay_key() -> None:
    settings = RetrySettings.model_validate({"maxDelayMs": 5000, "maxRetries": 1})
    assert (settings.provider.max_retry_delay_ms, settings.max_retries) == (5000, 1)


async def test_a_bad_retry_setting_is_reported_and_the_default_used(make_session: SessionFactory) -> None:
    session, faux, _ = await make_session(
        [failure(), faux_assistant_message("ok")],
        settings={"retry": {"baseDelayMs": 1, "maxRetries": "many"}},
    )
    assert session.ctx.plugin_settings(RetrySettings).max_retries == 3
    assert session.settings_manager is not None
    (issue,) = session.settings_manager.issues
    assert issue.path.endswith("settings.json") and issue.scope == "global"
    assert issue.message.startswith("retry.maxRetries: ") and issue.message.endswith("using the default")
    await session.prompt("hi")
    assert faux.call_count == 2


def test_loading_the_plugin_stays_light() -> None:
    # --help imports plugin modules only to read their flags: not the runtime.
    script = (
        "import sys\n"
        "import pi_retry\n"
        "from pi_host.plugin import PluginManager\n"
        "PluginManager().register(pi_retry, name='retry')\n"
        "print('\\n'.join(sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    modules = set(result.stdout.split())
    assert "pi_host.runtime" not in modules
    assert "pi_host.resources" not in modules
