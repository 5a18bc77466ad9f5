"""A process killed while appending loses at most the entry it was writing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pi_host.messages import UserMessage
from pi_host.session import SessionManager

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")

WRITER = textwrap.dedent(
    """
    import sys
    from pi_host.messages import AssistantMessage, TextContent, UserMessage
    from pi_host.session import SessionManager

    manager = SessionManager.create("/w", sys.argv[1], cache_dir=False)
    manager.append_message(UserMessage(content="start"))
    manager.append_message(AssistantMessage(content=[TextContent(text="ok")]))
    print(manager.session_file, flush=True)
    size = int(sys.argv[2])
    n = 0
    while True:
        manager.append_message(UserMessage(content=f"entry {n} " + "y" * size))
        print(n, flush=True)  # entry n is on disk
        n += 1
    """
)


@pytest.mark.parametrize(("kill_after", "size"), [(5, 100), (60, 3_000), (20, 400_000)])
def test_sigkill_while_appending(tmp_path: Path, kill_after: int, size: int) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(tmp_path), str(size)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PI_HOST_DIR": str(tmp_path / "agent")},
    )
    assert child.stdout is not None
    file = Path(child.stdout.readline().strip())
    acknowledged = -1
    while acknowledged < kill_after:
        acknowledged = int(child.stdout.readline())
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    child.stdout.close()
    assert child.returncode == -signal.SIGKILL

    manager = SessionManager.open(file)
    texts = [m.content for m in manager.build_session_context().messages if isinstance(m, UserMessage)]
    numbered = [int(str(text).split()[1]) for text in texts[1:]]
    assert numbered == list(range(len(numbered)))  # nothing lost in the middle
    assert len(numbered) >= acknowledged + 1  # everything acknowledged survived
    assert len(manager.warnings) <= 1  # at most the line being written, torn
    assert all("torn write" in w.message for w in manager.warnings)

    manager.append_message(UserMessage(content="after the crash"))
    raw = file.read_bytes().split(b"\n")
    assert raw[-1] == b""
    assert json.loads(raw[-2])["message"]["content"] == "after the crash"
    reopened = SessionManager.open(file)
    assert reopened.build_session_context().messages[-1].content == "after the crash"  # type: ignore[union-attr]
