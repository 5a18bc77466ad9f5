"""Every event with the three misbehaving hooks, in bash and in Python.

A hook that hangs is killed at its timeout and reported; one that prints garbage is reported;
one that exits 2 blocks where the event can be blocked. In every case the session goes on, and
``tool_call`` fails closed.
"""

from __future__ import annotations

from typing import Any

import pi_compaction
import pi_compaction.hookspecs
import pi_shell_hooks
import pytest

from pi_host import hookimpl
from pi_host.hookspecs import CompactionPreparation
from pi_host.testing import HostFactory, IsolatedHost, reply, tool_call

from .conftest import Script

SCRIPTS = {
    ("hang", "bash"): "sleep 300",
    ("hang", "python"): "import time\ntime.sleep(300)",
    ("garbage", "bash"): "echo '{garbage'",
    ("garbage", "python"): "print('{garbage')",
    ("exit2", "bash"): "echo 'stop: reason' >&2; exit 2",
    ("exit2", "python"): "import sys\nsys.stderr.write('stop: reason')\nsys.exit(2)",
}

FAILURE_TEXT = {"hang": "timed out after 0.5 s", "garbage": "printed invalid JSON"}


class Preparer:
    @hookimpl
    def pi_addhooks(self, pluginmanager: Any) -> None:
        pluginmanager.add_hookspecs(pi_compaction.hookspecs)  # comes with its sequence

    @hookimpl
    def pi_register_commands(self, register: Any) -> None:
        register(pi_compaction.compact_command())  # pi's compaction sequence, this class's cut

    @hookimpl
    def pi_compaction_prepare(self, branch_entries: list[Any]) -> CompactionPreparation:
        return CompactionPreparation(first_kept_entry_id=branch_entries[-1].id, tokens_before=10)


def warnings(host: IsolatedHost) -> str:
    return "\n".join(message for message, level in host.ui.notifications if level == "warning")


@pytest.mark.parametrize("event", pi_shell_hooks.EVENTS)
@pytest.mark.parametrize("kind", ["hang", "garbage", "exit2"])
@pytest.mark.parametrize("lang", ["bash", "python"])
async def test_misbehaving_hook(
    make_host: HostFactory, script: Script, event: str, kind: str, lang: str
) -> None:
    path = script(SCRIPTS[(kind, lang)], lang)
    settings = {"hooks": {event: [{"hooks": [{"command": path, "timeout": 0.5}]}]}}
    host = make_host(
        pi_shell_hooks,
        Preparer(),
        load=["tools_fs"],
        settings=settings,
        files={"a.txt": "alpha"},
        replies=[reply(tool_calls=[tool_call("read", path="a.txt")]), "ok", "more", "more", "more"],
    )
    if event == "session_shutdown":
        await host.session()
        await host.close()
    elif event == "session_before_compact":
        await host.run("go")
        session = await host.session()
        result = await session.compact()
        assert result is None  # cancelled (exit 2) or nothing supplied: no compaction entry
        assert not [e for e in session.session_manager.get_entries() if e.type == "compaction"]
    else:
        outcome = await host.run("go")
        session = await host.session()
        await session.agent.wait_for_idle()
        if event == "input" and kind == "exit2":
            assert host.provider.requests == []  # the prompt was dropped
            assert "stop: reason" in warnings(host)
            return
        texts = [
            b.text for m in outcome.messages if m.role == "assistant" for b in m.content if b.type == "text"
        ]
        assert "ok" in texts  # the run went on
        (result,) = outcome.tool_results
        if event == "tool_call":
            assert result.is_error  # fail closed, or blocked by exit 2
            text = result.content[0].text
            assert ("stop: reason" if kind == "exit2" else "fail closed") in text
        elif event == "tool_result" and kind == "exit2":
            assert result.content[-1].text == "stop: reason"
        else:
            assert not result.is_error and "alpha" in result.content[0].text
    if kind != "exit2":
        assert FAILURE_TEXT[kind] in warnings(host)
    elif event in ("before_agent_start", "session_start", "session_shutdown"):
        assert "cannot block: stop: reason" in warnings(host)
