"""Registration hooks: plugins contribute tools, providers, slash commands and flags, and
extend the interactive screen with key bindings, custom-message renderers and tool renderers.

They fire once at startup, after ``pi_addhooks`` and before ``pi_configure``, in this order:
providers, tools, commands, flags, shortcuts, message renderers, tool renderers. Each receives
a ``register`` callback (the ``llm`` style): call it once per object. Registrations are not
lifecycle events, so they are plain synchronous pluggy hooks; to add a tool later, while a
session runs, use ``ctx.register_tool``.

Between plugins, the first registration of a name wins (call order: last registered plugin
first); a plugin tool named like a built-in one replaces it.
"""

# mypy: disable-error-code="empty-body"

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._strategy import Strategy, hookspec

if TYPE_CHECKING:
    from pi_host.agent import Tool
    from pi_host.providers import Provider

    from ._registration import Command, Flag, MessageRenderer, Shortcut, ToolRenderer

__all__ = [
    "pi_register_commands",
    "pi_register_flags",
    "pi_register_message_renderers",
    "pi_register_providers",
    "pi_register_shortcuts",
    "pi_register_tool_renderers",
    "pi_register_tools",
]


@hookspec(strategy=Strategy.SYNC)
def pi_register_providers(register: Callable[[Provider], None]) -> None:
    """Register wire protocols (provider implementations), chosen by a model's ``api``.

    Fires at startup before ``pi_register_tools``.

    :param register: call ``register(Provider(api, stream))`` once per protocol. ``stream``
        may be a lazy ``"module:attribute"`` reference so the provider's SDK is only
        imported when a model of that API is used.

    **Combination:** every implementation runs (synchronous). The first registration of an
    ``api`` wins.
    **On error:** the plugin is reported as failed to load and unregistered; pi-host still starts.

    Example::

        from pi_host import hookimpl
        from pi_host.providers import Provider


        @hookimpl
        def pi_register_providers(register):
            register(Provider(api="my-llm-api", stream="my_llm_plugin.stream:stream"))
    """


@hookspec(strategy=Strategy.SYNC)
def pi_register_tools(register: Callable[[Tool[Any]], None]) -> None:
    """Register tools the model can call.

    Fires at startup after ``pi_register_providers``. Which registered tools are active is
    decided later by settings and flags (``--tools``, ``--no-tools``).

    :param register: call ``register(tool)`` once per :class:`pi_host.Tool`.

    **Combination:** every implementation runs (synchronous). The first registration of a
    name wins: pluggy calls later-registered plugins first, so an installed plugin's tool named
    like a built-in replaces it; mark the implementation ``tryfirst=True`` to be sure.
    **On error:** the plugin is reported as failed to load and unregistered; pi-host still starts.

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
def pi_register_commands(register: Callable[[Command], None]) -> None:
    """Register slash commands (``/name args``).

    Fires at startup after ``pi_register_tools``. A command runs when the user's input starts
    with ``/name``, before ``pi_input``, even while the agent is busy.

    :param register: call ``register(Command(name, description, handler))`` once per command;
        ``handler`` is ``async def handler(args: str, ctx: CommandContext) -> None``.

    **Combination:** every implementation runs (synchronous). Commands with the same name
    from several plugins get ``:1``, ``:2`` suffixes, as in pi.
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
def pi_register_flags(register: Callable[[Flag], None]) -> None:
    """Register command-line flags (``--name``) for your plugin.

    Fires at startup after ``pi_register_commands``, before the command line's unknown
    flags are checked: a flag no plugin registers is an error.

    :param register: call ``register(Flag(name, type, default, description))`` once per flag;
        read the value with ``ctx.get_flag(name)`` or ``config.get_flag(name)``.

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
def pi_register_shortcuts(register: Callable[[Shortcut], None]) -> None:
    """Register key bindings for the interactive editor (pi's ``registerShortcut``).

    Fires at startup after ``pi_register_flags``; only the interactive mode binds them.

    :param register: call ``register(Shortcut(key, description, handler))`` once per key;
        ``handler`` is ``async def handler(ctx: CommandContext) -> None`` and runs in the
        background, as a slash command's handler does. ``/hotkeys`` lists the keys.

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
def pi_register_message_renderers(register: Callable[[MessageRenderer], None]) -> None:
    """Register how the interactive screen shows your custom messages.

    pi's ``registerMessageRenderer``: for the messages sent with ``ctx.send_message``.

    Fires at startup after ``pi_register_shortcuts``.

    :param register: call ``register(MessageRenderer(custom_type, render))`` once per type;
        ``render(message, expanded)`` returns what to show (anything rich can print: a
        ``str``, a ``rich.text.Text`` …) or ``None`` for the default look.

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
def pi_register_tool_renderers(register: Callable[[ToolRenderer], None]) -> None:
    """Register how the interactive screen draws a tool's calls.

    pi's ``renderCall`` and ``renderResult``. Fires at startup after
    ``pi_register_message_renderers``. The screen puts what the two functions return into the
    call's panel (yellow while running, then green or red); a tool without a renderer gets the
    default one: its name, its arguments as JSON and a preview of its output. The bash plugin
    draws ``$ command`` and the tail of the output this way.

    :param register: call ``register(ToolRenderer(tool, render_call, render_result))`` once
        per tool; both functions receive a :class:`ToolCallView` and return anything rich can
        print (``None``: nothing for that part). Leave one out to keep its default.

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
