"""User bash (``!cmd`` and ``!!cmd``): run a command for the user and record it as pi does."""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING

from pi_host import BashExecutionMessage

from ._output import OutputAccumulator
from ._process import DEFAULT_KILL_GRACE, BackgroundPolicy, build_env, run_shell_command

if TYPE_CHECKING:
    from pi_host import AbortSignal

__all__ = ["TerminalTextFilter", "run_user_bash", "sanitize_output"]

OnOutput = Callable[[str], Awaitable[None] | None]

# Escape sequences a terminal would interpret: CSI (colours, cursor), OSC (titles,
# hyperlinks) ended by BEL or ST, DCS/SOS/PM/APC strings ended by ST, and the two- or
# three-byte ESC forms (charset selection, keypad modes).
_ESCAPE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
    r"|(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"
    r"|\x1b[PX^_][^\x1b\x9c]*(?:\x1b\\|\x9c)"
    r"|\x1b[ -/]*[0-~]"
)
# The start of an escape sequence cut off at the end of a chunk.
_PARTIAL_ESCAPE = re.compile(
    r"(?:\x1b(?:\[[0-?]*[ -/]*|\][^\x07\x1b\x9c]*\x1b?|[PX^_][^\x1b\x9c]*\x1b?|[ -/]*)?"
    r"|\x9b[0-?]*[ -/]*"
    r"|\x9d[^\x07\x1b\x9c]*\x1b?)"
)
_INTRODUCERS = re.compile(r"[\x1b\x9b\x9d]")
_MAX_HELD = 4096

# Control characters but tab and newline, carriage returns (progress bars would otherwise
# garble the transcript), and the Unicode interlinear-annotation format characters.
_DROP = {code: None for code in [*range(0x00, 0x09), *range(0x0B, 0x20), 0xFFF9, 0xFFFA, 0xFFFB]}


def sanitize_output(text: str) -> str:
    """Output as pi records a user's command: escape sequences, control characters (but tab
    and newline) and carriage returns removed.
    """
    return _ESCAPE.sub("", text).translate(_DROP)


class TerminalTextFilter:
    """:func:`sanitize_output` over a stream, holding back an escape sequence split across
    chunks so that it is removed whole.
    """

    def __init__(self) -> None:
        self._held = ""

    def feed(self, text: str) -> str:
        text = self._held + text
        self._held = ""
        cut = self._partial_escape_start(text)
        if cut is not None:
            text, self._held = text[:cut], text[cut:]
        return sanitize_output(text)

    def flush(self) -> str:
        text, self._held = self._held, ""
        return sanitize_output(text)

    @staticmethod
    def _partial_escape_start(text: str) -> int | None:
        start = max(0, len(text) - _MAX_HELD)
        last = None
        for match in _INTRODUCERS.finditer(text, start):
            last = match.start()
        if last is None or _PARTIAL_ESCAPE.fullmatch(text, last) is None:
            return None
        return last


async def run_user_bash(
    command: str,
    cwd: str,
    *,
    signal: AbortSignal | None = None,
    on_output: OnOutput | None = None,
    exclude_from_context: bool = False,
    shell_path: str | None = None,
    command_prefix: str | None = None,
    timeout: float | None = None,
    kill_grace: float = DEFAULT_KILL_GRACE,
    background: BackgroundPolicy = "keep",
    env: Mapping[str, str] | None = None,
    owner: object | None = None,
) -> BashExecutionMessage:
    """Run a command the user typed (``!cmd``) and return the ``bashExecution`` message.

    The process handling is the ``bash`` tool's (own process group, stopped whole, never
    held open by a background process). The recorded output is cleaned as pi cleans it
    (:func:`sanitize_output`) and tail-truncated to 2,000 lines / 50 KB, with the complete
    output in a ``pi-bash-*.log`` file when it is longer.

    There is no default timeout: the user is there to abort (``signal``). A stopped command
    (abort or ``timeout``) is recorded with ``cancelled=True`` and no exit code.

    :param on_output: called with each piece of cleaned output as it arrives (may be async).
    :param exclude_from_context: ``!!cmd``: recorded, but never sent to the model.
    :param command_prefix: lines run before the command (pi's ``shellCommandPrefix``); the
        message records the command as typed.
    :param owner: the session's token for processes left in the background (see
        :func:`~pi_bash.run_shell_command`).
    :raises BashError: the working directory does not exist, or the shell cannot start.
    """
    resolved = f"{command_prefix}\n{command}" if command_prefix else command
    output = OutputAccumulator(temp_file_prefix="pi-bash", text_filter=TerminalTextFilter())

    async def on_data(data: bytes) -> None:
        text = output.append(data)
        if on_output is not None and text:
            result = on_output(text)
            if inspect.isawaitable(result):
                await result

    try:
        outcome = await run_shell_command(
            resolved,
            cwd,
            on_data=on_data,
            signal=signal,
            timeout=timeout,
            shell_path=shell_path,
            env=build_env(env),
            kill_grace=kill_grace,
            background=background,
            owner=owner,
        )
        rest = output.finish()
        if on_output is not None and rest:
            result = on_output(rest)
            if inspect.isawaitable(result):
                await result
        snapshot = output.snapshot(persist_if_truncated=True)
    finally:
        output.close()
    cancelled = outcome.aborted or outcome.timed_out
    return BashExecutionMessage(
        command=command,
        output=snapshot.content,
        exit_code=None if cancelled else outcome.exit_code,
        cancelled=cancelled,
        truncated=snapshot.truncation.truncated,
        full_output_path=snapshot.full_output_path,
        exclude_from_context=exclude_from_context,
    )
