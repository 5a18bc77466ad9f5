"""What ends ``pi-host``'s interactive mode as a quit does, as in pi: SIGTERM, SIGHUP, ``ctx.shutdown()``.

The real command runs in a pseudo-terminal on the faux provider, with a one-file plugin that
records its ``pi_session_shutdown`` calls. Each test waits for the screen (or the faux reply
streaming onto it) before the signal, so none depends on timing.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import termios
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.interactive_support.terminal import Terminal, Terminals

PI_HOST = shutil.which("pi-host") or str(Path(sys.executable).parent / "pi-host")

pytestmark = pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a POSIX pseudo-terminal")

RECORDER = """\
import os

from pi_host import hookimpl


@hookimpl
def pi_session_shutdown(reason, ctx):
    with open(os.environ["SHUTDOWN_LOG"], "a", encoding="utf-8") as log:
        log.write(reason + "\\n")
"""

# A reply that streams for minutes (a word every 50 ms): the signal comes while it does.
SLOW_REPLY = {"text": "Streaming begins. " + "word " * 4000, "delayMs": 50}


@pytest.fixture
def pi_host(tmp_path: Path) -> Iterator[Any]:
    terminals = Terminals()

    def start(
        script: list[dict[str, Any]],
        *,
        stderr_to: Path | None = None,
        lifeline: Path | None = None,
        plugin: str | None = None,
    ) -> Terminal:
        (tmp_path / "agent").mkdir(exist_ok=True)
        (tmp_path / "faux.json").write_text(json.dumps(script), encoding="utf-8")
        (tmp_path / "recorder.py").write_text(RECORDER, encoding="utf-8")
        environment = {
            "PI_HOST_DIR": str(tmp_path / "agent"),
            "PI_HOST_FAUX_SCRIPT": str(tmp_path / "faux.json"),
            "SHUTDOWN_LOG": str(tmp_path / "shutdown.log"),
            "ANTHROPIC_API_KEY": "",
            "OPENAI_API_KEY": "",
        }
        argv = [PI_HOST, "--provider", "faux", "-e", "recorder.py"]
        if plugin is not None:
            (tmp_path / "plugin.py").write_text(plugin, encoding="utf-8")
            argv += ["-e", "plugin.py"]
        if stderr_to is not None:
            # exec: pi-host itself leads the terminal's session, and gets its SIGHUP.
            argv = ["/bin/sh", "-c", f'exec "$@" 2>"{stderr_to}"', "sh", *argv]
        if lifeline is not None:
            # The read end of a named pipe (opened for writing already) as descriptor 3.
            argv = ["/bin/sh", "-c", f'exec 3<"{lifeline}"; PI_HOST_LIFELINE_FD=3 exec "$@"', "sh", *argv]
        return terminals.start(argv, cwd=tmp_path, env=environment)

    yield start
    terminals.close()


def shutdowns(tmp_path: Path) -> list[str]:
    log = tmp_path / "shutdown.log"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def session_entries(tmp_path: Path) -> list[dict[str, Any]]:
    (session_file,) = (tmp_path / "agent" / "sessions").rglob("*.jsonl")
    return [json.loads(line) for line in session_file.read_text(encoding="utf-8").splitlines()]


def last_after(text: str, on: str, off: str) -> bool:
    """The last ``on`` sequence the program wrote was followed by an ``off``."""
    return text.rfind(off) > text.rfind(on) >= 0


def test_sigterm_while_idle_shuts_down_restores_the_terminal_and_exits_143(
    pi_host: Any, tmp_path: Path
) -> None:
    term: Terminal = pi_host([{"text": "Hello."}])
    term.submit("hi")
    term.wait_for("Hello.")
    term.wait_gone("Working...")

    os.kill(term.child.pid, signal.SIGTERM)

    assert term.wait_exit() == 143
    assert shutdowns(tmp_path) == ["quit"]
    # The terminal as it was before: raw mode off, and what the screen turned on turned off.
    assert term.modes_at_exit is not None
    local_modes = term.modes_at_exit[3]
    assert local_modes & termios.ECHO and local_modes & termios.ICANON and local_modes & termios.ISIG
    assert last_after(term.raw, "\x1b[?2004h", "\x1b[?2004l")  # bracketed paste
    assert last_after(term.raw, "\x1b[?25l", "\x1b[?25h")  # the cursor is shown
    roles = [entry["message"]["role"] for entry in session_entries(tmp_path) if entry["type"] == "message"]
    assert roles == ["user", "assistant"]


def test_sigterm_mid_reply_saves_it_as_aborted(pi_host: Any, tmp_path: Path) -> None:
    term: Terminal = pi_host([SLOW_REPLY])
    term.submit("talk for a while")
    term.wait_for("Streaming begins. word word")

    os.kill(term.child.pid, signal.SIGTERM)

    assert term.wait_exit() == 143
    assert shutdowns(tmp_path) == ["quit"]
    entries = session_entries(tmp_path)
    assert entries[0]["type"] == "session"
    messages = [entry["message"] for entry in entries if entry["type"] == "message"]
    assert [message["role"] for message in messages] == ["user", "assistant"]
    reply = messages[-1]
    assert reply["stopReason"] == "aborted"  # as Escape leaves it
    (text,) = [block["text"] for block in reply["content"] if block["type"] == "text"]
    assert text.startswith("Streaming begins. word") and len(text) < len(SLOW_REPLY["text"])
    assert term.modes_at_exit is not None and term.modes_at_exit[3] & termios.ICANON


def test_the_end_of_its_lifeline_quits_it_as_sigterm_does(pi_host: Any, tmp_path: Path) -> None:
    """PI_HOST_LIFELINE_FD: once the supervisor's end of the pipe closes, the lifeline sends
    SIGTERM to the main thread, and the terminal UI ends as on a supervisor's SIGTERM."""
    fifo = tmp_path / "lifeline"
    os.mkfifo(fifo)
    # A reader first, so the supervisor's write end opens without waiting for pi-host's.
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    writer = os.open(fifo, os.O_WRONLY)
    try:
        term: Terminal = pi_host([], lifeline=fifo)
    except BaseException:
        os.close(writer)
        raise
    finally:
        os.close(reader)
    assert "PI_HOST_LIFELINE_FD" not in term.screen.text()  # no warning: the lifeline is watched

    os.close(writer)  # the supervisor is gone

    assert term.wait_exit() == 143
    assert shutdowns(tmp_path) == ["quit"]
    assert term.modes_at_exit is not None and term.modes_at_exit[3] & termios.ICANON


def test_kill_hup_exits_129_after_the_shutdown(pi_host: Any, tmp_path: Path) -> None:
    term: Terminal = pi_host([])

    os.kill(term.child.pid, signal.SIGHUP)

    assert term.wait_exit() == 129
    assert shutdowns(tmp_path) == ["quit"]
    assert term.modes_at_exit is not None and term.modes_at_exit[3] & termios.ECHO


def test_a_closed_terminal_mid_reply_shuts_down_quietly_with_129(pi_host: Any, tmp_path: Path) -> None:
    """The window closes while a reply streams: SIGHUP, then reads that end and writes that fail
    with EIO. The shutdown still runs, the reply is saved as aborted, and nothing is printed
    (a traceback would be the writes' failure)."""
    errors = tmp_path / "stderr.txt"
    term: Terminal = pi_host([SLOW_REPLY], stderr_to=errors)
    term.submit("talk for a while")
    term.wait_for("Streaming begins. word word")

    assert term.hang_up() == 129
    assert errors.read_text(encoding="utf-8") == ""
    assert shutdowns(tmp_path) == ["quit"]
    messages = [entry["message"] for entry in session_entries(tmp_path) if entry["type"] == "message"]
    assert [message["role"] for message in messages] == ["user", "assistant"]
    assert messages[-1]["stopReason"] == "aborted"


def test_ctrl_c_twice_mid_reply_saves_it_as_aborted_too(pi_host: Any, tmp_path: Path) -> None:
    """Quitting stops the run before the screen's tasks are cancelled; cancelled first, the
    reply was neither saved nor shown as aborted (no session file at all for a first reply)."""
    term: Terminal = pi_host([SLOW_REPLY])
    term.submit("talk for a while")
    term.wait_for("Streaming begins. word word")

    term.double_ctrl_c()

    assert term.wait_exit() == 0
    assert "Operation aborted" in term.screen.text()
    messages = [entry["message"] for entry in session_entries(tmp_path) if entry["type"] == "message"]
    assert [message["role"] for message in messages] == ["user", "assistant"]
    assert messages[-1]["stopReason"] == "aborted"
    assert shutdowns(tmp_path) == ["quit"]


# -- a plugin's ctx.shutdown(): pi quits once the agent is idle ---------------------------------

QUITTER = """\
from pi_host import hookimpl
from pi_host.hookspecs import Command


async def _bye(args, ctx):
    ctx.shutdown()


@hookimpl
def pi_register_commands(register):
    register(Command(name="bye", description="Quit from a plugin", handler=_bye))


@hookimpl
def pi_tool_call(tool_name, input, ctx):
    if tool_name == "bash" and "fatal" in str(input.get("command", "")):
        ctx.shutdown()
"""


def test_a_plugin_command_that_asks_for_shutdown_quits_the_ui(pi_host: Any, tmp_path: Path) -> None:
    term: Terminal = pi_host([], plugin=QUITTER)
    term.submit("/bye")
    assert term.wait_exit() == 0
    assert shutdowns(tmp_path) == ["quit"]


def test_a_shutdown_asked_for_during_a_run_waits_for_the_run_to_end(pi_host: Any, tmp_path: Path) -> None:
    term: Terminal = pi_host(
        [
            {"toolCalls": [{"name": "bash", "arguments": {"command": "echo fatal"}}]},
            {"text": "Stopping as asked."},
        ],
        plugin=QUITTER,
    )
    term.submit("go")
    assert term.wait_exit() == 0
    assert "Stopping as asked." in term.raw  # the run ended with its last reply first
    assert shutdowns(tmp_path) == ["quit"]
    roles = [entry["message"]["role"] for entry in session_entries(tmp_path) if entry["type"] == "message"]
    assert roles == ["user", "assistant", "toolResult", "assistant"]
