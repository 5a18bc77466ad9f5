"""``pi-host batch TASKS.jsonl --out DIR``: every task line its own agent, results in one file."""

from __future__ import annotations

import os
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from pi_host.batch import BatchExecutor, BatchRun, BatchTask
    from pi_host.batch._coordinator import BatchOutcome
    from pi_host.batch._files import ResultsLog

    from ._batch_progress import BarProgress, LineProgress

__all__ = ["DEFAULT_CONCURRENCY", "DEFAULT_RETRIES", "run_batch_command"]

DEFAULT_CONCURRENCY = 4
"""Tasks at once unless ``--concurrency`` says otherwise: agents mostly wait for the model."""

DEFAULT_RETRIES = 2
"""Further attempts of a task whose attempt failed for infrastructure reasons."""

_USAGE = """\
Usage: pi-host [--session-store URI] batch TASKS.jsonl --out DIR [options] [-- PI-HOST ARGS...]
  --out DIR            results.jsonl, events/ and sessions/ go here (a rerun resumes it)
  --executor NAME      local (default: subprocesses on this machine), or a plugin's (ray)
  --address ADDR       the cluster an executor joins (ray://head:10001)
  --concurrency N      tasks at once (default 4)
  --retries N          further attempts after an infrastructure failure (default 2)
  --timeout SECONDS    kill an attempt that takes longer (an infrastructure failure)
  --model MODEL        the model of tasks that name none (provider/id)
  --redo               run the tasks that are already ok in DIR/results.jsonl again
  --session-store URI  keep the tasks' sessions in a store instead of DIR/sessions
Each line of TASKS.jsonl is {"id", "prompt", optional "cwd", "model", "args", "env"}.
Arguments after -- are given to every task's pi-host. Exit status: 0 when every task is ok,
1 when one failed, 2 for a bad command line or tasks file, 130 after Ctrl+C (143: SIGTERM)."""


@dataclass
class _Options:
    tasks: Path
    out: Path
    executor: str = "local"
    address: str | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    retries: int = DEFAULT_RETRIES
    timeout: float | None = None
    model: str | None = None
    redo: bool = False
    session_store: str | None = None
    extra_args: list[str] = field(default_factory=list)


class _UsageProblem(Exception):
    pass


def run_batch_command(argv: list[str], *, store_uri: str | None = None) -> int:
    """Run ``pi-host batch``; returns the exit status."""
    try:
        return _batch_command(argv, store_uri)
    except KeyboardInterrupt:  # Ctrl+C while the plugins load, before any task started
        print("Interrupted before any task started.", file=sys.stderr)
        return 130


def _batch_command(argv: list[str], store_uri: str | None) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print(_USAGE)
        return 0
    try:
        options = _parse(argv, store_uri)
    except _UsageProblem as exc:
        print(f"Error: {exc}\n{_USAGE}", file=sys.stderr)
        return 2
    from pi_host.batch import BatchExecutorError
    from pi_host.batch._files import ResultsLog, TasksFileError, read_tasks
    from pi_host.session import SessionStoreError

    try:
        tasks = read_tasks(options.tasks)
    except TasksFileError as exc:
        for problem in exc.problems:
            print(f"Error: {problem}", file=sys.stderr)
        print(f"Nothing was run; fix {options.tasks} and run the command again.", file=sys.stderr)
        return 2
    if not options.redo:
        # A rerun of a finished batch answers at once, without loading the plugins.
        earlier = ResultsLog.read(options.out / "results.jsonl")
        if all(earlier.finished(task.id) for task in tasks):
            print(
                f"Nothing to do: all {len(tasks)} tasks are ok in {earlier.path} (--redo runs them again)",
                file=sys.stderr,
            )
            return 0
    try:
        run, executor = _prepare(options)
    except (BatchExecutorError, SessionStoreError, OSError) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    lock = _lock(Path(run.out_dir))
    if lock is None:
        _close(executor)
        print(
            f"Error: another pi-host batch is running on {run.out_dir}; wait for it, or give another --out",
            file=sys.stderr,
        )
        return 1
    log = ResultsLog.open(Path(run.out_dir) / "results.jsonl")
    try:
        for number in log.skipped_lines:
            print(
                f"Warning: {log.path}:{number}: not a result line (torn by a crash?); skipped",
                file=sys.stderr,
            )
        todo = tasks if options.redo else [task for task in tasks if not log.finished(task.id)]
        already = len(tasks) - len(todo)
        if not todo:  # another batch finished them meanwhile
            _close(executor)
            print(f"Nothing to do: all {len(tasks)} tasks are ok in {log.path}", file=sys.stderr)
            return 0
        skipped = f", {already} already ok" if already else ""
        print(
            f"Running {len(todo)} of {len(tasks)} tasks{skipped} · executor {options.executor} · "
            f"concurrency {options.concurrency} · results in {log.path}",
            file=sys.stderr,
        )
        return _run(todo, tasks, run, executor, log, options)
    finally:
        log.close()
        lock.close()


def _close(executor: BatchExecutor) -> None:
    """Close an executor no task was given to (it may have connected to a cluster)."""
    import anyio

    anyio.run(executor.aclose)


def _lock(out: Path) -> IO[bytes] | None:
    """``DIR/batch.lock``, held until the command ends: two batches appending to one
    results.jsonl would number their attempts alike and overwrite each other's event logs.
    The lock goes with the process, however it ends; ``None`` if another batch holds it."""
    import fcntl

    handle = open(out / "batch.lock", "wb")  # noqa: SIM115 - held for the whole run
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    return handle


def _parse(argv: list[str], store_uri: str | None) -> _Options:
    argv = list(argv)
    extra: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, extra = argv[:at], argv[at + 1 :]
    values: dict[str, str] = {}
    flags: set[str] = set()
    positional: list[str] = []
    takes_value = (
        "--out",
        "--executor",
        "--address",
        "--concurrency",
        "--retries",
        "--timeout",
        "--model",
        "--session-store",
    )
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, inline = arg.partition("=")
        if name in takes_value:
            if eq:
                values[name] = inline
            elif i + 1 < len(argv):
                values[name] = argv[i + 1]
                i += 1
            else:
                raise _UsageProblem(f"option {name} needs a value")
        elif arg == "--redo":
            flags.add(arg)
        elif arg.startswith("-") and arg != "-":
            raise _UsageProblem(f"unknown option {arg} (pi-host arguments for the tasks go after --)")
        else:
            positional.append(arg)
        i += 1
    if len(positional) != 1:
        raise _UsageProblem(
            "give one tasks file" if not positional else f"one tasks file, not {len(positional)}"
        )
    if "--out" not in values:
        raise _UsageProblem("--out DIR is required: where results.jsonl, events/ and sessions/ go")
    options = _Options(tasks=Path(positional[0]), out=Path(values["--out"]), extra_args=extra)
    options.executor = values.get("--executor", "local")
    options.address = values.get("--address")
    options.concurrency = _whole(values, "--concurrency", DEFAULT_CONCURRENCY, least=1)
    options.retries = _whole(values, "--retries", DEFAULT_RETRIES, least=0)
    if "--timeout" in values:
        try:
            options.timeout = float(values["--timeout"])
        except ValueError:
            options.timeout = -1.0
        if not options.timeout > 0:
            raise _UsageProblem(f"--timeout takes seconds above 0, not {values['--timeout']!r}")
    options.model = values.get("--model")
    options.redo = "--redo" in flags
    options.session_store = values.get("--session-store", store_uri)
    return options


def _whole(values: dict[str, str], name: str, default: int, *, least: int) -> int:
    if name not in values:
        return default
    try:
        number = int(values[name])
    except ValueError:
        number = least - 1
    if number < least:
        raise _UsageProblem(f"{name} takes a whole number of at least {least}, not {values[name]!r}")
    return number


def _prepare(options: _Options) -> tuple[BatchRun, BatchExecutor]:
    """The run's settings and its executor; the session store is opened once to check it."""
    from pi_host.batch import BatchRun
    from pi_host.batch._open import open_batch_executor
    from pi_host.runtime import Host
    from pi_host.runtime._settings import settings_disabled_plugins
    from pi_host.runtime._stores import open_session_store

    host = Host.load(disabled=settings_disabled_plugins())
    store_uri = options.session_store or _setting_uri()
    if store_uri is not None:
        store_uri = absolute_store_uri(store_uri)
        open_session_store(store_uri, host.plugin_manager).close()
    executor = open_batch_executor(options.executor, options.address, host.plugin_manager)
    out = options.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    extra = ["--model", options.model] if options.model else []
    run = BatchRun(
        out_dir=str(out),
        session_store=store_uri,
        command=(sys.executable, "-m", "pi_host"),
        base_dir=str(options.tasks.resolve().parent),
        timeout=options.timeout,
        extra_args=(*extra, *options.extra_args),
    )
    return run, executor


def absolute_store_uri(uri: str) -> str:
    """``uri`` with a relative path of a built-in store (``sqlite:///rel.db``, ``jsonl:DIR``,
    a plain ``DIR``) made absolute: every task runs in its own ``cwd``, and must write to
    the store the command line meant. Other URIs are passed on unchanged."""
    from pi_host.session import uri_scheme
    from pi_host.session._sqlite_store import sqlite_path

    scheme = uri_scheme(uri)
    if scheme == "sqlite" and "?" not in uri and "#" not in uri:
        return f"sqlite:///{sqlite_path(uri)}"
    if scheme == "jsonl" and uri[len("jsonl:") :] and not uri.startswith("jsonl://"):
        return f"jsonl:{os.path.abspath(os.path.expanduser(uri[len('jsonl:') :]))}"
    if scheme == "":
        return os.path.abspath(os.path.expanduser(uri))
    return uri


def _setting_uri() -> str | None:
    from ._sessions_cmd import _setting_uri as setting

    return setting()


def _run(
    todo: list[BatchTask],
    tasks: list[BatchTask],
    run: BatchRun,
    executor: BatchExecutor,
    log: ResultsLog,
    options: _Options,
) -> int:
    import anyio

    from pi_host.batch import BatchExecutorError

    from ._batch_progress import BarProgress, LineProgress

    progress: BarProgress | LineProgress = (
        BarProgress(len(todo), options.concurrency)
        if sys.stderr.isatty()
        else LineProgress(len(todo), options.concurrency)
    )
    stopped_by: int | None = None
    outcome: BatchOutcome | None = None
    failure: Exception | None = None

    async def main() -> None:
        nonlocal stopped_by, outcome, failure
        from pi_host.batch._coordinator import run_batch

        work = anyio.CancelScope()
        async with anyio.create_task_group() as group:

            async def watch() -> None:
                # Kept open until the end: a second Ctrl+C while the tasks are being stopped
                # must not interrupt their stopping (and leave processes behind).
                nonlocal stopped_by
                with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                    async for number in signals:
                        if stopped_by is None:
                            stopped_by = number
                            print("Stopping the running tasks ...", file=sys.stderr, flush=True)
                            work.cancel()

            group.start_soon(watch)
            try:
                with work:
                    outcome = await run_batch(
                        todo,
                        run,
                        executor,
                        log,
                        concurrency=options.concurrency,
                        retries=options.retries,
                        progress=progress,
                    )
            except Exception as exc:  # the executor broke down (a lost cluster, a plugin's bug)
                failure = exc
            finally:
                with anyio.CancelScope(shield=True):
                    await executor.aclose()
                group.cancel_scope.cancel()

    try:
        anyio.run(main)
    except KeyboardInterrupt:  # before the signal receiver was up
        stopped_by = signal.SIGINT
    finally:
        progress.close()
    if failure is not None:
        reason = (
            str(failure)
            if isinstance(failure, BatchExecutorError)
            else f"{type(failure).__name__}: {failure}"
        )
        print(
            f"Error: the {options.executor} executor failed: {reason}\n"
            f"{progress.tally.done} of {len(todo)} tasks finished and are in {log.path}; "
            "run the same command again to resume.",
            file=sys.stderr,
        )
        return 1
    if stopped_by is not None or outcome is None:
        done = progress.tally.done
        print(
            f"Interrupted: {done} of {len(todo)} tasks finished and are in {log.path}; the running ones "
            "were stopped. Run the same command again to resume.",
            file=sys.stderr,
        )
        return 143 if stopped_by == signal.SIGTERM else 130
    return _summary(outcome, tasks, log, progress)


def _summary(
    outcome: BatchOutcome, tasks: list[BatchTask], log: ResultsLog, progress: BarProgress | LineProgress
) -> int:
    failed_ids = [task.id for task in tasks if not log.finished(task.id)]
    ok = len(tasks) - len(failed_ids)
    seconds = progress.tally.elapsed
    spent = f"${outcome.cost:.4f} this run · {seconds:.1f} s"
    print(f"{len(tasks)} tasks: {ok} ok, {len(failed_ids)} failed · {spent}", file=sys.stderr)
    if failed_ids:
        shown = failed_ids[:20]
        more = f" and {len(failed_ids) - len(shown)} more" if len(failed_ids) > len(shown) else ""
        print(f"Failed: {', '.join(shown)}{more}", file=sys.stderr)
        for task_id in shown:
            latest = log.latest.get(task_id)
            if latest is not None:
                print(f"  {task_id}: {latest.error}", file=sys.stderr)
        print(f"Run the same command again to retry the failed tasks; details in {log.path}", file=sys.stderr)
        return 1
    return 0
