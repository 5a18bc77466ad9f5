"""The data of a batch run: a task line, the run's settings, one attempt, one result line."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["USAGE_KEYS", "BatchAttempt", "BatchResult", "BatchRun", "BatchTask"]

USAGE_KEYS: tuple[str, ...] = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")
"""The token counts of :attr:`BatchResult.usage`, under pi's names."""


class BatchTask(BaseModel):
    """One line of a tasks file: what one agent is asked to do.

    Unknown keys are refused (a misspelt ``promt`` must not pass for a task without a prompt).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    """Unique within the file; names the task's result, event logs and reruns."""
    prompt: str
    cwd: str | None = None
    """The agent's working directory, relative to the tasks file's folder (the default)."""
    model: str | None = None
    """``provider/id`` (``--model``); wins over the batch command line's ``--model``."""
    args: tuple[str, ...] = ()
    """Extra ``pi-host`` arguments for this task, after the batch's own."""
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment variables for this task's process."""


class BatchRun(BaseModel):
    """What a worker needs to run any task of one batch; the same for every attempt."""

    model_config = ConfigDict(frozen=True)

    out_dir: str
    """Absolute: the batch's ``--out DIR`` (``results.jsonl``, ``events/``, ``sessions/``)."""
    session_store: str | None = None
    """A session store URI for every task, or ``None`` for session files under ``out_dir/sessions``."""
    command: tuple[str, ...]
    """How to start pi-host, e.g. ``(sys.executable, "-m", "pi_host")`` or ``("pi-host",)``."""
    base_dir: str
    """Absolute: the tasks file's folder, which relative task ``cwd`` values start from."""
    timeout: float | None = None
    """Seconds one attempt may take before it is killed (an infrastructure failure); ``None``: no limit."""
    extra_args: tuple[str, ...] = ()
    """``pi-host`` arguments for every task (e.g. the batch command line's ``--model``)."""


class BatchAttempt(BaseModel):
    """One try at one task; ``attempt`` counts from 1 across reruns of the same ``--out``."""

    model_config = ConfigDict(frozen=True)

    task: BatchTask
    attempt: int = Field(ge=1)


class BatchResult(BaseModel):
    """One finished attempt: a line of ``results.jsonl`` (``model_dump(mode="json")``)."""

    model_config = ConfigDict(frozen=True)

    id: str
    status: Literal["ok", "failed"]
    exit_code: int | None
    """The process's exit status; negative for a signal; ``None`` if it never started."""
    stop_reason: str | None
    """The last assistant message's ``stopReason`` (``stop``, ``length``, ``error``, ``aborted`` ...)."""
    usage: dict[str, int]
    """Tokens over every reply of the attempt, under pi's names (:data:`USAGE_KEYS`)."""
    cost: float
    """Dollars over every reply of the attempt."""
    text: str
    """The final assistant message's text."""
    session: str | None
    """The session file's path, or ``<store URI>#<session id>`` for a session store."""
    seconds: float
    attempt: int
    error: str | None = None
    """Why the attempt failed, in one line; ``None`` when it is ``ok``."""
    infrastructure: bool = False
    """The failure is the machinery's, worth retrying: the process ended by a signal or was
    killed, the attempt timed out, or the provider was still overloaded / failing (5xx, 529,
    network) after the agent's own retries. ``False`` for a task that failed on its own."""
    events: str | None = None
    """The path of this attempt's JSON event log (pi-host's ``--mode json`` stdout)."""

    @classmethod
    def failed(
        cls, attempt: BatchAttempt, error: str, *, infrastructure: bool, seconds: float = 0.0
    ) -> BatchResult:
        """The result of an attempt that failed before it measured anything: no exit status,
        no reply, no tokens, no cost, no session (an executor's lost worker, a task its
        cluster could not run).

        :param error: why, in one line (:attr:`error`).
        :param infrastructure: whether the machinery failed, so the attempt is worth
            retrying (:attr:`infrastructure`).
        :param seconds: how long the attempt took until it failed.
        """
        return cls(
            id=attempt.task.id,
            status="failed",
            exit_code=None,
            stop_reason=None,
            usage=dict.fromkeys(USAGE_KEYS, 0),
            cost=0.0,
            text="",
            session=None,
            seconds=seconds,
            attempt=attempt.attempt,
            error=error,
            infrastructure=infrastructure,
        )
