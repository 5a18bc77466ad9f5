"""How ``pi-host batch`` shows its progress: a rich bar on a terminal, plain lines otherwise."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from pi_host.batch import BatchResult

__all__ = ["BarProgress", "LineProgress", "Tally"]


class Tally:
    """The counts both displays show: tasks ok and failed, attempts running, dollars spent."""

    def __init__(self, total: int, concurrency: int) -> None:
        self.total = total
        self.concurrency = concurrency
        self.ok = 0
        self.failed = 0
        self.outstanding = 0
        self.retries = 0
        self.cost = 0.0
        self._t0 = time.monotonic()

    def started_attempts(self, count: int) -> None:
        self.outstanding += count

    def finished(self, result: BatchResult, *, retrying: bool) -> None:
        self.outstanding -= 1
        self.cost += result.cost
        if retrying:
            self.retries += 1
        elif result.status == "ok":
            self.ok += 1
        else:
            self.failed += 1

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self._t0

    @property
    def running(self) -> int:
        """Attempts handed to the executor and not finished, at most the concurrency."""
        return min(self.outstanding, self.concurrency)

    @property
    def done(self) -> int:
        return self.ok + self.failed

    def counts(self) -> str:
        return f"{self.ok} ok, {self.failed} failed, {self.running} running · ${self.cost:.4f}"


class LineProgress:
    """One line per finished attempt on a stream that is not a terminal (CI logs, files)."""

    def __init__(self, total: int, concurrency: int, stream: TextIO | None = None) -> None:
        self.tally = Tally(total, concurrency)
        self._stream = stream or sys.stderr

    def started(self, attempts: int) -> None:
        self.tally.started_attempts(attempts)

    def finished(self, result: BatchResult, *, retrying: bool) -> None:
        self.tally.finished(result, retrying=retrying)
        tally = self.tally
        if result.status == "ok":
            what = f"ok {result.id} ({result.seconds:.1f} s, ${result.cost:.4f})"
        else:
            again = "; retrying" if retrying else ""
            what = f"failed {result.id} (attempt {result.attempt}): {result.error}{again}"
        print(f"[{tally.done}/{tally.total}] {what} · {tally.counts()}", file=self._stream, flush=True)

    def close(self) -> None:
        pass


class BarProgress:
    """A rich progress bar on a terminal: done of total, the counts, the cost, the time."""

    def __init__(self, total: int, concurrency: int) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.tally = Tally(total, concurrency)
        self._bar: Progress = Progress(
            TextColumn("batch"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[counts]}"),
            TimeElapsedColumn(),
            console=Console(stderr=True),
        )
        self._task: TaskID = self._bar.add_task("batch", total=total, counts=self.tally.counts())
        self._bar.start()

    def started(self, attempts: int) -> None:
        self.tally.started_attempts(attempts)
        self._bar.update(self._task, counts=self.tally.counts())

    def finished(self, result: BatchResult, *, retrying: bool) -> None:
        self.tally.finished(result, retrying=retrying)
        if result.status != "ok":
            again = " (retrying)" if retrying else ""
            from rich.markup import escape

            self._bar.console.print(f"[red]failed[/red] {escape(f'{result.id}: {result.error}{again}')}")
        self._bar.update(self._task, completed=self.tally.done, counts=self.tally.counts())

    def close(self) -> None:
        self._bar.stop()
