"""``read /dev/stdin`` in RPC mode, end to end: a real ``pi-host --mode rpc`` over pipes.

The command stream is the process's stdin: reading it as a file ate the client's next
commands, after which pi-host answered nothing and ignored SIGTERM and SIGINT.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import sysconfig
import threading
from pathlib import Path
from typing import Any

import pytest

TIMEOUT = 20.0


def _pi_host() -> str:
    found = shutil.which("pi-host") or str(Path(sysconfig.get_path("scripts")) / "pi-host")
    return found if os.path.exists(found) else str(Path(sys.executable).parent / "pi-host")


class _Rpc:
    def __init__(self, tmp_path: Path, script: list[dict[str, Any]]) -> None:
        (tmp_path / "script.json").write_text(json.dumps(script))
        env = {
            **os.environ,
            "PI_HOST_FAUX_SCRIPT": str(tmp_path / "script.json"),
            "PI_HOST_DIR": str(tmp_path / "agent"),
        }
        self.proc = subprocess.Popen(
            [_pi_host(), "--mode", "rpc", "--provider", "faux", "--no-session"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=tmp_path,
            env=env,
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for raw in iter(self.proc.stdout.readline, b""):
            self.lines.put(raw)
        self.lines.put(None)

    def send(self, command: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(command).encode() + b"\n")
        self.proc.stdin.flush()

    def until(self, kind: str, request_id: str | None = None) -> dict[str, Any]:
        while True:
            raw = self.lines.get(timeout=TIMEOUT)
            assert raw is not None, "pi-host closed its output"
            record: dict[str, Any] = json.loads(raw)
            if record.get("type") == kind and (request_id is None or record.get("id") == request_id):
                return record

    def dispose(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


@pytest.mark.timeout(60)
def test_read_of_dev_stdin_in_rpc_mode_leaves_the_command_stream_alone(tmp_path: Path) -> None:
    rpc = _Rpc(
        tmp_path, [{"toolCalls": [{"name": "read", "arguments": {"path": "/dev/stdin"}}]}, {"text": "ok"}]
    )
    try:
        rpc.send({"id": "p", "type": "prompt", "message": "read your stdin"})
        end = rpc.until("tool_execution_end")
        assert end["isError"] is True
        assert end["result"]["content"][0]["text"] == (
            "Cannot read /dev/stdin: it is a FIFO (named pipe), not a regular file. Only regular "
            "files can be used here; use bash with a bound (e.g. head -c 4096) to look at a device or pipe."
        )
        rpc.until("agent_end")
        # The next command still reaches the agent, and SIGTERM still ends it.
        rpc.send({"id": "s", "type": "get_state"})
        assert rpc.until("response", "s")["success"] is True
        rpc.proc.send_signal(signal.SIGTERM)
        rpc.proc.wait(timeout=TIMEOUT)
    finally:
        rpc.dispose()
