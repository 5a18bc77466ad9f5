"""Registration hooks: plugins contribute tools, providers, slash commands and flags.

They fire once at startup, after ``pi_addhooks`` and before ``pi_configure``, in this order:
providers, tools, commands, flags. Each receives a ``register`` callback (the ``llm`` style):
call it once per object. Registrations are not lifecycle events, so they are plain
synchronous pluggy hooks; to add a tool later, while a session runs, use
``ctx.register_tool``.

Between plugins, the first registration of a name wins (call order: last registered plugin
first); a plugin tool named like a built-in one replaces it.

``pi_session_store`` is of the same kind (synchronous, asked of every plugin in call order)
but fires whenever a session store is opened by URI, not once at startup.
"""

# mypy: disable-error-code="empty-body"

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._strategy import Strategy, hookspec

if TYPE_CHECKING:
    from pi_host.agent import Tool
    from pi_host.providers import Provider
    from pi_host.session import SessionStore

    from ._registration import Command, Flag

__all__ = [
    "pi_register_commands",
    "pi_register_flags",
    "pi_register_providers",
    "pi_register_tools",
    "pi_session_store",
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
    first store returned wins. A URI no plugin answers is an error naming its scheme.
    **On error:** an exception other than ``SessionStoreError`` is reported with the
    plugin's name, and opening the store fails.

    Check your store with :func:`pi_host.testing.check_session_store`.

    Example::

        from pi_host import SessionStore, hookimpl


        @hookimpl
        def pi_session_store(uri):
            if uri.startswith("redis://"):
                return RedisStore(uri)  # a SessionStore subclass
            return None
    """
