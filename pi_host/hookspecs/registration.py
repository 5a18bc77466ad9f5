"""Registration hooks: plugins contribute tools, tool middleware, providers, slash commands,
flags, settings sections and abort scopes, and extend the interactive screen with key
bindings, custom-message renderers and tool renderers.

They fire at startup, after ``pi_addhooks``, and again after ``pi_configure`` (so tools can
be built from settings), in this order: providers, tools, tool middleware, commands, flags,
settings sections, abort scopes, shortcuts, message renderers, tool renderers. Each receives
a ``register`` callback (the ``llm`` style): call it once per object. Registrations are not
lifecycle events, so they are plain synchronous pluggy hooks; to add a tool later, while a
session runs, use ``ctx.register_tool``, and ``ctx.unregister_tool`` to take it back (from the
next provider call; register a new definition to replace it).

Between plugins, the first registration of a name in call order wins, and call order follows
the plugin tiers: essentials, the default set, installed plugins, plugins registered by code,
trusted project plugins, ``-e PATH``; a later tier comes first. So an installed plugin's
``read`` replaces the default one whatever the plugins are called. Within one tier the plugin
whose name sorts last comes first. Two plugins offering one tool, command or provider is a
*conflict*: pi-host warns at start-up naming both, ``pi-host plugins list`` shows it, and the
settings choose the winner::

    {"plugins": {"prefer": {"tools": {"read": "tools_fs"}, "commands": {"review": "my_plugin"},
                            "providers": {"anthropic-messages": "my_provider"}}}}

Each also receives ``config``, the configuration of the host it registers with (the
``HostConfig`` that ``pi_configure`` got), or ``None`` at the first collection, before settings
are read. A plugin that builds what it registers from settings reads them there rather than
keeping what ``pi_configure`` saw in module state: several hosts may live in one process (many
``create_session`` sessions on one event loop), and a host re-collects its registrations on
``/reload`` with its own configuration, not the one configured last::

    @hookimpl
    def pi_register_tools(register, config):
        shell = config.settings.get("shellPath") if config is not None else None
        register(create_shell_tool(shell_path=shell))

``pi_session_store`` and ``pi_batch_executor`` are synchronous too, but questions rather than
registrations: they fire whenever a session store is opened by URI or a batch run chooses its
executor, and the first plugin (in call order) that answers wins (``Strategy.SYNC_FIRST``, run
by ``PluginManager.call_first``).

These hooks, like ``pi_addhooks`` and ``pi_configure``, may be called in a worker thread
rather than on the event loop: ``create_session`` without a ``host`` (and a child session)
loads, configures and opens the session in one, one host at a time in the process, so that
the other sessions on the loop keep running. Do there only what needs no running loop, and
start what does (tasks, objects bound to the loop) in a lifecycle hook such as
``pi_session_start``.
"""

# mypy: disable-error-code="empty-body"

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._strategy import Strategy, hookspec

if TYPE_CHECKING:
    from pi_host.agent import Tool, ToolMiddleware
    from pi_host.batch import BatchExecutor
    from pi_host.providers import Provider
    from pi_host.session import SessionStore

    from ._context import HostConfig
    from ._registration import (
        AbortScope,
        Command,
        Flag,
        MessageRenderer,
        RpcCommand,
        SettingsSection,
        Shortcut,
        ToolRenderer,
    )

__all__ = [
    "pi_batch_executor",
    "pi_register_abort_scopes",
    "pi_register_commands",
    "pi_register_flags",
    "pi_register_message_renderers",
    "pi_register_providers",
    "pi_register_rpc_commands",
    "pi_register_settings",
    "pi_register_shortcuts",
    "pi_register_tool_middleware",
    "pi_register_tool_renderers",
    "pi_register_tools",
    "pi_session_store",
]


@hookspec(strategy=Strategy.SYNC)
def pi_register_providers(register: Callable[[Provider], None], config: HostConfig | None) -> None:
    """Register wire protocols (provider implementations), chosen by a model's ``api``.

    Fires at startup before ``pi_register_tools``.

    :param register: call ``register(Provider(api, stream))`` once per protocol. ``stream``
        may be a lazy ``"module:attribute"`` reference so the provider's SDK is only
        imported when a model of that API is used.
    :param config: the host's configuration (:class:`~pi_host.hookspecs.HostConfig`:
        settings, flags, mode), ``None`` at the first collection, before settings are read;
        see the module's docs.

    **Combination:** every implementation runs (synchronous). The first registration of an
    ``api`` in call order wins (a later tier first); ``plugins.prefer.providers.<api>`` in
    settings.json chooses another.
    **On error:** the plugin is reported as failed to load and unregistered; pi-host still starts.

    Example::

        from pi_host import hookimpl
        from pi_host.providers import Provider


        @hookimpl
        def pi_register_providers(register):
            register(Provider(api="my-llm-api", stream="my_llm_plugin.stream:stream"))
    """


@hookspec(strategy=Strategy.SYNC)
def pi_register_tools(register: Callable[[Tool[Any]], None], config: HostConfig | None) -> None:
    """Register tools the model can call.

    Fires at startup after ``pi_register_providers``. Which registered tools are active is
    decided later by settings and flags (``--tools``, ``--no-tools``).

    :param register: call ``register(tool)`` once per :class:`pi_host.Tool`.
    :param config: the host's configuration (:class:`~pi_host.hookspecs.HostConfig`:
        settings, flags, mode), ``None`` at the first collection, before settings are read;
        see the module's docs.

    **Combination:** every implementation runs (synchronous). The first registration of a
    name in call order wins: a later tier comes first, so an installed plugin's tool named like
    a default one replaces it whatever its name; ``plugins.prefer.tools.<name>`` in
    settings.json chooses between plugins that both offer a name. To change how a tool you do
    not own runs, wrap it (``pi_register_tool_middleware``) instead of replacing it.
    **On error:** the plugin is reported as failed to load and unregistered (none of its
    registrations count); pi-host still starts.

    Tools that return long output should cut it as pi's tools do, with the helpers exported
    from :mod:`pi_host`: ``truncate_head`` (file reads, listings), ``truncate_tail`` (command
    output), ``truncate_line`` and ``format_size``, within ``DEFAULT_MAX_LINES`` /
    ``DEFAULT_MAX_BYTES``.

    Example::

        from pydantic import BaseModel

        from pi_host import Tool, ToolResult, hookimpl


        class EchoParams(BaseModel):
            text: str


        async def echo(params, ctx):
            return ToolResult.text(params.text)


        @hookimpl
        def pi_register_tools(register):
            register(Tool(name="echo", description="Repeat the text.", parameters=EchoParams, execute=echo))
    """


@hookspec(strategy=Strategy.SYNC)
def pi_register_tool_middleware(
    register: Callable[[ToolMiddleware], None], config: HostConfig | None
) -> None:
    """Wrap tools you do not own: change their arguments, their result, or the call itself.

    Fires at startup after ``pi_register_tools``. A middleware does not own a tool name, so
    a sandbox, an audit log and an argument repairer can all wrap ``bash`` at once. It runs
    for every call of the tools it names, after ``pi_tool_call`` allowed the call and before
    ``pi_tool_result`` sees the result; tools added later with ``ctx.register_tool`` are
    wrapped too.

    :param register: call ``register(ToolMiddleware(name, wrap, tools=...))`` once per
        middleware; ``wrap`` is ``async def wrap(call, call_next) -> ToolResult``, where
        ``call`` is a :class:`pi_host.ToolInvocation` (``tool``, ``params``, ``ctx``) and
        ``await call_next()`` (or ``call_next(new_params)``) runs the rest of the chain.
    :param config: the host's configuration (:class:`~pi_host.hookspecs.HostConfig`:
        settings, flags, mode), ``None`` at the first collection, before settings are read;
        see the module's docs.

    **Order:** middlewares nest in call order: the first one called is the outermost (it sees
    the arguments first and the result last). Call order follows the plugin tiers (a later
    tier wraps around an earlier one), then, within a tier, the plugin whose name sorts last
    is outer; ``tryfirst=True`` on your implementation makes yours outermost, ``trylast=True``
    innermost (nearest the tool: the place for a sandbox). One plugin's middlewares nest in the
    order it registers them.
    **Combination:** every implementation runs (synchronous).
    **On error:** the plugin is reported as failed to load and unregistered; pi-host still
    starts. A middleware that raises while a tool runs fails that call: the model reads
    ``tool middleware "<name>" of plugin "<plugin>" failed: ...``.

    Example::

        from pi_host import ToolMiddleware, ToolResult, hookimpl


        async def audit(call, call_next):
            result = await call_next()
            print(f"{call.tool_name}({call.params}) -> {len(result.content)} blocks")
            return result


        async def no_sudo(call, call_next):
            if call.params.command.lstrip().startswith("sudo "):
                return ToolResult.text("sudo is not allowed here")
            return await call_next()


        @hookimpl
        def pi_register_tool_middleware(register):
            register(ToolMiddleware(name="audit", wrap=audit))
            register(ToolMiddleware(name="no-sudo", wrap=no_sudo, tools=frozenset({"bash"})))
    """


@hookspec(strategy=Strategy.SYNC)
def pi_register_commands(register: Callable[[Command], None], config: HostConfig | None) -> None:
    """Register slash commands (``/name args``).

    Fires at startup after ``pi_register_tool_middleware``. A command runs when the user's input starts
    with ``/name``, before ``pi_input``, even while the agent is busy.

    :param register: call ``register(Command(name, description, handler))`` once per command;
        ``handler`` is ``async def handler(args: str, ctx: CommandContext) -> None``.
    :param config: the host's configuration (:class:`~pi_host.hookspecs.HostConfig`:
        settings, flags, mode), ``None`` at the first collection, before settings are read;
        see the module's docs.

    **Combination:** every implementation runs (synchronous). Commands with the same name
    from several plugins get ``:1``, ``:2`` suffixes, as in pi: the first in call order (a
    later tier first) keeps the plain name, unless ``plugins.prefer.commands.<name>`` in
    settings.json chooses another.
    **On error:** the plugin is reported as failed to load and unregistered; pi-host still starts.

    Example::

        from pi_host import hookimpl
        from pi_host.hookspecs import Command


        async def stats(args, ctx):
            usage = ctx.context_usage()
            ctx.ui.notify(f"context: {usage.percent if usage else '?'}%")


        @hookimpl
        def pi_register_commands(register):
            register(Command(name="stats", description="Show context usage", handler=stats))
    """


@hookspec(strategy=Strategy.SYNC)
def pi_register_rpc_commands(register: Callable[[RpcCommand], None], config: HostConfig | None) -> None:
    """Add commands to RPC mode (``--mode rpc``) beside pi's own.

    Fires at startup after ``pi_register_commands``. A record on stdin whose ``type`` is not
    one of pi's commands is looked up among these; pi's own commands keep their meaning (a
    plugin cannot replace them), so pi's RPC clients see no difference. A client that sends
    a plugin's command to a host without that plugin gets pi's ``Unknown command`` error.

    :param register: call ``register(RpcCommand(name, handler, description))`` once per
        command; ``handler`` is ``async def handler(command, ctx) -> data``, with ``command``
        the whole record and ``ctx`` a :class:`CommandContext`. The response is pi's
        ``{"type": "response", "command": name, "success": true, "data": data}`` (with the
        record's ``id``); ``data`` is left out when the handler returns ``None``.
    :param config: the host's configuration (:class:`~pi_host.hookspecs.HostConfig`:
        settings, flags, mode), ``None`` at the first collection, before settings are read;
        see the module's docs.

    **Combination:** every implementation runs (synchronous). The first registration of a
    name in call order wins (a later tier first); a second one is ignored.
    **On error:** the plugin is reported as failed to load and unregistered; pi-host still
    starts. A handler that raises answers ``"success": false`` with its message.

    Example::

        from pi_host import hookimpl
        from pi_host.hookspecs import RpcCommand


        async def word_count(command, ctx):
            return {"words": sum(len(str(m.content).split()) for m in ctx.messages)}


        @hookimpl
        def pi_register_rpc_commands(register):
            register(RpcCommand(name="word_count", handler=word_count, description="Count words"))
    """


@hookspec(strategy=Strategy.SYNC)
def pi_register_flags(register: Callable[[Flag], None], config: HostConfig | None) -> None:
    """Register command-line flags (``--name``) for your plugin.

    Fires at startup after ``pi_register_rpc_commands``, before the command line's unknown
    flags are checked: a flag no plugin registers is an error.

    :param register: call ``register(Flag(name, type, default, description))`` once per flag;
        read the value with ``ctx.get_flag(name)`` or ``config.get_flag(name)``.
    :param config: the host's configuration (:class:`~pi_host.hookspecs.HostConfig`:
        settings, flags, mode), ``None`` at the first collection, before settings are read;
        see the module's docs.

    **Combination:** every implementation runs (synchronous).
    **On error:** the plugin is reported as failed to load and unregistered; pi-host still starts.

    Example::

        from pi_host import hookimpl
        from pi_host.hookspecs import Flag


        @hookimpl
        def pi_register_flags(register):
            register(Flag(name="plan", type="boolean", default=False, description="Plan before acting"))
    """


@hookspec(strategy=Strategy.SYNC)
def pi_register_settings(register: Callable[[SettingsSection], None], config: HostConfig | None) -> None:
    """Declare the ``settings.json`` sections your plugin owns.

    Fires at startup after ``pi_register_flags``. The host reads each section from the global
    and project settings (the project's values win, key by key), validates it with the
    section's model and gives it to the plugin through ``ctx.plugin_settings(Model)``; a
    value that does not validate is reported once (the file, the key, and that the default
    is used) and the run goes on with the model's default for it.

    :param register: call ``register(SettingsSection(key, model, description))`` once per section.
    :param config: the host's configuration (:class:`~pi_host.hookspecs.HostConfig`:
        settings, flags, mode), ``None`` at the first collection, before settings are read;
        see the module's docs.

    **Combination:** every implementation runs (synchronous). The first registration of a
    key wins; a second plugin declaring the same key is reported in the log and ignored.
    **On error:** the plugin is reported as failed to load and unregistered; pi-host still starts.

    Example::

        from pydantic import BaseModel, ConfigDict
        from pydantic.alias_generators import to_camel

        from pi_host import SettingsSection, hookimpl


        class GreeterSettings(BaseModel):
            model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

            enabled: bool = True
            greeting_text: str = "hello"  # "greeter": {"greetingText": "..."} in settings.json


        @hookimpl
        def pi_register_settings(register):
            register(SettingsSection("greeter", GreeterSettings, "Greets at session start"))


        @hookimpl
        def pi_session_start(reason, ctx):
            settings = ctx.plugin_settings(GreeterSettings)
            if settings.enabled:
                ctx.ui.notify(settings.greeting_text)
    """


@hookspec(strategy=Strategy.SYNC)
def pi_register_abort_scopes(register: Callable[[AbortScope], None], config: HostConfig | None) -> None:
    """Declare the named kinds of work your plugin lets users and clients abort on their own.

    Fires at startup after ``pi_register_settings``. Once ``name`` is declared, RPC
    ``abort_<name>`` is answered (``{"type": "response", "command": "abort_<name>",
    "success": true}``) and aborts the scopes of that name the plugin opens with
    ``ctx.abort_scope(name)``; an abort that arrives during a run before the scope opens
    is kept until that run ends. The session's abort (Escape, RPC ``abort``) reaches every
    open scope whatever its name.

    :param register: call ``register(AbortScope(name, description))`` once per name.
    :param config: the host's configuration (:class:`~pi_host.hookspecs.HostConfig`:
        settings, flags, mode), ``None`` at the first collection, before settings are read;
        see the module's docs.

    **Combination:** every implementation runs (synchronous); a name declared twice is one scope.
    **On error:** the plugin is reported as failed to load and unregistered; pi-host still starts.

    Example::

        import anyio

        from pi_host import AbortScope, hookimpl


        @hookimpl
        def pi_register_abort_scopes(register):
            register(AbortScope("cooldown", "The pause before the next request"))


        async def cool_down(ctx):
            with ctx.abort_scope("cooldown") as signal:  # RPC abort_cooldown ends it
                with anyio.move_on_after(5):
                    await signal.wait()
            return not signal.aborted
    """


@hookspec(strategy=Strategy.SYNC)
def pi_register_shortcuts(register: Callable[[Shortcut], None], config: HostConfig | None) -> None:
    """Register key bindings for the interactive editor (pi's ``registerShortcut``).

    Fires at startup after ``pi_register_abort_scopes``; only the interactive mode binds them.

    :param register: call ``register(Shortcut(key, description, handler))`` once per key;
        ``handler`` is ``async def handler(ctx: CommandContext) -> None`` and runs in the
        background, as a slash command's handler does. ``/hotkeys`` lists the keys.
    :param config: the host's configuration (:class:`~pi_host.hookspecs.HostConfig`:
        settings, flags, mode), ``None`` at the first collection, before settings are read;
        see the module's docs.

    **Combination:** every implementation runs (synchronous). The first registration of a key
    wins; a key the interactive mode binds itself (Enter, Ctrl+C, the keys of
    ``keybindings.json``) keeps its own action.
    **On error:** the plugin is reported as failed to load and unregistered; pi-host still
    starts. A handler that raises is reported on the screen.

    Example::

        from pi_host import hookimpl
        from pi_host.hookspecs import Shortcut


        async def show_usage(ctx):
            usage = ctx.context_usage()
            ctx.ui.notify(f"context: {usage.percent if usage else '?'}%")


        @hookimpl
        def pi_register_shortcuts(register):
            register(Shortcut(key="ctrl+x", description="Show context usage", handler=show_usage))
    """


@hookspec(strategy=Strategy.SYNC)
def pi_register_message_renderers(
    register: Callable[[MessageRenderer], None], config: HostConfig | None
) -> None:
    """Register how the interactive screen shows your custom messages.

    pi's ``registerMessageRenderer``: for the messages sent with ``ctx.send_message``.

    Fires at startup after ``pi_register_shortcuts``.

    :param register: call ``register(MessageRenderer(custom_type, render))`` once per type;
        ``render(message, expanded)`` returns what to show (anything rich can print: a
        ``str``, a ``rich.text.Text`` …) or ``None`` for the default look.
    :param config: the host's configuration (:class:`~pi_host.hookspecs.HostConfig`:
        settings, flags, mode), ``None`` at the first collection, before settings are read;
        see the module's docs.

    **Combination:** every implementation runs (synchronous). The first registration of a
    ``custom_type`` wins.
    **On error:** the plugin is reported as failed to load and unregistered; pi-host still
    starts. A ``render`` that raises is reported once and the default look is used.

    Example::

        from rich.text import Text

        from pi_host import hookimpl
        from pi_host.hookspecs import MessageRenderer


        def render_reminder(message, expanded):
            return Text(f"⏰ {message.content}", style="bold yellow")


        @hookimpl
        def pi_register_message_renderers(register):
            register(MessageRenderer(custom_type="reminder", render=render_reminder))
    """


@hookspec(strategy=Strategy.SYNC)
def pi_register_tool_renderers(register: Callable[[ToolRenderer], None], config: HostConfig | None) -> None:
    """Register how the interactive screen draws a tool's calls.

    pi's ``renderCall`` and ``renderResult``. Fires at startup after
    ``pi_register_message_renderers``. The screen puts what the two functions return into the
    call's panel (yellow while running, then green or red); a tool without a renderer gets the
    default one: its name, its arguments as JSON and a preview of its output. The bash plugin
    draws ``$ command`` and the tail of the output this way.

    :param register: call ``register(ToolRenderer(tool, render_call, render_result))`` once
        per tool; both functions receive a :class:`ToolCallView` and return anything rich can
        print (``None``: nothing for that part). Leave one out to keep its default.
    :param config: the host's configuration (:class:`~pi_host.hookspecs.HostConfig`:
        settings, flags, mode), ``None`` at the first collection, before settings are read;
        see the module's docs.

    **Combination:** every implementation runs (synchronous). The first registration of a
    tool name wins.
    **On error:** the plugin is reported as failed to load and unregistered; pi-host still
    starts. A renderer that raises is reported once and the default is used.

    Example::

        from rich.text import Text

        from pi_host import hookimpl
        from pi_host.hookspecs import ToolRenderer


        def weather_call(view):
            return Text(f"☁ weather in {view.args.get('city', '...')}", style="bold")


        def weather_result(view):
            return None if view.result_text is None else Text(view.result_text, style="cyan")


        @hookimpl
        def pi_register_tool_renderers(register):
            register(ToolRenderer(tool="weather", render_call=weather_call, render_result=weather_result))
    """


@hookspec(strategy=Strategy.SYNC_FIRST, returns="pi_host.session:SessionStore")
def pi_session_store(uri: str) -> SessionStore | None:
    """Open the session store a URI names, if the URI is yours.

    Fires when pi-host opens a store: at startup for ``--session-store URI`` (or the
    ``sessionStore`` setting) and in ``pi-host sessions list|export|import``. pi-host itself
    answers ``jsonl:``/``file:`` URIs and plain directories (pi's session files, the
    default) and ``sqlite:///path``, after every plugin.

    :param uri: the URI as the user wrote it, e.g. ``redis://cache:6379/0``.
    :returns: a :class:`pi_host.SessionStore` for a URI your plugin serves; ``None`` for
        any other URI. Raise :class:`pi_host.SessionStoreError` for a URI of your scheme
        that is malformed or names a store that cannot be reached; its message is shown.

    **Combination:** implementations are asked in call order (last registered first); the
    first store returned wins (pluggy's ``firstresult``: a plain ``pm.hook.pi_session_store``
    call returns it too). A URI no plugin answers is an error naming its scheme.
    **On error:** an exception other than ``SessionStoreError``, or a result that is not a
    ``SessionStore``, is reported with the plugin's name, and opening the store fails; so
    does an implementation past the hook timeout (it is named in a warning while it blocks).

    Check your store with :func:`pi_host.testing.check_session_store`.

    Example::

        from pi_host import SessionStore, hookimpl


        @hookimpl
        def pi_session_store(uri):
            if uri.startswith("redis://"):
                return RedisStore(uri)  # a SessionStore subclass
            return None
    """


@hookspec(strategy=Strategy.SYNC_FIRST, returns="pi_host.batch:BatchExecutor")
def pi_batch_executor(name: str, address: str | None) -> BatchExecutor | None:
    """Return the executor that runs a batch's tasks, if ``--executor NAME`` is yours.

    Fires once per ``pi-host batch`` run, after the tasks file is read and before the first
    task starts (not at all when every task is already ``ok``). pi-host itself answers
    ``local`` (a pool of at most ``--concurrency`` ``pi-host`` subprocesses on this machine),
    after every plugin.

    :param name: the ``--executor`` value as the user wrote it (``local`` by default).
    :param address: the ``--address`` value (a cluster to join, e.g. ``ray://head:10001``),
        or ``None`` when it was not given.
    :returns: a :class:`pi_host.BatchExecutor` for a name your plugin serves; ``None`` for
        any other name. Connect lazily in :meth:`~pi_host.BatchExecutor.map` or eagerly
        here; raise :class:`pi_host.BatchExecutorError` when the cluster cannot be reached
        or the address is malformed; its message is shown and the batch exits with status 1
        before any task runs.

    Every executor runs each attempt with :func:`pi_host.run_batch_task` (on a worker, in a
    thread ...): it starts the ``pi-host --mode json -p`` process, writes the attempt's event
    log and returns the :class:`pi_host.BatchResult`. The coordinator keeps the rest: the
    tasks file, skipping finished tasks, retries (of results with ``infrastructure=True``),
    ``results.jsonl``, the progress bar and the exit status. ``map`` must stop all running
    work before its iterator's ``aclose()`` returns (Ctrl+C).

    **Combination:** implementations are asked in call order (a later tier first, then last
    registered first); the first executor returned wins. A name no plugin answers is an error
    naming the plugin to install when it is known (``pip install pi-batch-ray`` for ``ray``).
    **On error:** an exception other than ``BatchExecutorError`` is reported with the
    plugin's name, and the batch exits with status 1.

    Example::

        from pi_host import BatchExecutor, LocalExecutor, hookimpl


        class AtMostTwo(BatchExecutor):  # the local pool, never more than two processes

            def __init__(self):
                self._pool = LocalExecutor()

            def map(self, attempts, run, *, concurrency):
                return self._pool.map(attempts, run, concurrency=min(concurrency, 2))


        @hookimpl
        def pi_batch_executor(name, address):
            return AtMostTwo() if name == "small" else None
    """
