"""Running one attempt: a ``pi-host --mode json -p`` subprocess, its event log read into a result."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pi_host._lifeline import LIFELINE_ENV

from ._models import USAGE_KEYS, BatchAttempt, BatchResult, BatchRun

__all__ = ["KILL_GRACE_S", "attempt_file_stem", "run_batch_task"]

KILL_GRACE_S = 5.0
"""How long a stopped attempt's pi-host may take to shut down after SIGTERM (its
``session_shutdown`` hooks, its tools' processes) before its process group is killed."""

_POLL_S = 0.1  # how often a running attempt looks at its cancel event
_SAFE = re.compile(r"[^A-Za-z0-9._-]")


def attempt_file_stem(task_id: str, attempt: int) -> str:
    """``<id>.<attempt>`` made safe as a file name; ids that had to change get a short hash,
    so ``a/b`` and ``a_b`` do not share a log."""
    safe = _SAFE.sub("_", task_id)[:80]
    if safe != task_id:
        safe += "-" + hashlib.sha1(task_id.encode()).hexdigest()[:8]
    return f"{safe}.{attempt}"


def run_batch_task(
    attempt: BatchAttempt, run: BatchRun, *, cancel: threading.Event | None = None
) -> BatchResult:
    """Run one attempt as a ``pi-host --mode json -p`` subprocess and return its result.

    Synchronous, top level and picklable, so every executor runs tasks through it (locally
    in a thread, on a Ray worker ...). The prompt goes to the process on stdin (so a prompt
    starting with ``-`` or ``@`` is not read as an option); its stdout, the JSON event
    stream, is ``run.out_dir/events/<id>.<attempt>.jsonl`` and its stderr the same name with
    ``.stderr``. Each attempt starts a new session (``--session-id``), under
    ``run.out_dir/sessions`` or in ``run.session_store``.

    The process gets a lifeline (``PI_HOST_LIFELINE_FD``, a pipe whose write end this
    process holds until the attempt ends): should this process die without stopping it, the
    agent shuts down as on SIGTERM instead of running on unrecorded.

    The process runs in its own process group. When ``cancel`` is set, when ``run.timeout``
    passes, or when the calling thread is interrupted (``KeyboardInterrupt``, as Ray's
    ``cancel`` does), it gets SIGTERM, then after :data:`KILL_GRACE_S` its whole group gets
    SIGKILL; the function returns only once the process is gone. A cancelled attempt returns
    a failed, ``infrastructure`` result (the coordinator does not record it); an interrupt
    is re-raised after the kill.
    """
    task = attempt.task
    out = Path(run.out_dir)
    events_dir = out / "events"
    events_dir.mkdir(parents=True, exist_ok=True)
    stem = attempt_file_stem(task.id, attempt.attempt)
    events_path = events_dir / f"{stem}.jsonl"
    stderr_path = events_dir / f"{stem}.stderr"
    session_id = str(uuid.uuid4())
    argv = [*run.command, "--mode", "json", "-p", "--session-id", session_id]
    if run.session_store is not None:
        argv += ["--session-store", run.session_store]
        sessions_dir = None
    else:
        sessions_dir = out / "sessions"
        argv += ["--session-dir", str(sessions_dir)]
    argv += list(run.extra_args)
    if task.model is not None:
        argv += ["--model", task.model]
    argv += list(task.args)
    cwd = Path(run.base_dir) / task.cwd if task.cwd is not None else Path(run.base_dir)
    env = {**os.environ, **task.env}
    started = time.monotonic()

    def result(**fields: Any) -> BatchResult:
        base: dict[str, Any] = {
            "id": task.id,
            "status": "failed",
            "exit_code": None,
            "stop_reason": None,
            "usage": dict.fromkeys(USAGE_KEYS, 0),
            "cost": 0.0,
            "text": "",
            "session": None,
            "seconds": round(time.monotonic() - started, 3),
            "attempt": attempt.attempt,
            "events": str(events_path),
        }
        base.update(fields)
        return BatchResult(**base)

    if not cwd.is_dir():
        return result(error=f"the task's cwd {str(cwd)!r} is not a directory")
    # The lifeline: the process gets the read end, this one keeps the write end (not
    # inheritable, so no other child holds it) until the process is gone. If this process
    # dies first (SIGKILL, a crash, the OOM killer), the kernel closes it and the agent,
    # which otherwise would run on unseen in its own session, shuts down as on SIGTERM.
    lifeline, keep = os.pipe()
    env[LIFELINE_ENV] = str(lifeline)
    try:
        with open(events_path, "wb") as stdout, open(stderr_path, "wb") as stderr:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=stdout,
                stderr=stderr,
                cwd=cwd,
                env=env,
                pass_fds=(lifeline,),
                start_new_session=True,  # Ctrl+C is the coordinator's; one killpg reaches it all
            )
    except OSError as exc:
        os.close(keep)
        return result(error=f"cannot start {run.command[0]!r}: {exc.strerror or exc}", infrastructure=True)
    except BaseException:
        os.close(keep)
        raise
    finally:
        os.close(lifeline)  # the process has its own copy; only the write end is ours
    stopped: str | None = None
    try:
        _send_prompt(process, task.prompt)
        deadline = None if run.timeout is None else started + run.timeout
        while True:
            try:
                process.wait(_POLL_S)
                break
            except subprocess.TimeoutExpired:
                pass
            if cancel is not None and cancel.is_set():
                stopped = "cancelled"
            elif deadline is not None and time.monotonic() >= deadline:
                stopped = f"timed out after {run.timeout:g} s"
            if stopped is not None:
                _stop(process)
                break
    except BaseException:
        _stop(process)
        raise
    finally:
        _kill_group(process.pid)  # whatever the agent left running in its group
        os.close(keep)
    exit_code = process.returncode
    report = _read_events(events_path)
    session = _session_ref(run, sessions_dir, session_id)
    fields: dict[str, Any] = {
        "exit_code": exit_code,
        "stop_reason": report.stop_reason,
        "usage": report.usage,
        "cost": report.cost,
        "text": report.text,
        "session": session,
    }
    if stopped is not None:
        return result(**fields, error=stopped, infrastructure=True)
    if exit_code is not None and exit_code < 0:
        name = _signal_name(-exit_code)
        return result(**fields, error=f"pi-host was killed by {name}", infrastructure=True)
    if report.stop_reason == "error":
        return result(
            **fields, error=report.error or "the model's reply failed", infrastructure=report.transient
        )
    if report.stop_reason == "aborted":
        return result(**fields, error=report.error or "the run was aborted")
    if exit_code != 0:
        return result(**fields, error=_last_line(stderr_path) or f"pi-host exited with status {exit_code}")
    if not report.ended:
        return result(**fields, error="pi-host exited without finishing the run (no agent_end event)")
    return result(**fields, status="ok")


def _send_prompt(process: subprocess.Popen[bytes], prompt: str) -> None:
    assert process.stdin is not None
    try:
        process.stdin.write(prompt.encode("utf-8"))
        process.stdin.close()
    except BrokenPipeError:  # the process died at once; its exit status tells why
        pass


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM (pi-host shuts down as pi does), then SIGKILL to the group after the grace."""
    if process.poll() is not None:
        return
    try:
        process.send_signal(signal.SIGTERM)
        process.wait(KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        _kill_group(process.pid)
        process.wait()
    except ProcessLookupError:
        pass


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _last_line(path: Path) -> str | None:
    try:
        lines = path.read_text("utf-8", "replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        if line.strip():
            return line.strip()[:500]
    return None


def _session_ref(run: BatchRun, sessions_dir: Path | None, session_id: str) -> str | None:
    if sessions_dir is None:
        return f"{run.session_store}#{session_id}"
    found = sorted(sessions_dir.glob(f"*_{session_id}.jsonl")) if sessions_dir.is_dir() else []
    return str(found[0]) if found else None


class _Report:
    """What an attempt's event log says: the last reply, the totals, whether the run ended."""

    def __init__(self) -> None:
        self.usage: dict[str, int] = dict.fromkeys(USAGE_KEYS, 0)
        self.cost = 0.0
        self.text = ""
        self.stop_reason: str | None = None
        self.error: str | None = None
        self.transient = False
        self.ended = False


def _read_events(path: Path) -> _Report:
    report = _Report()
    last: dict[str, Any] | None = None
    for raw in _lines(path):
        if raw.startswith(b'{"type":"message_update"'):  # most of the log; nothing to count
            continue
        try:
            event = json.loads(raw)
        except ValueError:  # a line torn by a kill
            continue
        if not isinstance(event, dict):
            continue
        kind = event.get("type")
        if kind == "agent_end":
            report.ended = True
        if kind != "message_end":
            continue
        message = event.get("message")
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        last = message
        usage = message.get("usage")
        if isinstance(usage, dict):
            for key in USAGE_KEYS:
                value = usage.get(key)
                if isinstance(value, int):
                    report.usage[key] += value
            cost = usage.get("cost")
            if isinstance(cost, dict) and isinstance(cost.get("total"), int | float):
                report.cost += float(cost["total"])
    if last is not None:
        report.stop_reason = last.get("stopReason")
        report.error = last.get("errorMessage")
        report.text = "".join(
            block.get("text", "")
            for block in last.get("content", ())
            if isinstance(block, dict) and block.get("type") == "text"
        )
        if report.stop_reason == "error":
            report.transient = _transient(last)
    return report


def _lines(path: Path) -> Iterator[bytes]:
    try:
        with open(path, "rb") as handle:
            yield from handle
    except OSError:  # never written: the process did not start
        return


def _transient(message: dict[str, Any]) -> bool:
    """Overloaded, rate-limited, 5xx, network: what pi's own retry would have tried again."""
    from pi_host.messages import AssistantMessage, is_transient_error

    try:
        parsed = AssistantMessage.model_validate(message)
    except ValueError:
        return False
    return is_transient_error(parsed)
