"""SIGTERM and SIGHUP end JSON (print) and RPC mode as pi's do: shutdown hooks, 143 / 129.

The interactive mode's are in tests/test_interactive_signals.py. Each test waits for the
mode to be at work (a streamed reply's first update, an RPC response) before the signal.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pi_host.modes._signals import exit_status
from tests.test_interactive_signals import RECORDER, SLOW_REPLY  # the same plugin and reply

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX signals")

PI_HOST = shutil.which("pi-host") or str(Path(sys.executable).parent / "pi-host")


def test_the_exit_status_is_the_shells() -> None:
    assert exit_status(signal.SIGTERM) == 143 and exit_status(signal.SIGHUP) == 129


def start(tmp_path: Path, *args: str, stdin: int = subprocess.DEVNULL) -> subprocess.Popen[bytes]:
    (tmp_path / "faux.json").write_text(json.dumps([SLOW_REPLY]), encoding="utf-8")
    (tmp_path / "recorder.py").write_text(RECORDER, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_HOST", "ANTHROPIC_", "OPENAI_"))}
    env.update(
        HOME=str(tmp_path),
        PI_HOST_DIR=str(tmp_path / "agent"),
        PI_HOST_FAUX_SCRIPT=str(tmp_path / "faux.json"),
        SHUTDOWN_LOG=str(tmp_path / "shutdown.log"),
    )
    return subprocess.Popen(
        [PI_HOST, "--provider", "faux", "-e", "recorder.py", *args],
        cwd=tmp_path,
        env=env,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_json_mode_mid_reply(tmp_path: Path, signum: int) -> None:
    process = start(tmp_path, "--mode", "json", "talk for a while")
    assert process.stdout is not None
    for line in process.stdout:
        if json.loads(line)["type"] == "message_update":
            break
    process.send_signal(signum)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 128 + signum, err
    assert err == b""
    assert (tmp_path / "shutdown.log").read_text(encoding="utf-8") == "quit\n"


def test_rpc_mode_on_sighup(tmp_path: Path) -> None:
    process = start(tmp_path, "--mode", "rpc", "--no-session", stdin=subprocess.PIPE)
    assert process.stdout is not None and process.stdin is not None
    process.stdin.write(b'{"id": "1", "type": "get_state"}\n')
    process.stdin.flush()
    assert json.loads(process.stdout.readline())["success"] is True  # up and serving
    process.send_signal(signal.SIGHUP)
    # Input stays open (its end would stop the mode too, with status 0) until the process exits.
    assert process.wait(timeout=60) == 129
    _, err = process.communicate()
    assert err == b""
    assert (tmp_path / "shutdown.log").read_text(encoding="utf-8") == "quit\n"
