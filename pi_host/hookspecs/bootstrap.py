"""Setup hooks: run once while pi-host starts, before any session exists.

Order: plugins are registered (essentials, then installed plugins, then trusted project
plugins), ``pi_addhooks`` lets them publish hookspecs of their own, the registration hooks
(:mod:`pi_host.hookspecs.registration`) collect tools, providers, commands and flags, and
``pi_configure`` hands every plugin the final configuration.

Both hooks are *historic*: a plugin registered later (a trusted project plugin, a plugin
loaded by ``/reload``) still receives the calls that already happened. Like the registration
hooks, they may be called in a worker thread, off the event loop (see
:mod:`pi_host.hookspecs.registration`).
"""

# mypy: disable-error-code="empty-body"

from __future__ import annotations

from typing import TYPE_CHECKING

from ._strategy import Strategy, hookspec

if TYPE_CHECKING:
    import pluggy

    from ._context import HostConfig

__all__ = ["pi_addhooks", "pi_configure"]


@hookspec(strategy=Strategy.SYNC, historic=True)
def pi_addhooks(pluginmanager: pluggy.PluginManager) -> None:
    """Publish hookspecs of your own, for other plugins to implement.

    Fires right after the plugin is registered, before the registration hooks, so hooks
    added here can be implemented by plugins registered earlier or later.

    :param pluginmanager: the host's plugin manager; call ``add_hookspecs(module)`` on it.

    **Combination:** every implementation runs (plain pluggy, synchronous, historic).
    **On error:** the plugin fails to load and is reported; pi-host still starts.

    Declare the new hooks with :func:`pi_host.hookspecs.hookspec` so the dispatcher knows
    how to combine their results, and call them from any hook that has the plugin context:
    ``await ctx.call_hook("pi_myplugin_prompt", ctx=ctx)`` applies the spec's rule, the error
    policy and the hook timeout (a ``Strategy.SYNC_FIRST`` hook is asked with
    ``pluginmanager.call_first(name, ...)``). Plugins that implement a hook which may be
    absent mark it ``@hookimpl(optionalhook=True)``.

    Example::

        import sys

        from pi_host import hookimpl
        from pi_host.hookspecs import Strategy, hookspec


        @hookspec(strategy=Strategy.FIRST, returns=str)
        def pi_myplugin_prompt(ctx):
            \"\"\"Return the instructions for my plugin's summary.\"\"\"


        @hookimpl
        def pi_addhooks(pluginmanager):
            pluginmanager.add_hookspecs(sys.modules[__name__])
    """


@hookspec(strategy=Strategy.SYNC, historic=True)
def pi_configure(config: HostConfig) -> None:
    """Read the final configuration: settings, command-line flags, the working directory.

    Fires once at startup after every registration hook ran (so plugin flags are parsed) and
    once the project's trust is settled (a ``pi_project_trust`` asked to decide it fires first:
    a trusted project's settings and plugins are part of the configuration), before the first
    ``pi_session_start``; again on ``/reload``.

    Several hosts may live in one process (many ``create_session`` sessions), each with its
    own configuration, so keep nothing of it in module state: the registration hooks receive
    the same ``config`` (build tools from settings there), and lifecycle hooks read the
    session's ``ctx.settings``.

    :param config: the host configuration (settings, flag values, a :class:`Stash` for
        state that outlives sessions).

    **Combination:** every implementation runs (plain pluggy, synchronous, historic).
    **On error:** the plugin fails to load and is reported; pi-host still starts.

    Example::

        from pi_host import hookimpl
        from pi_host.hookspecs import StashKey

        VERBOSE = StashKey[bool]()


        @hookimpl
        def pi_configure(config):
            config.stash[VERBOSE] = bool(config.get_flag("audit-verbose"))
    """
