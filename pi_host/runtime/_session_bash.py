"""The user's ``!cmd``: run through ``pi_user_bash``, recorded in the conversation.

A command that finishes while a run streams is held back and recorded once the run is over,
so it never lands between a tool call and its result (pi's rule).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from pi_host.messages import BashExecutionMessage, now_ms
from pi_host.providers import AbortSignal

from ._session_types import SessionError

if TYPE_CHECKING:
    from pi_host.agent import Agent
    from pi_host.session import SessionManager

    from ._context import SessionPluginContext
    from ._host import Host

__all__ = ["UserBash"]

_NO_BASH_PLUGIN = "No plugin runs user bash commands. Install pi-bash (pip install pi-bash)."


class _Session(Protocol):
    """What user bash needs of its session."""

    host: Host
    agent: Agent
    session_manager: SessionManager
    cwd: str
    ctx: SessionPluginContext


class UserBash:
    """The running ``!cmd`` (at most one) and the finished ones waiting for a run to end."""

    def __init__(self, session: _Session) -> None:
        self._session = session
        self._signal: AbortSignal | None = None
        self._pending: list[BashExecutionMessage] = []

    async def run(
        self,
        command: str,
        *,
        exclude_from_context: bool,
        on_output: Callable[[str], None] | None,
    ) -> BashExecutionMessage:
        """Run ``command`` and record it, now or (while streaming) after the run.

        :raises SessionError: no plugin runs user bash commands.
        """
        session = self._session
        signal = self._signal = AbortSignal()
        try:
            result = await session.host.dispatcher.user_bash(
                command=command,
                exclude_from_context=exclude_from_context,
                cwd=session.cwd,
                signal=signal,
                on_output=on_output,
                ctx=session.ctx,
            )
        finally:
            self._signal = None
        if result is None:
            raise SessionError(_NO_BASH_PLUGIN)
        message = BashExecutionMessage(
            command=command,
            output=result.output,
            exit_code=result.exit_code,
            cancelled=result.cancelled,
            truncated=result.truncated,
            full_output_path=result.full_output_path,
            exclude_from_context=exclude_from_context or None,
            timestamp=now_ms(),
        )
        if session.agent.state.is_streaming:
            self._pending.append(message)
        else:
            self._record(message)
        return message

    def abort(self) -> None:
        """Cancel the running command, if any; its partial output is kept, marked ``cancelled``."""
        if self._signal is not None:
            self._signal.abort()

    @property
    def is_running(self) -> bool:
        return self._signal is not None

    def flush(self) -> None:
        """Record the commands that finished while a run streamed."""
        pending, self._pending = self._pending, []
        for message in pending:
            self._record(message)

    def _record(self, message: BashExecutionMessage) -> None:
        self._session.agent.state.messages.append(message)
        self._session.session_manager.append_message(message)
