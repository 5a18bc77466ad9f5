"""pi's interactive terminal mode: prompt_toolkit for the editor, rich for the transcript.

:func:`run_interactive` drives any object implementing :class:`InteractiveSession`; the session
runtime implements it, and the tests drive it with a scripted fake in a pseudo-terminal.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ._driver import (
    AutoRetryEndEvent,
    AutoRetryStartEvent,
    CompactionEndEvent,
    CompactionStartEvent,
    ContextUsage,
    ForkPoint,
    ImportResult,
    InteractiveSession,
    LoginProvider,
    LoginResult,
    PluginCommand,
    QueueUpdateEvent,
    SessionInfoChangedEvent,
    SessionListing,
    StoredCredential,
    StreamingBehavior,
    SwitchResult,
    ThinkingLevelChangedEvent,
    TreeNode,
    TrustState,
    UserBashResult,
)
from ._quit import QuitRequest
from ._ui_bridge import UiBridge

if TYPE_CHECKING:
    from prompt_toolkit.input import Input
    from prompt_toolkit.output import Output

__all__ = [
    "AutoRetryEndEvent",
    "AutoRetryStartEvent",
    "CompactionEndEvent",
    "CompactionStartEvent",
    "ContextUsage",
    "ForkPoint",
    "ImportResult",
    "InteractiveSession",
    "LoginProvider",
    "LoginResult",
    "PluginCommand",
    "QueueUpdateEvent",
    "QuitRequest",
    "SessionInfoChangedEvent",
    "SessionListing",
    "StoredCredential",
    "StreamingBehavior",
    "SwitchResult",
    "ThinkingLevelChangedEvent",
    "TreeNode",
    "TrustState",
    "UiBridge",
    "UserBashResult",
    "run_interactive",
]


async def run_interactive(
    session: InteractiveSession,
    *,
    initial_messages: Sequence[str] = (),
    version: str = "",
    app_name: str = "pi-host",
    show_history: bool = True,
    hide_thinking: bool = False,
    verbose: bool = False,
    open_resume_picker: bool = False,
    quit_request: QuitRequest | None = None,
    input: Input | None = None,
    output: Output | None = None,
) -> None:
    """Run the interactive mode on ``session`` until the user quits.

    :param initial_messages: prompts sent one after another once the screen is up (pi's
        positional messages).
    :param show_history: print the session's existing messages first (a resumed session).
    :param hide_thinking: show thinking blocks as a one-line label (Ctrl+T toggles).
    :param verbose: show the start-up header even when ``quietStartup`` is set (``--verbose``).
    :param open_resume_picker: open the session picker once the screen is up (``-r``); picking
        nothing leaves the new session open.
    :param quit_request: quits as ``/quit`` does once requested (SIGTERM and SIGHUP, which
        the caller watches); requested with ``terminal_gone``, the rest of the transcript is not
        written to the terminal that hung up.
    :param input: / :param output: prompt_toolkit input and output; the terminal by default.
    """
    from ._app import InteractiveApp

    app = InteractiveApp(
        session,
        version=version,
        app_name=app_name,
        show_history=show_history,
        hide_thinking=hide_thinking,
        verbose=verbose,
        input=input,
        output=output,
    )
    await app.run(initial_messages, open_resume_picker=open_resume_picker, quit_request=quit_request)
