"""The ``pi-host`` command: parse pi's flags, build a session, run the chosen mode.

``--version`` and ``--help`` return before anything heavy is imported.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from pi_host._lifeline import watch_lifeline
from pi_host._version import __version__ as _VERSION
from pi_host.errors import UsageError

from ._args import SUBCOMMANDS, CliArgs, parse_args, render_help, unknown_flag_error

if TYPE_CHECKING:
    from pi_host.messages import ImageContent
    from pi_host.runtime import AgentSession, Host

    from ._distribution import Distribution

__all__ = ["main"]


def main(argv: list[str] | None = None, *, distribution: Distribution | None = None) -> int:
    """Entry point of ``pi-host``; returns the exit status.

    :param distribution: run as that agent distribution (its command name, agent directory,
        plugins and defaults) instead of as plain ``pi-host``.

    With ``PI_HOST_LIFELINE_FD`` set, the process gets SIGTERM once that pipe's writer (the
    supervisor that started it) is gone, in every mode and subcommand (see pi_host._lifeline).
    """
    watch_lifeline()  # first: a supervisor that died during start-up is noticed at once
    _skip_collection_at_exit()
    try:
        return _main(argv, distribution)
    except (BrokenPipeError, BaseExceptionGroup) as exc:
        if not _broken_pipe(exc):
            raise
        # `pi-host ... | head`: the reader left; exit quietly, as command-line tools do.
        from ._print import discard_stdout

        discard_stdout()
        return 0
    except UsageError as exc:  # e.g. `--no-plugin faux`: an essential plugin cannot be disabled
        print(f"Error: {exc}", file=sys.stderr)
        return 2


def _broken_pipe(exc: BaseException) -> bool:
    """A closed stdout, alone or as every error of a task group."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_broken_pipe(inner) for inner in exc.exceptions)
    return isinstance(exc, BrokenPipeError)


_exit_hook_registered = False


def _skip_collection_at_exit() -> None:
    """Spare the interpreter's exit the cyclic collections over everything still alive.

    At exit CPython clears every module and runs the cyclic collector over what remains:
    after a reply that is ~75,000 long-lived objects (modules, classes, validators), and
    those passes were most of the process's exit (~80 of ~90 ms). ``gc.freeze()`` from an
    ``atexit`` hook moves them out of the collector's sight once everything else has run;
    only objects in reference cycles are then left for the operating system to reclaim,
    whose finalizers Python never promises to run at exit. Streams are still flushed, and
    every other ``atexit`` hook (logging's included) still runs. Registered once; harmless in
    a program that embeds :func:`main` and goes on, since it acts only at exit.
    """
    global _exit_hook_registered
    if not _exit_hook_registered:
        atexit.register(gc.freeze)
        _exit_hook_registered = True


def _main(argv: list[str] | None, distribution: Distribution | None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    if arguments and arguments[0] not in SUBCOMMANDS and not arguments[0].startswith("-"):
        from ._plugin_commands import find_plugin_command, run_plugin_command

        command = find_plugin_command(arguments[0])
        if command is not None:
            return run_plugin_command(command, arguments[1:])
    args = parse_args(arguments)
    if args.version:
        print(_VERSION if distribution is None else distribution.version or _VERSION)
        return 0
    if distribution is not None:
        distribution.apply_environment()
    return _run_command(args, distribution)


def _run_command(args: CliArgs, distribution: Distribution | None) -> int:
    errors = [d.message for d in args.diagnostics if d.level == "error"]
    for diagnostic in args.diagnostics:
        if diagnostic.level == "warning":
            print(f"Warning: {diagnostic.message}", file=sys.stderr)
    if errors:
        for message in errors:
            print(f"Error: {message}", file=sys.stderr)
        return 2
    if args.subcommand is not None and args.subcommand[0] == "sessions":
        from ._sessions_cmd import run_sessions_command

        with _collector_paused():
            return run_sessions_command(args.subcommand[1:], store_uri=args.session_store)
    if args.subcommand is not None and args.subcommand[0] == "batch":
        from ._batch_cmd import run_batch_command

        return run_batch_command(args.subcommand[1:], store_uri=args.session_store)
    if args.subcommand is not None:
        if args.subcommand[0] in ("install", "uninstall"):
            from ._install_cmd import run_install, run_uninstall

            run = run_install if args.subcommand[0] == "install" else run_uninstall
            return run(args.subcommand[1:])
        from ._plugins_cmd import run_plugins_command

        with _collector_paused():
            return run_plugins_command(args.subcommand[1:])
    if args.help:
        with _collector_paused():
            text = render_help(_plugin_flag_help(args, distribution))
        print(text if distribution is None else distribution.render_help(text), end="")
        return 0
    if args.list_models is not None:
        from ._list_models import run_list_models

        with _collector_paused():
            return run_list_models(None if args.list_models is True else str(args.list_models))
    if args.export:
        from ._export import run_export

        outputs = args.messages[:1]
        return run_export(args.export, outputs[0] if outputs else None)
    # The collector stays paused from here until the session is ready (see _run).
    collecting = gc.isenabled()
    gc.disable()
    try:
        import anyio

        return anyio.run(_run, args, distribution, collecting)
    except KeyboardInterrupt:
        return 130
    finally:
        if collecting:
            gc.enable()


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic collector while a command that exits soon loads the plugins.

    Importing them creates tens of thousands of objects that live until exit and next to no
    garbage; the collector's passes over them were about a third of ``--help``. Afterwards
    they go straight to the oldest generation (``freeze`` then ``unfreeze``), still
    collectable, so the next pass over the youngest one does not walk them all.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.freeze()
            gc.unfreeze()
            gc.enable()


def _plugin_flag_help(args: CliArgs, distribution: Distribution | None = None) -> list[tuple[str, str, str]]:
    """The flags plugins add, for ``--help``: only the plugins are loaded, not the runtime."""
    from pi_host.runtime._host import plugin_flags

    extra = distribution.load_plugin_modules() if distribution is not None else ()
    flags = plugin_flags(disabled=_disabled_plugins(args), extra_plugins=extra, extensions=args.extensions)
    return [(flag.name, flag.type, flag.description) for flag in flags.values()]


def _disabled_plugins(args: CliArgs) -> list[str]:
    """``--no-plugin NAME`` arguments plus the settings' ``plugins.disable``."""
    from pi_host.runtime._settings import settings_disabled_plugins

    return [*args.disabled_plugins, *settings_disabled_plugins(approve=args.approve)]


def _read_stdin() -> str | None:
    if sys.stdin is None or sys.stdin.closed or sys.stdin.isatty():
        return None
    try:
        data = sys.stdin.read()
    except (OSError, ValueError):
        return None
    return data if data.strip() else None


async def _run(args: CliArgs, distribution: Distribution | None = None, collecting: bool = False) -> int:
    """Start the session and run the mode.

    :param collecting: the cyclic collector was enabled; it was paused for start-up.
    """
    # Start-up creates ~75,000 long-lived objects (modules, classes, validators) and next to
    # no garbage; the cyclic collector's passes over them cost ~10 % of a one-shot reply. It
    # is paused while they are made, and they are then frozen (kept out of its sight) for
    # the run: enabled again with them in its youngest generation, its next pass would walk
    # every one of them (~20 ms), and later passes again as they age.
    try:
        try:
            started = await _start(args, distribution)
        finally:
            if collecting:
                gc.freeze()
                gc.enable()
        if isinstance(started, int):
            return started
        from pi_host.plugin._containment import watch_user_interrupts

        # A KeyboardInterrupt a plugin raises is its failure; one the user's Ctrl+C causes
        # is not (and stops a def hook that holds the loop): tell them apart for the run.
        with watch_user_interrupts():
            return await _run_mode(*started, verbose=args.verbose, resume=args.resume)
    finally:
        if collecting:
            gc.unfreeze()  # a program that embeds main() gets its objects collected as before


async def _start(
    args: CliArgs, distribution: Distribution | None
) -> int | tuple[str, AgentSession, Host, list[str], list[ImageContent]]:
    """Load the plugins and create the session; an ``int`` is an exit status (start-up failed)."""
    from pi_host.runtime import Host, SessionError, SessionOptions, create_session

    from ._files import FileArgumentError, read_file_arguments

    interactive = (
        not args.print and args.mode in (None, "text") and sys.stdin.isatty() and sys.stdout.isatty()
    )
    run_mode = (
        "rpc" if args.mode == "rpc" else "json" if args.mode == "json" else "tui" if interactive else "print"
    )

    extra = distribution.load_plugin_modules() if distribution is not None else ()
    host = Host.load(disabled=_disabled_plugins(args), extra_plugins=extra, extensions=args.extensions)
    for error in host.load_errors:
        print(str(error), file=sys.stderr)
    unknown = [name for name in args.unknown_flags if name not in host.flags]
    if unknown:
        print(f"Error: {unknown_flag_error(unknown[0], list(host.flags))}", file=sys.stderr)
        return 2

    try:
        initial_text, images = read_file_arguments(args.file_args, os.getcwd())
    except FileArgumentError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    messages = list(args.messages)
    piped = _read_stdin() if run_mode != "rpc" and not interactive else None
    if piped is not None:
        initial_text = f"{initial_text}{piped}" if initial_text else piped
    if initial_text:
        first = messages.pop(0) if messages else ""
        messages.insert(0, f"{initial_text}{first}")

    ui = None
    if run_mode == "tui":
        # Creating the session may need the user (project trust) before the screen is up.
        from ._interactive._startup_ui import StartupUI

        ui = StartupUI()
    options = SessionOptions(
        mode=run_mode,  # type: ignore[arg-type]
        ui=ui,
        provider=args.provider,
        model=args.model,
        api_key=args.api_key,
        thinking=args.thinking,  # type: ignore[arg-type]
        session=args.session,
        session_id=args.session_id,
        continue_session=args.continue_session,
        fork=args.fork,
        session_dir=args.session_dir,
        session_store=args.session_store,
        no_session=args.no_session,
        name=args.name,
        tools=args.tools,
        exclude_tools=args.exclude_tools,
        no_builtin_tools=args.no_builtin_tools,
        no_tools=args.no_tools,
        system_prompt=args.system_prompt,
        append_system_prompt=args.append_system_prompt or None,
        no_context_files=args.no_context_files,
        skills=args.skills,
        no_skills=args.no_skills,
        prompt_templates=args.prompt_templates,
        no_prompt_templates=args.no_prompt_templates,
        disabled_plugins=args.disabled_plugins,
        flags=dict(args.unknown_flags),
        approve=args.approve,
    )
    if distribution is not None:
        options = distribution.session_options(options)
    try:
        session = await create_session(options, host=host)
    except SessionError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    if run_mode != "tui":  # the terminal UI shows these itself, as notices (_interactive_session)
        _report_configuration_problems(session)
    return run_mode, session, host, messages, images


def _report_configuration_problems(session: AgentSession) -> None:
    """One warning line per problem in models.json and settings.json, before the run: a broken
    file is otherwise only seen as its effect ("No model selected", a default used)."""
    resolver = session.model_resolver
    if resolver is not None and resolver.registry.error_line:
        print(f"Warning: {resolver.registry.error_line}", file=sys.stderr)
    if session.settings_manager is not None:
        for issue in session.settings_manager.drain_issues():
            if issue.message:
                print(f"Warning: {issue}", file=sys.stderr)


async def _run_mode(
    mode: str,
    session: AgentSession,
    host: Host,
    messages: list[str],
    images: list[ImageContent],
    *,
    verbose: bool = False,
    resume: bool = False,
) -> int:
    if mode == "rpc":
        from ._rpc import run_rpc_mode

        return await run_rpc_mode(session)
    if mode == "tui":
        return await _run_interactive_mode(session, messages, verbose=verbose, resume=resume)
    from ._print import run_print_mode

    return await run_print_mode(session, messages, images, json_mode=mode == "json")


async def _run_interactive_mode(
    session: AgentSession, messages: list[str], *, verbose: bool, resume: bool
) -> int:
    """The terminal UI until the user quits, or SIGTERM / SIGHUP end it as a quit (exit 143 /
    129); then the ``session_shutdown`` hooks with reason ``quit``.

    The signals are watched through the shutdown too: closing a terminal window sends SIGHUP
    twice, and the second must not kill the process before the hooks have run.
    """
    import functools
    import signal

    import anyio

    from ._interactive import QuitRequest, run_interactive
    from ._interactive_session import InteractiveSessionAdapter
    from ._signals import exit_status, watch_exit_signals

    quit_request = QuitRequest()
    signalled: list[int] = []

    def on_signal(status: int) -> None:
        signalled.append(status)
        quit_request.request(terminal_gone=status == exit_status(signal.SIGHUP))

    async with anyio.create_task_group() as tg:
        session.bind_task_group(tg)
        await tg.start(functools.partial(watch_exit_signals, on_signal, once=False))
        adapter = InteractiveSessionAdapter(session)
        tg.start_soon(adapter.start)
        try:
            await run_interactive(
                adapter,
                initial_messages=messages,
                version=_VERSION,
                hide_thinking=bool(session.settings and session.settings.hide_thinking_block),
                verbose=verbose,
                open_resume_picker=resume,
                quit_request=quit_request,
            )
        finally:
            with anyio.CancelScope(shield=True):
                await session.shutdown("quit")
            tg.cancel_scope.cancel()
    return signalled[0] if signalled else 0
