"""``read /dev/stdin`` in RPC mode, end to end: a real ``pi-host --mode rpc`` over pipes.

The command stream is the process's stdin: reading it as a file ate the client's next
commands, after which pi-host answered nothing and ignored SIGTERM and SIGINT.
"""

from __future__ import annotations

import signal

import pytest

from pi_host.testing import CliRunner

TIMEOUT = 20.0


@pytest.mark.timeout(60)
def test_read_of_dev_stdin_in_rpc_mode_leaves_the_command_stream_alone(run_cli: CliRunner) -> None:
    script = [{"toolCalls": [{"name": "read", "arguments": {"path": "/dev/stdin"}}]}, {"text": "ok"}]
    with run_cli.rpc("--provider", "faux", "--no-session", replies=script, timeout=TIMEOUT) as rpc:
        rpc.send({"id": "p", "type": "prompt", "message": "read your stdin"})
        end = rpc.wait_for("tool_execution_end")
        assert end["isError"] is True
        assert end["result"]["content"][0]["text"] == (
            "Cannot read /dev/stdin: it is a FIFO (named pipe), not a regular file. Only regular "
            "files can be used here; use bash with a bound (e.g. head -c 4096) to look at a device or pipe."
        )
        rpc.wait_for("agent_end")
        # The next command still reaches the agent, and SIGTERM still ends it.
        assert rpc.call({"id": "s", "type": "get_state"})["success"] is True
        rpc.process.send_signal(signal.SIGTERM)
        rpc.wait()
