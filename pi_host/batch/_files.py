"""The files of a batch: the tasks file (read and checked) and ``results.jsonl`` (read, appended)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from pydantic import ValidationError

from ._models import BatchResult, BatchTask

__all__ = ["ResultsLog", "TasksFileError", "read_tasks"]


class TasksFileError(ValueError):
    """A tasks file that cannot be run; ``problems`` lists every bad line, ``file:line: why``."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


def read_tasks(path: Path) -> list[BatchTask]:
    """Every task of a tasks file, in file order; blank lines are skipped.

    :raises TasksFileError: naming every bad line at once (not JSON, not an object, a missing
        or mistyped ``id``/``prompt``, an unknown key, an ``id`` used on two lines), so one
        fix-up pass is enough; no task runs from a file with a bad line.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TasksFileError([f"{path}: cannot be read ({exc.strerror or exc})"]) from None
    problems: list[str] = []
    tasks: list[BatchTask] = []
    first_line: dict[str, int] = {}
    for number, raw in enumerate(data.split(b"\n"), start=1):
        where = f"{path}:{number}"
        try:
            text = raw.decode("utf-8-sig" if number == 1 else "utf-8").strip()  # an editor's BOM
        except UnicodeDecodeError as exc:
            problems.append(f"{where}: not UTF-8 (byte {exc.start + 1})")
            continue
        if not text:
            continue
        try:
            obj = json.loads(text)
        except ValueError as exc:
            problems.append(f"{where}: not valid JSON ({exc})")
            continue
        if not isinstance(obj, dict):
            problems.append(
                f'{where}: a task is a JSON object ({{"id": ..., "prompt": ...}}), not {_kind(obj)}'
            )
            continue
        try:
            task = BatchTask.model_validate(obj)
        except ValidationError as exc:
            problems.append(f"{where}: {_describe(exc)}")
            continue
        if task.id in first_line:
            problems.append(f"{where}: id {task.id!r} is already the id of line {first_line[task.id]}")
            continue
        first_line[task.id] = number
        tasks.append(task)
    if problems:
        raise TasksFileError(problems)
    if not tasks:
        raise TasksFileError([f'{path}: no tasks (one JSON object a line: {{"id": ..., "prompt": ...}})'])
    return tasks


def _kind(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    return type(value).__name__


_EXPECTED = {
    "id": "a non-empty string",
    "prompt": "a string",
    "cwd": "a string (a folder, relative to the tasks file's)",
    "model": 'a string ("provider/id")',
    "args": 'a list of strings (pi-host arguments, e.g. ["--thinking", "high"])',
    "env": 'an object of strings (e.g. {"FOO": "1"})',
}


def _describe(exc: ValidationError) -> str:
    parts: list[str] = []
    for error in exc.errors():
        key = str(error["loc"][0]) if error["loc"] else "the task"
        if error["type"] == "missing":
            part = f'"{key}" is missing'
        elif error["type"] == "extra_forbidden":
            part = f'"{key}" is not a task key (id, prompt, cwd, model, args, env)'
        else:
            part = f'"{key}" must be {_EXPECTED.get(key, "something else")}'
        if part not in parts:
            parts.append(part)
    return "; ".join(parts)


@dataclass
class ResultsLog:
    """``results.jsonl``: what earlier runs finished, and the appender for this one.

    Each result is one line, written and flushed (and ``fsync``-ed) as it arrives, so a
    Ctrl+C or a crash loses no finished task. A torn last line (a crash mid-write) is
    skipped when read and closed off with a newline before the next line is appended.
    """

    path: Path
    latest: dict[str, BatchResult] = field(default_factory=dict)
    attempts: dict[str, int] = field(default_factory=dict)
    skipped_lines: list[int] = field(default_factory=list)
    _handle: IO[bytes] | None = None

    @classmethod
    def read(cls, path: Path) -> ResultsLog:
        """What the file holds (nothing when it does not exist), not open for appending."""
        log = cls(path)
        log._read()
        return log

    @classmethod
    def open(cls, path: Path) -> ResultsLog:
        """What the file holds, open for :meth:`append` (the file is created if missing)."""
        log = cls(path)
        data = log._read()
        log._handle = open(path, "ab")  # noqa: SIM115 - held open for the run; close() closes it
        if data and not data.endswith(b"\n"):
            log._handle.write(b"\n")
        return log

    def _read(self) -> bytes:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return b""
        for number, raw in enumerate(data.split(b"\n"), start=1):
            if not raw.strip():
                continue
            try:
                result = BatchResult.model_validate_json(raw)
            except ValueError:
                self.skipped_lines.append(number)
                continue
            self._note(result)
        return data

    def _note(self, result: BatchResult) -> None:
        self.latest[result.id] = result
        self.attempts[result.id] = max(self.attempts.get(result.id, 0), result.attempt)

    def finished(self, task_id: str) -> bool:
        """Whether the task's last recorded attempt is ``ok`` (a rerun skips it)."""
        latest = self.latest.get(task_id)
        return latest is not None and latest.status == "ok"

    def append(self, result: BatchResult) -> None:
        assert self._handle is not None, "ResultsLog.open() first"
        self._handle.write(result.model_dump_json().encode() + b"\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())
        self._note(result)

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None
