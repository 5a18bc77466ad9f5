"""What the ``pi-host batch`` tests share, whatever the executor: a scripted Anthropic server
that answers each task by the id in its prompt, the tasks and results files, and process checks.

Used by tests/test_batch.py (the local pool) and plugins/pi_batch_ray/tests (Ray).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from pi_host import BatchResult
from tests.fakeservers import RecordedRequest, Reply, anthropic_error, anthropic_reply

__all__ = [
    "MODEL",
    "PI_HOST",
    "SETTINGS",
    "Script",
    "processes_mentioning",
    "results",
    "wait_for",
    "write_tasks",
]

PI_HOST = shutil.which("pi-host") or str(Path(sys.executable).parent / "pi-host")
MODEL = "local/claude-local"
# No transport retries; the retry plugin retries once, at once: at most two requests an attempt.
SETTINGS = {"retry": {"maxRetries": 1, "baseDelayMs": 1, "provider": {"maxRetries": 0}}}
_TASK = re.compile(r"task (\S+):")


class Script:
    """Per-task behaviour of the server (the task id is in the prompt), and what it was asked."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.asked: Counter[str] = Counter()
        self.overloaded_first: dict[str, int] = {}  # task id -> how many first requests get 529
        self.refused: set[str] = set()  # 400 every time: the task fails on its own
        self.hang: set[str] = set()  # a reply that never ends
        self.sleep: set[str] = set()  # first a bash call that sleeps for ten minutes
        self.hang_after_tool: set[str] = set()  # first a quick bash call, then a reply that never ends

    def __call__(self, request: RecordedRequest) -> Reply:
        body = request.json()
        text = json.dumps(body["messages"][-1]["content"])
        match = _TASK.search(text)
        task = match.group(1) if match else "?"
        with self.lock:
            self.asked[task] += 1
            if self.asked[task] <= self.overloaded_first.get(task, 0):
                return anthropic_error(529, "Overloaded")
            if task in self.refused:
                return anthropic_error(400, f"prompt of {task} is refused")
            if task in self.hang:
                return anthropic_reply(f"working on {task}", stop=False, hang=True)
            if task in self.hang_after_tool:
                if len(body["messages"]) > 1:
                    return anthropic_reply(f"working on {task}", stop=False, hang=True)
                call = {"type": "tool_use", "id": f"toolu_{task}", "name": "bash"}
                call["input"] = {"command": f"echo 'task {task}: ran'"}  # names it in the next request
                return anthropic_reply([call], stop_reason="tool_use")
            if task in self.sleep and len(body["messages"]) == 1:
                call = {"type": "tool_use", "id": f"toolu_{task}", "name": "bash"}
                call["input"] = {"command": f"sleep 600 && echo {task}-slept"}
                return anthropic_reply([call], stop_reason="tool_use")
        return anthropic_reply(f"done {task}")


def write_tasks(path: Path, ids: list[str]) -> Path:
    path.write_text("".join(json.dumps({"id": i, "prompt": f"task {i}: say done"}) + "\n" for i in ids))
    return path


def results(out: Path) -> list[BatchResult]:
    lines = (out / "results.jsonl").read_text().splitlines()
    return [BatchResult.model_validate_json(line) for line in lines]


def processes_mentioning(text: str) -> list[int]:
    """Live processes whose command line contains ``text`` (zombies have none)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in command:
            found.append(int(entry.name))
    return found


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
