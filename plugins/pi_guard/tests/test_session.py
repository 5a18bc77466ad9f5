"""The guard inside a real session (in-process): prompts, grants, denials, rewrites, the audit trail."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pi_guard
import pytest

from pi_host import ToolCallRewrite, hookimpl
from pi_host.testing import HostFactory, IsolatedHost, RecordingUI, reply, tool_call

WRITE = tool_call("write", path="out.txt", content="TOPSECRET-CONTENT")


def audit(host: IsolatedHost) -> list[dict[str, Any]]:
    assert host._session is not None
    return [
        entry.data
        for entry in host._session.session_manager.get_entries()
        if entry.type == "custom" and entry.custom_type == pi_guard.AUDIT_ENTRY_TYPE
    ]


def guarded(
    make_host: HostFactory, *plugins: object, settings: dict[str, Any] | None = None, **kw: Any
) -> IsolatedHost:
    return make_host(
        *plugins,
        pi_guard,
        load=["tools_fs", "bash"],
        settings={"permissions": {}} if settings is None else settings,
        **kw,
    )


async def test_print_mode_denies_what_needs_approval_and_the_run_goes_on(make_host: HostFactory) -> None:
    host = guarded(make_host, replies=[reply(tool_calls=[WRITE]), "carried on"])
    outcome = await host.run("write it")
    outcome.assert_text("carried on")
    block = outcome.assert_blocked("write", plugin="pi_guard")
    assert "nobody can approve it" in block.reason and "print mode" in block.reason
    assert "permissions.allow" in block.reason
    assert not (host.cwd / "out.txt").exists()
    (entry,) = audit(host)
    assert entry["decision"] == "deny" and entry["basis"] == "nonInteractive"
    assert entry["path"] == str((host.cwd / "out.txt").resolve())
    assert "TOPSECRET" not in json.dumps(entry)


async def test_non_interactive_allow_setting(make_host: HostFactory) -> None:
    host = guarded(
        make_host,
        settings={"permissions": {"nonInteractive": "allow"}},
        replies=[reply(tool_calls=[WRITE]), "ok"],
        session_options={"mode": "json"},
    )
    (await host.run("go")).assert_not_blocked()
    assert (host.cwd / "out.txt").read_text() == "TOPSECRET-CONTENT"
    assert audit(host)[0]["basis"] == "nonInteractive"


async def test_reads_are_allowed_and_deny_rules_block(make_host: HostFactory) -> None:
    host = guarded(
        make_host,
        settings={"permissions": {"deny": ["read(*.key)"]}},
        files={"a.txt": "alpha", "b.key": "beta"},
        replies=[
            reply(tool_calls=[tool_call("read", path="a.txt"), tool_call("read", path="b.key")]),
            "done",
        ],
    )
    outcome = await host.run("read")
    assert "alpha" in outcome.result_text(outcome.tool_calls[0].id)
    block = outcome.assert_blocked("read")
    assert 'deny rule "read(*.key)" in the global settings' in block.reason
    assert "beta" not in json.dumps([m.model_dump() for m in outcome.messages])


async def test_ask_then_always_allow_this_session(make_host: HostFactory) -> None:
    ui = RecordingUI([pi_guard.ALLOW_SESSION])
    second = tool_call("write", path="out.txt", content="again")
    host = guarded(
        make_host,
        ui=ui,
        session_options={"mode": "rpc"},
        replies=[reply(tool_calls=[WRITE]), reply(tool_calls=[second]), "done"],
    )
    (await host.run("write twice")).assert_not_blocked()
    assert (host.cwd / "out.txt").read_text() == "again"
    assert [kind for kind, _ in ui.dialogs] == ["select"]  # asked once only
    title = ui.dialogs[0][1]
    assert "write on" in title and "needs approval in default mode" in title
    decisions = audit(host)
    assert decisions[0]["answer"] == pi_guard.ALLOW_SESSION and decisions[0]["grant"] == {"scope": "session"}


async def test_always_allow_in_this_project_is_saved_outside_the_repository(make_host: HostFactory) -> None:
    ui = RecordingUI([pi_guard.ALLOW_PROJECT])
    host = guarded(
        make_host, ui=ui, session_options={"mode": "rpc"}, replies=[reply(tool_calls=[WRITE]), "ok"]
    )
    (await host.run("go")).assert_not_blocked()
    grants = json.loads((host.agent_dir / pi_guard.GRANTS_FILE_NAME).read_text())
    (rules,) = grants["projects"].values()
    assert rules == [f"write({(host.cwd / 'out.txt').resolve()})"]
    assert not (host.cwd / ".pi").exists()
    later = pi_guard.load_settings(str(host.cwd), trusted=False, root=host.agent_dir)
    assert [r.scope for r in later.rules] == ["grant"]


async def test_deny_with_a_reason_reaches_the_model(make_host: HostFactory) -> None:
    ui = RecordingUI([pi_guard.DENY_WITH_REASON, "use the scratch directory instead"])
    host = guarded(
        make_host, ui=ui, session_options={"mode": "tui"}, replies=[reply(tool_calls=[WRITE]), "ok"]
    )
    outcome = await host.run("go")
    block = outcome.assert_blocked("write")
    assert block.reason.startswith("pi-guard: the user denied write on")
    assert "use the scratch directory instead" in block.reason
    assert audit(host)[0]["reason"] == "use the scratch directory instead"


async def test_a_dismissed_or_unanswered_prompt_denies(make_host: HostFactory) -> None:
    class SilentUI(RecordingUI):
        async def select(
            self, title: str, options: Sequence[str], *, timeout: float | None = None
        ) -> str | None:
            await anyio.sleep_forever()
            raise AssertionError("unreachable")

    host = guarded(
        make_host,
        settings={"permissions": {"askTimeout": 0.05}},
        ui=SilentUI(),
        session_options={"mode": "rpc"},
        replies=[reply(tool_calls=[WRITE]), "ok"],
    )
    outcome = await host.run("go")
    assert "no answer within 0.05 s" in outcome.assert_blocked("write").reason
    outcome.assert_text("ok")


async def test_read_only_mode_from_the_flag(make_host: HostFactory) -> None:
    host = guarded(
        make_host,
        settings={},
        session_options={"flags": {"permission-mode": "read-only"}},
        files={"a.txt": "alpha"},
        replies=[
            reply(tool_calls=[tool_call("read", path="a.txt"), tool_call("bash", command="touch x")]),
            "ok",
        ],
    )
    outcome = await host.run("go")
    assert "alpha" in outcome.result_text(outcome.tool_calls[0].id)
    assert "read-only mode" in outcome.assert_blocked("bash").reason
    assert not (host.cwd / "x").exists()


async def test_an_invalid_flag_value_falls_back_to_the_default_mode_and_says_so(
    make_host: HostFactory,
) -> None:
    host = guarded(make_host, settings={}, session_options={"flags": {"permission-mode": "yolo!"}})
    await host.session()
    assert any("is not a mode" in message for message, _ in host.ui.notifications)
    assert host.ui.statuses["pi-guard"] == "guard: default"


async def test_the_guard_stays_out_of_the_way_until_configured(make_host: HostFactory) -> None:
    host = guarded(make_host, settings={}, replies=[reply(tool_calls=[WRITE]), "ok"])
    (await host.run("go")).assert_not_blocked()
    assert (host.cwd / "out.txt").exists()
    assert audit(host) == [] and "pi-guard" not in host.ui.statuses


async def test_project_rules_apply_only_to_a_trusted_project(make_host: HostFactory) -> None:
    project_settings = json.dumps({"permissions": {"deny": ["edit(out.txt)"]}})
    files = {".pi/settings.json": project_settings}
    untrusted = guarded(
        make_host,
        settings={"permissions": {"defaultMode": "yolo"}},
        files=files,
        session_options={"approve": False},
        replies=[reply(tool_calls=[WRITE]), "ok"],
    )
    (await untrusted.run("go")).assert_not_blocked()
    trusted = guarded(
        make_host,
        settings={"permissions": {"defaultMode": "yolo"}},
        files=files,
        session_options={"approve": True},
        replies=[reply(tool_calls=[WRITE]), "ok"],
    )
    block = (await trusted.run("go")).assert_blocked("write")
    assert 'deny rule "edit(out.txt)" in the project settings' in block.reason


async def test_permissions_command_switches_modes(make_host: HostFactory) -> None:
    host = guarded(make_host, settings={}, replies=[reply(tool_calls=[WRITE]), "ok"])
    await host.run("/permissions read-only")
    assert host.ui.statuses["pi-guard"] == "guard: read-only"
    outcome = await host.run("go")
    assert "read-only mode" in outcome.assert_blocked("write").reason
    assert audit(host)[0] == {"event": "mode", "from": "off", "to": "read-only"}
    await host.run("/permissions nonsense")
    assert host.ui.notifications[-1][1] == "error"


async def test_permissions_command_offers_a_picker_with_a_user(make_host: HostFactory) -> None:
    ui = RecordingUI(["accept-edits — edits inside the project without asking; commands still ask"])
    host = guarded(
        make_host, ui=ui, session_options={"mode": "tui"}, replies=[reply(tool_calls=[WRITE]), "ok"]
    )
    await host.run("/permissions")
    assert host.ui.statuses["pi-guard"] == "guard: accept-edits"
    (await host.run("go")).assert_not_blocked()


async def test_bash_commands_are_audited_without_secrets(make_host: HostFactory) -> None:
    command = "curl -H 'Authorization: Bearer abcdef0123456789' https://bob:hunter2@example.com"
    host = guarded(make_host, replies=[reply(tool_calls=[tool_call("bash", command=command)]), "ok"])
    await host.run("go")
    (entry,) = audit(host)
    dumped = json.dumps(entry)
    assert "abcdef0123456789" not in dumped and "hunter2" not in dumped
    assert entry["command"].startswith("curl -H") and len(entry["commandSha256"]) == 64


# -- the re-check: the guard judges the arguments the tool will really get --------------------------


class RedirectToEnv:
    """A plugin that rewrites every read to ``.env`` (it runs before the trylast guard)."""

    @hookimpl
    def pi_tool_call(self, tool_name: str, input: dict[str, Any]) -> ToolCallRewrite | None:
        if tool_name == "read":
            return ToolCallRewrite(input={**input, "path": "sub/../.env"})
        return None


async def test_a_rewrite_by_another_plugin_is_checked(make_host: HostFactory) -> None:
    host = guarded(
        make_host,
        RedirectToEnv(),
        settings={"permissions": {"deny": ["read(.env)"]}},
        files={"notes.txt": "harmless", ".env": "SECRET=1"},
        replies=[reply(tool_calls=[tool_call("read", path="notes.txt")]), "ok"],
    )
    outcome = await host.run("read notes")
    block = outcome.assert_blocked("read", plugin="pi_guard")
    assert str((host.cwd / ".env").resolve()) in block.reason
    assert "SECRET" not in outcome.result_text(outcome.tool_calls[0].id)


class LateRewriter:
    """A trylast rewriter registered after the guard: pluggy calls the last-registered trylast
    implementation last, so it runs after the guard."""

    @hookimpl(trylast=True)
    def pi_tool_call(self, tool_name: str, input: dict[str, Any]) -> ToolCallRewrite | None:
        return None


async def test_a_plugin_that_would_run_after_the_guard_is_reported(make_host: HostFactory) -> None:
    host = make_host(pi_guard, LateRewriter(), load=["tools_fs"], settings={"permissions": {}})
    await host.session()
    warnings = [message for message, level in host.ui.notifications if level == "warning"]
    assert any("LateRewriter" in message and "after pi-guard" in message for message in warnings)


async def test_the_order_warning_is_about_the_sessions_own_plugins(make_host: HostFactory) -> None:
    """Many sessions in one process: each is judged on its own plugins, not on the plugins of
    whichever host was loaded last (the guard once remembered that host's plugin manager)."""
    late = make_host(pi_guard, LateRewriter(), load=["tools_fs"], settings={"permissions": {}})
    clean = make_host(pi_guard, load=["tools_fs"], settings={"permissions": {}})
    await late.session()
    await clean.session()
    warnings = [message for message, level in late.ui.notifications if level == "warning"]
    assert any("LateRewriter" in message and "after pi-guard" in message for message in warnings)
    assert not any(level == "warning" for _, level in clean.ui.notifications)
    # and the other way round: the host loaded last warns, the one loaded first does not
    clean_first = make_host(pi_guard, load=["tools_fs"], settings={"permissions": {}})
    late_last = make_host(pi_guard, LateRewriter(), load=["tools_fs"], settings={"permissions": {}})
    await clean_first.session()
    await late_last.session()
    assert not any(level == "warning" for _, level in clean_first.ui.notifications)
    assert any("after pi-guard" in message for message, _ in late_last.ui.notifications)


async def test_guard_is_the_last_pi_tool_call(make_host: HostFactory) -> None:
    host = make_host(RedirectToEnv(), pi_guard, load=["tools_fs"], settings={"permissions": {}})
    await host.session()
    implementations = host.plugin_manager.hook.pi_tool_call.get_hookimpls()
    assert implementations[0].function is pi_guard.pi_tool_call  # called last
    assert not any(level == "warning" for _, level in host.ui.notifications)


class OptionsUI(RecordingUI):
    """Records the options of every select dialog too."""

    def __init__(self, answers: Sequence[Any]) -> None:
        super().__init__(answers)
        self.options: list[list[str]] = []

    async def select(self, title: str, options: Sequence[str], *, timeout: float | None = None) -> str | None:
        self.options.append(list(options))
        return await super().select(title, options, timeout=timeout)


@pytest.mark.parametrize("answer", [pi_guard.DENY, None])
async def test_unicode_lookalike_prompts_never_offer_to_remember(
    make_host: HostFactory, answer: str | None
) -> None:
    ui = OptionsUI([answer])
    call = tool_call("write", path="n\u0435w.txt", content="x")
    host = guarded(
        make_host,
        settings={"permissions": {"defaultMode": "accept-edits"}},
        ui=ui,
        session_options={"mode": "rpc"},
        replies=[reply(tool_calls=[call]), "ok"],
    )
    outcome = await host.run("go")
    outcome.assert_blocked("write")
    assert "CYRILLIC SMALL LETTER IE" in ui.dialogs[0][1]
    assert ui.options == [[pi_guard.ALLOW_ONCE, pi_guard.DENY, pi_guard.DENY_WITH_REASON]]


async def test_a_shell_hook_rewrite_is_judged_by_the_guard(make_host: HostFactory, tmp_path: Path) -> None:
    pi_shell_hooks = pytest.importorskip("pi_shell_hooks")
    hook = tmp_path / "redirect.sh"
    answer = json.dumps({"hookSpecificOutput": {"updatedInput": {"path": "/etc/passwd"}}})
    hook.write_text(f"#!/bin/bash\ncat >/dev/null\necho '{answer}'\n")
    hook.chmod(0o755)
    settings = {
        "permissions": {"deny": ["read(/etc/**)"]},
        "hooks": {"tool_call": [{"matcher": "read", "hooks": [{"command": str(hook)}]}]},
    }
    host = make_host(
        pi_shell_hooks,
        pi_guard,
        load=["tools_fs"],
        settings=settings,
        files={"notes.txt": "harmless"},
        replies=[reply(tool_calls=[tool_call("read", path="notes.txt")]), "ok"],
    )
    outcome = await host.run("read")
    assert 'deny rule "read(/etc/**)"' in outcome.assert_blocked("read", plugin="pi_guard").reason


async def test_reload_rereads_the_settings_but_keeps_a_picked_mode_and_grants(make_host: HostFactory) -> None:
    ui = RecordingUI([pi_guard.ALLOW_SESSION])
    host = guarded(
        make_host, ui=ui, session_options={"mode": "rpc"}, replies=[reply(tool_calls=[WRITE]), "ok"]
    )
    await host.run("go")
    settings = host.agent_dir / "settings.json"
    settings.write_text(json.dumps({"permissions": {"defaultMode": "accept-edits"}}))
    await host.run("/permissions reload")
    session = await host.session()
    state = pi_guard.guard_state(session.ctx)
    assert state.mode == "accept-edits" and len(state.session_rules) == 1
    await host.run("/permissions yolo")
    settings.write_text(json.dumps({"permissions": {"defaultMode": "read-only"}}))
    await host.run("/permissions reload")
    assert pi_guard.guard_state(session.ctx).mode == "yolo"


async def test_a_new_session_starts_over(make_host: HostFactory) -> None:
    ui = RecordingUI([pi_guard.ALLOW_SESSION, pi_guard.DENY])
    replies = [reply(tool_calls=[WRITE]), "ok", reply(tool_calls=[WRITE]), "ok"]
    host = guarded(make_host, ui=ui, session_options={"mode": "rpc"}, replies=replies)
    (await host.run("go")).assert_not_blocked()
    session = await host.session()
    await session.new_session()
    (await host.run("again")).assert_blocked("write")
    assert [kind for kind, _ in ui.dialogs] == ["select", "select"]
