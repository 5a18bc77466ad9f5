"""A child session (a sub-agent's, ``ctx.create_child_session``) uses its parent's running
servers, found through ``ctx.parent_stash``; the parent's session owns them.

The children here are made by hand, as pi-subagents' ``task`` tool makes them (its own tests
run three children at once on a shared server: plugins/pi_subagents/tests/test_mcp_sharing.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pi_mcp
import pytest

from pi_host import SessionOptions, hookimpl
from pi_host.testing import HostFactory, RecordingUI


class Capture:
    """Every session's manager, in the order the sessions started (parent first)."""

    def __init__(self) -> None:
        self.managers: list[Any] = []

    @hookimpl(trylast=True)
    def pi_session_start(self, ctx: Any) -> None:
        self.managers.append(pi_mcp.manager_of(ctx))


def build(make_host: HostFactory, demo: Any, **server: Any) -> tuple[Any, Capture, RecordingUI]:
    capture, ui = Capture(), RecordingUI()
    settings = {"mcp": {"servers": {"demo": demo.stdio("demo", **server)}}}
    host = make_host(
        pi_mcp, capture, settings=settings, ui=ui, replies=["ok"] * 4, session_options={"mode": "tui"}
    )
    return host, capture, ui


async def test_a_child_borrows_the_running_server_and_leaves_it_running(
    make_host: HostFactory, demo: Any
) -> None:
    host, capture, ui = build(make_host, demo)
    (await host.run("hello")).assert_ok()
    parent = await host.session()
    connection = capture.managers[0].connections["demo"]
    assert connection.state == "ready" and connection.starts == 1
    child = await parent.ctx.create_child_session(SessionOptions(cwd=str(host.cwd), mode="tui"))
    await child.start("startup")
    mine = capture.managers[1]
    assert mine.borrowed == {"demo"} and mine.connections["demo"] is connection
    await child.prompt("use it")
    await child.agent.wait_for_idle()
    assert "mcp__demo__echo" in child.ctx.get_active_tools()
    await child.prompt("/mcp restart")  # refused: the parent's server, other children may use it
    assert "is the parent session's" in ui.notifications[-2][0]
    assert "demo (stdio): ready, the parent session's" in ui.notifications[-1][0]
    await child.shutdown("quit")
    assert connection.state == "ready" and connection.starts == 1 and not connection.closed
    await host.close()
    assert connection.closed and connection.state == "stopped"


async def test_a_child_elsewhere_starts_its_own_server(
    make_host: HostFactory, demo: Any, tmp_path: Path
) -> None:
    host, capture, _ = build(make_host, demo)
    (await host.run("hello")).assert_ok()
    parent = await host.session()
    elsewhere = tmp_path / "worktree"
    elsewhere.mkdir()
    # A stdio server may work on the directory it runs in: a child in another one (a
    # worktree of its own) gets a server of its own.
    child = await parent.ctx.create_child_session(SessionOptions(cwd=str(elsewhere)))
    await child.start("startup")
    await child.prompt("use it")
    await child.agent.wait_for_idle()
    parents, own = capture.managers[0].connections["demo"], capture.managers[1].connections["demo"]
    assert capture.managers[1].borrowed == set() and own is not parents
    assert own.state == "ready" and own.starts == 1
    await child.shutdown("quit")
    assert own.closed and own.state == "stopped"
    assert parents.state == "ready" and not parents.closed
    await host.close()


async def test_a_server_the_parent_stopped_is_not_started_again_by_its_child(
    make_host: HostFactory, demo: Any
) -> None:
    host, capture, _ = build(make_host, demo)
    (await host.run("hello")).assert_ok()
    parent = await host.session()
    child = await parent.ctx.create_child_session(SessionOptions(cwd=str(host.cwd)))
    await child.start("startup")
    connection = capture.managers[1].connections["demo"]
    await host.close()  # the parent ends first (a program that forgot its child)
    with pytest.raises(
        Exception, match='MCP server "demo" was stopped: the session that started it has ended'
    ):
        await connection.ensure_started()
    assert connection.starts == 1 and connection.state == "stopped"
    await child.shutdown("quit")
