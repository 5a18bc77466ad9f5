"""Print mode (``-p``) and JSON mode (``--mode json``): run the prompts, then exit.

Print writes the final reply's text to stdout (errors to stderr, exit status 1); JSON writes
the session header, then every session event as one line of pi's JSON.

A reader that goes away (``pi-host --mode json ... | head -1``) ends the run quietly: the
first write that finds stdout closed aborts the run, and the rest of the output goes to
``/dev/null``, as command-line tools do; the exit status is 0.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

import anyio
from anyio.abc import TaskStatus

from pi_host.hookspecs import StashKey
from pi_host.messages import AssistantMessage, ImageContent, TextContent, WireModel
from pi_host.runtime import AgentSession, SessionError

from ._jsonl import write_line
from ._signals import watch_exit_signals

__all__ = ["discard_stdout", "run_print_mode"]

_SIGNAL_EXIT: StashKey[int] = StashKey()


def discard_stdout() -> None:
    """Point stdout at ``/dev/null``: its reader left, and later writes (and the flush at
    exit) must not fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)


def _json_writer(session: AgentSession) -> Any:
    closed = False

    def write(event: Any) -> None:
        nonlocal closed
        if closed:
            return
        try:
            _write_json_line(event)
        except BrokenPipeError:
            closed = True
            discard_stdout()
            session.agent.abort()

    return write


def _write_json_line(event: Any) -> None:
    if isinstance(event, WireModel):
        out = getattr(sys.stdout, "buffer", None)
        if out is None:  # a text-only stream (tests swap sys.stdout for one)
            sys.stdout.write(event.to_json() + "\n")
            sys.stdout.flush()
            return
        # Bytes straight to the binary layer: a message_update line holds the whole reply so
        # far, twice, and going through the text layer decoded and re-encoded all of it.
        sys.stdout.flush()  # whatever was written as text goes first
        write_line(out, event)


async def run_print_mode(
    session: AgentSession,
    messages: Sequence[str],
    images: Sequence[ImageContent] = (),
    *,
    json_mode: bool = False,
) -> int:
    """Run ``messages`` one after another; returns the exit status.

    The answer is written (and flushed) before the ``session_shutdown`` hooks run, as pi does:
    a slow hook does not hold it back, and one that hangs is given up on after
    :data:`SHUTDOWN_LIMIT_S` seconds.
    """
    exit_code: int | None = None
    if json_mode:
        try:
            sys.stdout.write(session.session_manager.header.to_json() + "\n")
            sys.stdout.flush()
        except BrokenPipeError:
            discard_stdout()
            return 0
        session.subscribe(_json_writer(session))
    async with anyio.create_task_group() as tg:
        session.bind_task_group(tg)
        await tg.start(_watch_signals, session, tg.cancel_scope)
        try:
            await session.start("startup")
            for index, message in enumerate(messages):
                await session.prompt(message, images=images if index == 0 else ())
        except SessionError as exc:
            print(str(exc), file=sys.stderr)
            exit_code = 1
        else:
            if not session.stash.get(_SIGNAL_EXIT, None):
                exit_code = _deliver(session, json_mode)
        finally:
            _flush_output()
            with anyio.CancelScope(shield=True):
                await _shut_down(session)
            tg.cancel_scope.cancel()
    if signal_exit := session.stash.get(_SIGNAL_EXIT, None):
        return signal_exit
    return 1 if exit_code is None else exit_code


SHUTDOWN_LIMIT_S = 10.0
"""How long print mode waits for the ``session_shutdown`` hooks once the answer is out."""


def _deliver(session: AgentSession, json_mode: bool) -> int:
    """Write the final answer (print mode) and return the exit status."""
    if json_mode:
        return 0
    last = session.messages[-1] if session.messages else None
    if isinstance(last, AssistantMessage):
        if last.stop_reason in ("error", "aborted"):
            print(last.error_message or f"Request {last.stop_reason}", file=sys.stderr)
            return 1
        for block in last.content:
            if isinstance(block, TextContent):
                sys.stdout.write(block.text + "\n")
    return 0


def _flush_output() -> None:
    """Push the answer out before the shutdown hooks run; a reader that left loses nothing."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:
            # `pi-host -p … | head`: the rest goes nowhere, and the exit's flush stays quiet.
            os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
        except (OSError, ValueError):
            pass  # a closed stream: nothing more can reach the reader


async def _shut_down(session: AgentSession) -> None:
    with anyio.move_on_after(SHUTDOWN_LIMIT_S) as waited:
        await session.shutdown("quit")
    if waited.cancelled_caught:
        print(
            f"Warning: session_shutdown hooks did not finish within {SHUTDOWN_LIMIT_S:g} s; "
            "exiting without them (the answer above is complete)",
            file=sys.stderr,
        )


async def _watch_signals(
    session: AgentSession,
    scope: anyio.CancelScope,
    *,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """SIGTERM and SIGHUP end the run as pi does: shut down, exit 143 / 129."""

    def stop(status: int) -> None:
        session.stash[_SIGNAL_EXIT] = status
        session.agent.abort()
        scope.cancel()

    await watch_exit_signals(stop, task_status=task_status)
