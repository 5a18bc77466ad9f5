"""``ctx.create_child_session``: a session in this process with the parent's plugins, linked to
the parent's file and inheriting what the options leave unset."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pi_host import Flag, SessionError, SessionOptions, StashKey, hookimpl
from pi_host.runtime import Host
from pi_host.testing import HostFactory


class _Marker:
    """A plugin that records which sessions started with it, and declares a flag."""

    def __init__(self) -> None:
        self.started: list[str] = []

    @hookimpl
    def pi_register_flags(self, register: Callable[[Flag], None]) -> None:
        register(Flag(name="colour", description="A flag.", type="string"))

    @hookimpl
    def pi_session_start(self, reason: str, previous_session_file: str | None, ctx: Any) -> None:
        self.started.append(ctx.session_manager.session_id)


async def test_child_has_the_parents_plugins_and_links_to_its_file(make_host: HostFactory) -> None:
    marker = _Marker()
    host = make_host(
        marker, replies=["parent answer", "child answer"], session_options={"flags": {"colour": "red"}}
    )
    (await host.run("hello")).assert_ok()
    parent = await host.session()
    child = await parent.ctx.create_child_session(SessionOptions(cwd=str(host.cwd), no_tools=True))
    assert child.host is not parent.host  # a fresh host: stash, tools and registrations of its own
    assert child.agent_dir == parent.agent_dir == str(host.agent_dir)
    assert child.project_trusted == parent.project_trusted
    assert child.ui is parent.ui
    assert child.get_flag("colour") == "red"
    await child.start("startup")
    await child.prompt("child prompt")
    await child.agent.wait_for_idle()
    await child.shutdown("quit")
    assert marker.started == [parent.session_manager.session_id, child.session_manager.session_id]
    parent_file = Path(str(parent.session_manager.session_file))
    child_file = Path(str(child.session_manager.session_file))
    assert child_file.parent == parent_file.parent
    header = json.loads(child_file.read_text().splitlines()[0])
    assert header["parentSession"] == str(parent_file)
    assert [m.role for m in child.messages] == ["user", "assistant"]
    assert [m.role for m in parent.messages] == ["user", "assistant"]  # the parent's stays its own
    await host.close()


class _Sharer:
    """A plugin that shares a value with its child sessions through ``ctx.parent_stash``."""

    KEY = StashKey[str]()

    def __init__(self) -> None:
        self.seen: list[tuple[str | None, str]] = []

    @hookimpl
    def pi_session_start(self, reason: str, previous_session_file: str | None, ctx: Any) -> None:
        parent = ctx.parent_stash
        inherited = parent.get(self.KEY, None) if parent is not None else None
        ctx.stash[self.KEY] = inherited or f"made by {ctx.session_manager.session_id}"
        self.seen.append((inherited, ctx.stash[self.KEY]))


async def test_a_child_sees_its_parents_stash_before_it_starts(make_host: HostFactory) -> None:
    sharer = _Sharer()
    host = make_host(sharer, replies=["ok"])
    parent = await host.session()
    assert parent.ctx.parent_stash is None  # a session of its own
    child = await parent.ctx.create_child_session(SessionOptions(cwd=str(host.cwd), no_tools=True))
    assert child.ctx.parent_stash is parent.stash and child.stash is not parent.stash
    await child.start("startup")
    grandchild = await child.ctx.create_child_session(SessionOptions(cwd=str(host.cwd), no_tools=True))
    assert grandchild.ctx.parent_stash is child.stash
    await grandchild.start("startup")
    made = f"made by {parent.session_manager.session_id}"
    # The parent's value reached the child's pi_session_start, and through it the grandchild's.
    assert sharer.seen == [(None, made), (made, made), (made, made)]
    await grandchild.shutdown("quit")
    await child.shutdown("quit")
    await host.close()


async def test_an_unsaved_parent_makes_an_unsaved_child(make_host: HostFactory) -> None:
    host = make_host(replies=["ok"], session_options={"no_session": True})
    parent = await host.session()
    child = await parent.ctx.create_child_session(SessionOptions(cwd=str(host.cwd)))
    assert child.session_manager.session_file is None
    await host.close()


async def test_a_host_built_by_hand_cannot_have_children(make_host: HostFactory) -> None:
    host = make_host(replies=["ok"])
    parent = await host.session()
    parent.host.respawn = None
    with pytest.raises(SessionError, match="cannot be loaded again for a child session"):
        await parent.ctx.create_child_session(SessionOptions(cwd=str(host.cwd)))
    await host.close()


def test_host_load_can_load_the_same_plugins_again() -> None:
    marker = _Marker()
    host = Host.load(extra_plugins=[marker], controls=None, disabled=())
    assert host.respawn is not None
    again = host.respawn()
    assert again is not host and again.plugin_manager is not host.plugin_manager
    assert marker in again.plugin_manager.get_plugins()
