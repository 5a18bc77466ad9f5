"""Hung hooks are named, bounded and abortable; a plugin's BaseException stays a plugin failure."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import types
from pathlib import Path
from typing import Any

import anyio
import pytest

from pi_host.hookspecs import ToolCallBlock, ToolCallRewrite, hookimpl
from pi_host.plugin import Dispatcher, ExtensionError, PluginManager
from pi_host.plugin._timeouts import HookTimeout, parse_timeout

CTX: Any = types.SimpleNamespace()


def setup(*plugins: tuple[str, object], timeout: float | None) -> tuple[Dispatcher, list[ExtensionError]]:
    pm = PluginManager()
    for name, plugin in plugins:
        pm.register(plugin, name=name)
    errors: list[ExtensionError] = []
    return Dispatcher(pm, on_error=errors.append, trace=False, timeout=timeout), errors


class Hangs:
    @hookimpl
    async def pi_agent_start(self, ctx: Any) -> None:
        await anyio.sleep_forever()


class After:
    def __init__(self) -> None:
        self.ran = False

    @hookimpl(trylast=True)
    def pi_agent_start(self, ctx: Any) -> None:
        self.ran = True


async def test_an_async_hook_that_never_returns_is_stopped_and_named() -> None:
    after = After()
    dispatcher, errors = setup(("after", after), ("hangs", Hangs()), timeout=0.2)
    with anyio.fail_after(10):
        await dispatcher.call("pi_agent_start", ctx=CTX)
    assert after.ran, "the implementations after the hung one still run"
    (error,) = errors
    assert (error.plugin, error.hook) == ("hangs", "pi_agent_start")
    assert error.message == (
        'HookTimeout: plugin "hangs" did not finish pi_agent_start within 0.2 s and was stopped '
        "(the limit is plugins.hookTimeout in settings.json or PI_HOST_HOOK_TIMEOUT)"
    )


async def test_abort_ends_a_hung_hook_and_a_veto_fails_closed() -> None:
    class Stuck:
        @hookimpl
        async def pi_tool_call(self, tool_call_id: str, tool_name: str, input: Any, ctx: Any) -> None:
            started.set()
            await anyio.sleep_forever()

    started = anyio.Event()
    dispatcher, errors = setup(("stuck", Stuck()), timeout=None)
    outcome: list[Any] = []

    async def call() -> None:
        outcome.append(await dispatcher.tool_call(tool_call_id="1", tool_name="bash", input={}, ctx=CTX))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(call)
            await started.wait()
            assert dispatcher.abort_hooks() == 1
    assert isinstance(outcome[0], ToolCallBlock)
    assert outcome[0].reason == (
        'Plugin "stuck" failed, blocking execution: HookAborted: plugin "stuck" was still running '
        "pi_tool_call when the run was aborted"
    )
    assert [error.plugin for error in errors] == ["stuck"]


async def test_async_hooks_that_suspend_or_not_work_under_the_deadline() -> None:
    class Quick:
        @hookimpl
        async def pi_project_trust(self, cwd: str, ctx: Any) -> Any:
            return None

    class Suspends:
        @hookimpl
        async def pi_project_trust(self, cwd: str, ctx: Any) -> Any:
            await anyio.sleep(0)
            await anyio.sleep(0.01)
            from pi_host.hookspecs import ProjectTrustDecision

            return ProjectTrustDecision(trusted=True)

    dispatcher, errors = setup(("suspends", Suspends()), ("quick", Quick()), timeout=5)
    decision = await dispatcher.project_trust(cwd="/", ctx=CTX)
    assert decision is not None and decision.trusted and errors == []


async def test_an_outer_cancellation_still_cancels_a_hook() -> None:
    dispatcher, errors = setup(("hangs", Hangs()), timeout=30)
    with anyio.move_on_after(0.1) as scope:
        await dispatcher.call("pi_agent_start", ctx=CTX)
    assert scope.cancelled_caught and errors == []


async def test_a_blocking_def_hook_is_named_while_it_blocks_and_fails_when_it_returns(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A def hook cannot be stopped (no thread is killed): the watchdog names it once it is
    past the limit, and when it returns its outcome is ignored and it is that plugin's failure."""
    named = threading.Event()

    class Named(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "has blocked pi-host" in record.getMessage():
                named.set()

    class Blocks:
        @hookimpl
        def pi_tool_call(self, tool_name: str) -> Any:
            # Holds the event loop until the watchdog has named it (a safety net of 30 s).
            deadline = time.monotonic() + 30
            while not named.is_set() and time.monotonic() < deadline:
                pass
            return ToolCallRewrite(input={"late": True})

    handler = Named()
    logging.getLogger("pi_host.plugin").addHandler(handler)
    try:
        dispatcher, errors = setup(("blocks", Blocks()), timeout=0.3)
        outcome = await dispatcher.tool_call(tool_call_id="1", tool_name="bash", input={}, ctx=CTX)
    finally:
        logging.getLogger("pi_host.plugin").removeHandler(handler)
    assert named.is_set()
    # Its late rewrite does not count: pi_tool_call fails closed, naming the plugin.
    assert isinstance(outcome, ToolCallBlock) and "blocks" in outcome.reason
    (error,) = errors
    assert (error.plugin, error.hook) == ("blocks", "pi_tool_call")
    assert error.message == (
        'HookTimeout: plugin "blocks" did not finish pi_tool_call within 0.3 s; it blocked '
        "pi-host until it returned and its result was ignored (a def hook cannot be stopped: do "
        "blocking work in async def with anyio.to_thread.run_sync) (the limit is "
        "plugins.hookTimeout in settings.json or PI_HOST_HOOK_TIMEOUT)"
    )
    assert any(
        'plugin "blocks" has blocked pi-host for' in message and "in pi_tool_call" in message
        for message in caplog.messages
    )
    dispatcher.close()


@pytest.mark.parametrize(
    ("raise_it", "message"),
    [
        (lambda: sys.exit(3), "SystemExit: 3"),
        (lambda: (_ for _ in ()).throw(KeyboardInterrupt("plugin's own")), "KeyboardInterrupt: plugin's own"),
        (lambda: (_ for _ in ()).throw(GeneratorExit()), "GeneratorExit"),
    ],
)
async def test_base_exceptions_in_a_hook_are_that_plugins_failure(raise_it: Any, message: str) -> None:
    class Raises:
        @hookimpl
        async def pi_agent_start(self, ctx: Any) -> None:
            raise_it()

    after = After()
    dispatcher, errors = setup(("after", after), ("raises", Raises()), timeout=5)
    await dispatcher.call("pi_agent_start", ctx=CTX)
    assert [(error.plugin, error.message) for error in errors] == [("raises", message)] and after.ran


def test_timeouts_parse_from_settings_and_the_environment() -> None:
    assert parse_timeout("2.5", origin="x") == 2.5
    assert parse_timeout(0, origin="x") is None and parse_timeout("off", origin="x") is None
    with pytest.raises(ValueError, match="PI_HOST_HOOK_TIMEOUT must be a number of seconds"):
        parse_timeout("soon", origin="PI_HOST_HOOK_TIMEOUT")
    with pytest.raises(ValueError, match="must be a number"):
        parse_timeout(True, origin="x")
    assert issubclass(HookTimeout, Exception)


_MAIN = "import sys; from pi_host.modes._cli import main; sys.exit(main(sys.argv[1:]))"


def cli(tmp_path: Path, *args: str, **env: str) -> subprocess.Popen[str]:
    script = tmp_path / "faux.json"
    script.write_text(json.dumps([{"text": "Hello offline"}]), encoding="utf-8")
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("PI_HOST", "ANTHROPIC_", "OPENAI_"))}
    environ.update(
        HOME=str(tmp_path),
        PI_HOST_DIR=str(tmp_path / "agent"),
        PI_HOST_PLUGINS="",
        PI_HOST_FAUX_SCRIPT=str(script),
        NO_COLOR="1",
        **env,
    )
    return subprocess.Popen(
        [sys.executable, "-c", _MAIN, *args],
        cwd=tmp_path,
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )


HANGING = """\
import anyio

from pi_host import hookimpl


@hookimpl
async def pi_agent_start(ctx):
    await anyio.sleep_forever()
"""


def test_print_mode_with_a_hung_async_hook_answers_and_names_it(tmp_path: Path) -> None:
    (tmp_path / "hangs.py").write_text(HANGING, encoding="utf-8")
    process = cli(tmp_path, "-e", "hangs.py", "--provider", "faux", "-p", "hi", PI_HOST_HOOK_TIMEOUT="1")
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert out.strip() == "Hello offline"
    assert 'plugin "hangs" did not finish pi_agent_start within 1 s and was stopped' in err


BLOCKING = """\
import os
import time

from pi_host import hookimpl


@hookimpl
def pi_agent_start(ctx):
    with open(os.environ["BLOCK_MARKER"], "w") as marker:
        marker.write("blocking")
    time.sleep(600)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_stops_a_blocking_def_hook_at_once(tmp_path: Path) -> None:
    (tmp_path / "blocks.py").write_text(BLOCKING, encoding="utf-8")
    marker = tmp_path / "marker"
    process = cli(tmp_path, "-e", "blocks.py", "--provider", "faux", "-p", "hi", BLOCK_MARKER=str(marker))
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():  # the hook is running: synchronised on its own marker
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the hook never started"
            time.sleep(0.02)
        interrupted = time.monotonic()
        process.send_signal(signal.SIGINT)
        _out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert time.monotonic() - interrupted < 20
    assert process.returncode == 130, err
    assert 'plugin "blocks" was still running pi_agent_start when the run was aborted' in err


async def test_a_hung_hook_inside_its_own_cancel_scopes_is_stopped_and_the_loop_stays_sound() -> None:
    class Nested:
        @hookimpl
        async def pi_agent_start(self, ctx: Any) -> None:
            with anyio.move_on_after(600):
                async with anyio.create_task_group() as group:
                    group.start_soon(anyio.sleep_forever)
                    await anyio.sleep_forever()

    after = After()
    dispatcher, errors = setup(("after", after), ("nested", Nested()), timeout=0.2)
    with anyio.fail_after(20):
        await dispatcher.call("pi_agent_start", ctx=CTX)
        assert after.ran and [error.plugin for error in errors] == ["nested"]
        # The task carries no leftover cancellation: it can still wait and be cancelled normally.
        await anyio.sleep(0.01)
        with anyio.move_on_after(0.05) as scope:
            await anyio.sleep_forever()
        assert scope.cancelled_caught


def test_the_setting_sets_the_timeout_and_the_variable_beats_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from pi_host.plugin import PluginControls
    from pi_host.runtime import Host

    def configured(value: object) -> Host:
        host = Host.load(controls=PluginControls(allow=frozenset()))
        host.configure(types.SimpleNamespace(settings={"plugins": {"hookTimeout": value}}, flags={}))
        return host

    monkeypatch.delenv("PI_HOST_HOOK_TIMEOUT", raising=False)
    assert Host.load(controls=PluginControls(allow=frozenset())).dispatcher.hook_timeout == 60.0
    assert configured(2.5).dispatcher.hook_timeout == 2.5
    assert configured(0).dispatcher.hook_timeout is None
    assert configured("soon").dispatcher.hook_timeout == 60.0
    assert any("plugins.hookTimeout in settings.json must be a number" in m for m in caplog.messages)
    monkeypatch.setenv("PI_HOST_HOOK_TIMEOUT", "7")
    assert configured(2.5).dispatcher.hook_timeout == 7.0


class AsksTheUser:
    """A hook that opens a dialog and waits for the answer (a policy, an offer to restore files)."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher
        self.answered = False

    @hookimpl
    async def pi_agent_start(self, ctx: Any) -> None:
        guard = self.dispatcher._guard
        with self.dispatcher.waiting_for_user():
            # The user reads for longer than the hook timeout: the watchdog's clock passes it
            # many times over while the dialog is open.
            while guard._clock < 10 * (guard.timeout or 0):
                await anyio.sleep(0.02)
        self.answered = True


async def test_the_time_a_hook_waits_for_the_user_does_not_count() -> None:
    pm = PluginManager()
    errors: list[ExtensionError] = []
    dispatcher = Dispatcher(pm, on_error=errors.append, trace=False, timeout=0.1)
    asks = AsksTheUser(dispatcher)
    pm.register(asks, name="asks")
    with anyio.fail_after(20):
        await dispatcher.call("pi_agent_start", ctx=CTX)
    assert asks.answered and errors == []
    # Once the dialog is closed the limit holds again.
    pm.register(Hangs(), name="hangs")
    with anyio.fail_after(20):
        await dispatcher.call("pi_agent_start", ctx=CTX)
    assert [error.plugin for error in errors] == ["hangs"]


async def test_a_plugins_dialogs_are_marked_as_waiting_for_the_user(tmp_path: Path) -> None:
    from pi_host.testing import RecordingUI, build_host

    seen: list[bool] = []

    class Probe(RecordingUI):
        async def confirm(self, title: str, message: str, *, timeout: float | None = None) -> bool:
            import asyncio

            seen.append(asyncio.current_task() in host.host.dispatcher._guard.asking)
            return True

    class Asker:
        @hookimpl
        async def pi_agent_start(self, ctx: Any) -> None:
            await ctx.ui.confirm("Go on?", "a question")

    host = build_host([Asker()], cwd=tmp_path / "p", agent_dir=tmp_path / "a", ui=Probe(), replies=["ok"])
    try:
        (await host.run("hi")).assert_ok()
    finally:
        await host.close()
    assert seen == [True]
