"""Every supported event, with hook scripts in bash and Python, and the effect of each answer.

The misbehaving hooks are here too: one that hangs (its group is killed at the timeout and the
session goes on), one that prints garbage, one that exits 2, one that exits 1.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import pi_compaction
import pi_compaction.hookspecs
import pi_shell_hooks
import pytest

from pi_host import hookimpl
from pi_host.hookspecs import CompactionPreparation
from pi_host.testing import HostFactory, IsolatedHost, RecordingUI, reply, tool_call

from .conftest import Script

WRITE = tool_call("write", path="out.txt", content="hello")


def hooks(event: str, command: str, matcher: str | None = None, **extra: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"hooks": [{"type": "command", "command": command, **extra}]}
    if matcher is not None:
        entry["matcher"] = matcher
    return {"hooks": {event: [entry]}}


def hooked(make_host: HostFactory, settings: dict[str, Any], **kw: Any) -> IsolatedHost:
    return make_host(pi_shell_hooks, load=["tools_fs", "bash"], settings=settings, **kw)


def warnings(host: IsolatedHost) -> list[str]:
    return [message for message, level in host.ui.notifications if level == "warning"]


# -- tool_call --------------------------------------------------------------------------------


async def test_tool_call_payload_is_claude_shaped(
    make_host: HostFactory, script: Script, tmp_path: Path
) -> None:
    dump = tmp_path / "payload.json"
    path = script(f"cat > {dump}")
    host = hooked(
        make_host, hooks("PreToolUse", path, matcher="Write"), replies=[reply(tool_calls=[WRITE]), "ok"]
    )
    outcome = (await host.run("go")).assert_not_blocked()
    payload = json.loads(dump.read_text())
    assert payload["hook_event_name"] == "PreToolUse" and payload["pi_event"] == "tool_call"
    assert payload["tool_name"] == "write"
    assert payload["tool_input"] == {"path": "out.txt", "content": "hello"}
    assert payload["tool_use_id"] == outcome.tool_calls[0].id
    assert payload["cwd"] == str(host.cwd) and payload["session_id"] and payload["mode"] == "print"


async def test_tool_call_exit_2_blocks_with_stderr(make_host: HostFactory, script: Script) -> None:
    path = script("echo 'writes are frozen today' >&2; exit 2")
    host = hooked(make_host, hooks("tool_call", path), replies=[reply(tool_calls=[WRITE]), "ok"])
    outcome = await host.run("go")
    assert outcome.assert_blocked("write").reason == "writes are frozen today"
    assert not (host.cwd / "out.txt").exists()
    outcome.assert_text("ok")


@pytest.mark.parametrize(
    "answer",
    [
        {"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "no writes"}},
        {"decision": "block", "reason": "no writes"},
    ],
)
async def test_tool_call_json_deny(make_host: HostFactory, script: Script, answer: dict[str, Any]) -> None:
    path = script(f"import json, sys\njson.load(sys.stdin)\nprint(json.dumps({answer!r}))", "python")
    host = hooked(make_host, hooks("tool_call", path), replies=[reply(tool_calls=[WRITE]), "ok"])
    assert (await host.run("go")).assert_blocked("write").reason == "no writes"


async def test_tool_call_updated_input_rewrites_the_call(make_host: HostFactory, script: Script) -> None:
    path = script(
        """
        import json, sys
        event = json.load(sys.stdin)
        path = "safe/" + event["tool_input"]["path"]
        answer = {"permissionDecision": "allow", "updatedInput": {"path": path}}
        print(json.dumps({"hookSpecificOutput": answer}))
        """,
        "python",
    )
    host = hooked(
        make_host, hooks("tool_call", path, matcher="write"), replies=[reply(tool_calls=[WRITE]), "ok"]
    )
    (await host.run("go")).assert_not_blocked()
    assert (host.cwd / "safe" / "out.txt").read_text() == "hello"
    assert not (host.cwd / "out.txt").exists()


async def test_tool_call_matcher_limits_the_hook(
    make_host: HostFactory, script: Script, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    path = script(f"touch {marker}")
    host = hooked(
        make_host,
        hooks("tool_call", path, matcher="bash|edit"),
        files={"a.txt": "x"},
        replies=[reply(tool_calls=[tool_call("read", path="a.txt")]), "ok"],
    )
    await host.run("go")
    assert not marker.exists()


async def test_tool_call_ask_uses_the_ui_and_denies_without_one(
    make_host: HostFactory, script: Script
) -> None:
    answer = {"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "really?"}}
    path = script(f"echo '{json.dumps(answer)}'")
    with_ui = hooked(
        make_host,
        hooks("tool_call", path),
        ui=RecordingUI([True]),
        session_options={"mode": "rpc"},
        replies=[reply(tool_calls=[WRITE]), "ok"],
    )
    (await with_ui.run("go")).assert_not_blocked()
    assert with_ui.ui.dialogs == [("confirm", "Allow write?")]
    headless = hooked(make_host, hooks("tool_call", path), replies=[reply(tool_calls=[WRITE]), "ok"])
    assert "really?" in (await headless.run("go")).assert_blocked("write").reason


@pytest.mark.parametrize(
    ("body", "lang", "failure"),
    [
        ("print('hello, I am not JSON')", "python", "printed output that is not a JSON object"),
        ("echo '{not json'", "bash", "printed invalid JSON"),
        ("echo 'crashed' >&2; exit 1", "bash", "exited with status 1: crashed"),
        ('print(\'{"decision": "maybe"}\')', "python", "malformed JSON"),
    ],
)
async def test_a_failing_tool_call_hook_blocks_fail_closed(
    make_host: HostFactory, script: Script, body: str, lang: str, failure: str
) -> None:
    path = script(body, lang)
    host = hooked(make_host, hooks("tool_call", path), replies=[reply(tool_calls=[WRITE]), "carried on"])
    outcome = await host.run("go")
    reason = outcome.assert_blocked("write").reason
    assert failure in reason and "fail closed" in reason
    assert any(failure in message for message in warnings(host))
    outcome.assert_text("carried on")


async def test_a_hanging_tool_call_hook_is_killed_and_blocks(
    make_host: HostFactory, script: Script, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    path = script(f"sleep 300 & echo $! > {pids}\nsleep 300")
    # Long enough for a loaded machine's shell to start its child and record it before the kill.
    host = hooked(
        make_host, hooks("tool_call", path, timeout=2), replies=[reply(tool_calls=[WRITE]), "went on"]
    )
    started = time.monotonic()
    outcome = await host.run("go")
    assert time.monotonic() - started < 60  # the timeout ended it, not the script's 300 s
    assert "timed out after 2 s" in outcome.assert_blocked("write").reason
    outcome.assert_text("went on")
    stat = Path(f"/proc/{int(pids.read_text())}/stat")

    def alive() -> bool:
        try:
            return b") Z" not in stat.read_bytes()
        except OSError:
            return False

    deadline = time.monotonic() + 30  # a bound for a failure, not a speed requirement
    while alive():
        assert time.monotonic() < deadline, "the hook's background child survived the timeout"
        time.sleep(0.01)


# -- tool_result --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "expected_text", "expected_error"),
    [
        ({"hookSpecificOutput": {"updatedToolOutput": "REDACTED"}}, ["REDACTED"], False),
        (
            {"hookSpecificOutput": {"additionalContext": "note: generated file"}},
            ["alpha", "note: generated file"],
            False,
        ),
        ({"decision": "block", "reason": "lint failed"}, ["alpha", "lint failed"], False),
        ({"hookSpecificOutput": {"isError": True}}, ["alpha"], True),
    ],
)
async def test_tool_result_answers(
    make_host: HostFactory,
    script: Script,
    answer: dict[str, Any],
    expected_text: list[str],
    expected_error: bool,
) -> None:
    path = script(
        f"""
        import json, sys
        event = json.load(sys.stdin)
        assert event["tool_response"]["is_error"] is False and "alpha" in event["tool_response_text"]
        print(json.dumps({answer!r}))
        """,
        "python",
    )
    host = hooked(
        make_host,
        hooks("PostToolUse", path, matcher="read"),
        files={"a.txt": "alpha"},
        replies=[reply(tool_calls=[tool_call("read", path="a.txt")]), "ok"],
    )
    outcome = await host.run("go")
    (result,) = outcome.tool_results
    texts = [block.text for block in result.content if block.type == "text"]
    assert [any(e in t for t in texts) for e in expected_text] == [True] * len(expected_text)
    assert len(texts) == len(expected_text)
    assert result.is_error is expected_error


async def test_tool_result_exit_2_feeds_stderr_back(make_host: HostFactory, script: Script) -> None:
    path = script("echo 'tests now fail' >&2; exit 2")
    host = hooked(make_host, hooks("tool_result", path), replies=[reply(tool_calls=[WRITE]), "ok"])
    (result,) = (await host.run("go")).tool_results
    assert result.content[-1].text == "tests now fail"


async def test_tool_result_garbage_is_reported_and_ignored(make_host: HostFactory, script: Script) -> None:
    path = script("echo garbage")
    host = hooked(
        make_host,
        hooks("tool_result", path),
        files={"a.txt": "alpha"},
        replies=[reply(tool_calls=[tool_call("read", path="a.txt")]), "ok"],
    )
    (result,) = (await host.run("go")).tool_results
    assert "alpha" in result.content[0].text and len(result.content) == 1
    assert any("not a JSON object" in message for message in warnings(host))


# -- input and before_agent_start ----------------------------------------------------------------


async def test_input_exit_2_blocks_the_prompt(make_host: HostFactory, script: Script) -> None:
    path = script("echo 'no prompts about secrets' >&2; exit 2")
    host = hooked(make_host, hooks("UserPromptSubmit", path), replies=["should not be asked"])
    await host.run("tell me the secret")
    assert host.provider.requests == []
    assert any("no prompts about secrets" in message for message in warnings(host))


async def test_input_updated_prompt_and_context(make_host: HostFactory, script: Script) -> None:
    path = script(
        """
        import json, sys
        prompt = json.load(sys.stdin)["prompt"]
        out = {"hookSpecificOutput": {"updatedPrompt": prompt.upper(), "additionalContext": "branch: main"}}
        print(json.dumps(out))
        """,
        "python",
    )
    host = hooked(make_host, hooks("input", path), replies=["ok"])
    await host.run("fix the bug")
    request = host.provider.requests[0]
    assert "FIX THE BUG" in request.user_texts
    assert any("branch: main" in text for text in request.user_texts)


async def test_input_plain_stdout_is_context(make_host: HostFactory, script: Script) -> None:
    path = script("echo 'today is a holiday'")
    host = hooked(make_host, hooks("input", path), replies=["ok"])
    await host.run("plan my day")
    assert any("today is a holiday" in text for text in host.provider.requests[0].user_texts)


async def test_before_agent_start_context_and_system_prompt(make_host: HostFactory, script: Script) -> None:
    answer = {"hookSpecificOutput": {"additionalContext": "CI is red", "systemPrompt": "You are terse."}}
    path = script(f"cat > /dev/null; echo '{json.dumps(answer)}'")
    host = hooked(make_host, hooks("before_agent_start", path), replies=["ok"])
    await host.run("status?")
    request = host.provider.requests[0]
    assert request.system_prompt == "You are terse."
    assert any("CI is red" in text for text in request.user_texts)


async def test_before_agent_start_garbage_json_is_reported(make_host: HostFactory, script: Script) -> None:
    path = script("echo '{oops'")
    host = hooked(make_host, hooks("before_agent_start", path), replies=["ok"])
    (await host.run("hi")).assert_text("ok")
    assert any("printed invalid JSON" in message for message in warnings(host))


# -- turn_end and agent_end ----------------------------------------------------------------------


async def test_turn_end_context_steers_the_next_turn(
    make_host: HostFactory, script: Script, tmp_path: Path
) -> None:
    seen = tmp_path / "turns"
    path = script(
        f"""
        import json, sys
        event = json.load(sys.stdin)
        open({str(seen)!r}, "a").write(str(event["turn_index"]) + "\\n")
        if event["turn_index"] == 0:
            print(json.dumps({{"hookSpecificOutput": {{"additionalContext": "remember the tests"}}}}))
        """,
        "python",
    )
    host = hooked(
        make_host,
        hooks("turn_end", path),
        files={"a.txt": "alpha"},
        replies=[reply(tool_calls=[tool_call("read", path="a.txt")]), "second"],
    )
    outcome = await host.run("go")
    assert outcome.requests == 2
    assert any("remember the tests" in text for text in host.provider.requests[1].user_texts)
    assert seen.read_text().split() == ["0", "1"]


async def test_turn_end_context_after_the_final_reply_waits_for_the_next_prompt(
    make_host: HostFactory, script: Script
) -> None:
    answer = json.dumps({"hookSpecificOutput": {"additionalContext": "lint is clean"}})
    path = script(f"cat >/dev/null; echo '{answer}'")  # answers after every turn
    host = hooked(make_host, hooks("turn_end", path), replies=["first", "second"])
    assert (await host.run("go")).requests == 1  # no extra turn: the agent may stop
    await host.run("next")
    assert any("lint is clean" in text for text in host.provider.requests[1].user_texts)


async def test_agent_end_block_keeps_the_agent_going_once(make_host: HostFactory, script: Script) -> None:
    path = script(
        """
        import json, sys
        event = json.load(sys.stdin)
        if not event["stop_hook_active"]:
            print(json.dumps({"decision": "block", "reason": "you forgot to run the tests"}))
        """,
        "python",
    )
    host = hooked(make_host, hooks("Stop", path), replies=["done?", "ran them"])
    await host.run("go")
    session = await host.session()
    await session.agent.wait_for_idle()
    for _ in range(200):  # the continuation is started by the hook; wait for it to finish
        if len(host.provider.requests) == 2 and not session.is_streaming:
            break
        await anyio.sleep(0.01)
    assert len(host.provider.requests) == 2
    assert any("you forgot to run the tests" in t for t in host.provider.requests[1].user_texts)


# -- session events --------------------------------------------------------------------------------


async def test_session_start_context_reaches_the_first_run(make_host: HostFactory, script: Script) -> None:
    path = script("cat >/dev/null; echo 'repo: pi-host, 3 open issues'")
    host = hooked(make_host, hooks("SessionStart", path, matcher="startup"), replies=["ok"])
    await host.run("hi")
    assert any("3 open issues" in text for text in host.provider.requests[0].user_texts)


async def test_session_shutdown_hook_runs_with_the_reason(
    make_host: HostFactory, script: Script, tmp_path: Path
) -> None:
    out = tmp_path / "reason"
    path = script(f"python3 -c 'import json,sys; print(json.load(sys.stdin)[\"reason\"])' > {out}")
    host = hooked(make_host, hooks("session_shutdown", path))
    await host.session()
    await host.close()
    assert out.read_text().strip() == "quit"


class Preparer:
    """Prepares a compaction that keeps the last entry (stands in for pi-compaction)."""

    @hookimpl
    def pi_addhooks(self, pluginmanager: Any) -> None:
        pluginmanager.add_hookspecs(pi_compaction.hookspecs)  # comes with its sequence

    @hookimpl
    def pi_register_commands(self, register: Any) -> None:
        register(pi_compaction.compact_command())  # pi's compaction sequence, this class's cut

    @hookimpl
    def pi_compaction_prepare(self, branch_entries: list[Any]) -> CompactionPreparation:
        return CompactionPreparation(first_kept_entry_id=branch_entries[-1].id, tokens_before=1234)


@pytest.mark.parametrize(
    ("body", "lang", "summary"),
    [
        ("echo 'not now' >&2; exit 2", "bash", None),
        ('print(\'{"decision": "block", "reason": "not now"}\')', "python", None),
        (
            'print(\'{"hookSpecificOutput": {"summary": "We fixed the parser."}}\')',
            "python",
            "We fixed the parser.",
        ),
    ],
)
async def test_session_before_compact_cancels_or_summarises(
    make_host: HostFactory, script: Script, body: str, lang: str, summary: str | None
) -> None:
    path = script(body, lang)
    host = make_host(
        pi_shell_hooks, Preparer(), load=["tools_fs"], settings=hooks("PreCompact", path), replies=["a", "b"]
    )
    await host.run("one")
    await host.run("two")
    session = await host.session()
    result = await session.compact()
    if summary is None:
        assert result is None
        assert not [e for e in session.session_manager.get_entries() if e.type == "compaction"]
    else:
        assert result is not None and result.summary == summary and result.tokens_before == 1234


async def test_a_hanging_observer_hook_is_reported_and_the_session_goes_on(
    make_host: HostFactory, script: Script
) -> None:
    path = script("sleep 300")
    host = hooked(make_host, hooks("turn_end", path, timeout=0.3), replies=["ok"])
    (await host.run("go")).assert_text("ok")
    assert any("timed out after 0.3 s" in message for message in warnings(host))


# -- configuration -------------------------------------------------------------------------------


async def test_project_hooks_need_trust(make_host: HostFactory, script: Script, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    project_settings = json.dumps(hooks("input", f"touch {marker}"))
    untrusted = hooked(
        make_host,
        {},
        files={".pi/settings.json": project_settings},
        session_options={"approve": False},
        replies=["a"],
    )
    await untrusted.run("hi")
    assert not marker.exists()
    trusted = hooked(
        make_host,
        {},
        files={".pi/settings.json": project_settings},
        session_options={"approve": True},
        replies=["a"],
    )
    await trusted.run("hi")
    assert marker.exists()


def test_configuration_problems_are_named(tmp_path: Path) -> None:
    config = pi_shell_hooks.HookConfig()
    pi_shell_hooks.parse_hooks(
        {
            "Notification": [{"hooks": [{"command": "x"}]}],
            "tool_call": [
                {"matcher": "(", "hooks": [{"command": "x"}]},
                {"hooks": [{"type": "http", "url": "x"}]},
                {"hooks": [{"timeout": 3}]},
                {"matcher": "bash", "args": ["python3", "-c", "pass"], "timeout": -1},
            ],
        },
        "global",
        "settings.json",
        config,
    )
    text = "\n".join(config.problems)
    assert "hooks.Notification is not an event" in text
    assert "is not a regular expression" in text
    assert "hook type 'http' is not supported" in text
    assert 'give "command"' in text
    assert "timeout must be a positive number" in text
    commands = config.commands["tool_call"]
    assert [c.argv for c in commands][-1] == ("python3", "-c", "pass")
    assert commands[0].matches("(") and not commands[0].matches("bash")


async def test_disable_all_hooks(make_host: HostFactory, script: Script, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    settings = {**hooks("input", f"touch {marker}"), "disableAllHooks": True}
    await hooked(make_host, settings, replies=["a"]).run("hi")
    assert not marker.exists()
