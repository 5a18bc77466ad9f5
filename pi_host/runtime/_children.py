"""Child sessions: a session in this process with the plugins its parent loaded (sub-agents)."""

from __future__ import annotations

import os
from dataclasses import replace
from typing import TYPE_CHECKING

from ._session import SessionError

if TYPE_CHECKING:
    from ._factory import SessionOptions
    from ._session import AgentSession

__all__ = ["create_child_session"]


async def create_child_session(parent: AgentSession, options: SessionOptions) -> AgentSession:
    """A new session built by ``create_session`` from ``options`` on a fresh host with the
    parent's plugins (loaded the same way: the same installed, ``-e`` and extra plugins).

    What ``options`` leaves unset comes from the parent: the model and thinking level, the
    agent directory, where sessions are kept (beside the parent's file, or in its store; an
    unsaved parent makes an unsaved child), the project's trust, the UI, the plugin flags and
    disabled plugins; ``parentSession`` names the parent's session file (``<store URI>#<id>``
    for a parent kept in a store). The child's plugins reach the parent's stash as
    ``ctx.parent_stash``. The child is not started: call ``start("startup")`` and, when done,
    ``shutdown("quit")``. Its plugins are loaded and its session opened in worker threads, as
    ``create_session`` does without a host.

    :raises SessionError: the parent's host cannot be loaded again (it was built by hand, with
        no ``respawn``), or ``create_session`` refused the options (an unknown model …).
    """
    from ._factory import create_session_loading

    respawn = parent.host.respawn
    if respawn is None:
        raise SessionError(
            "This session's plugins cannot be loaded again for a child session: its host was "
            "assembled by hand; give the Host a respawn function"
        )
    inherited = parent.options
    manager = parent.session_manager
    unsaved = manager.session_file is None and manager.session_store is None
    model = parent.model
    if options.model is None and options.provider is None and model is not None:
        options = replace(
            options,
            provider=model.provider,
            model=model.id,
            thinking=options.thinking or parent.thinking_level,
        )
    filled = replace(
        options,
        agent_dir=options.agent_dir or parent.agent_dir,
        ui=options.ui if options.ui is not None else parent.ui,
        approve=options.approve if options.approve is not None else parent.project_trusted,
        no_session=options.no_session or unsaved,
        parent_session=options.parent_session or manager.session_reference,
    )
    if inherited is not None:
        # Next to the parent's file, wherever that is (--session may have opened one elsewhere).
        beside = None if manager.session_file is None else os.path.dirname(str(manager.session_file))
        filled = replace(
            filled,
            session_dir=options.session_dir or beside or inherited.session_dir,
            session_store=options.session_store or inherited.session_store,
            disabled_plugins=(*inherited.disabled_plugins, *options.disabled_plugins),
            flags={**inherited.flags, **options.flags},
        )
    # The fresh host is the child's alone: loaded off the loop, which the parent shares.
    child = await create_session_loading(filled, load_host=respawn)
    # Before the child starts: its plugins' pi_session_start may look up what the parent's share.
    child.parent_stash = parent.stash
    return child
