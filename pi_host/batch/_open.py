"""Choosing a batch executor by name through the ``pi_batch_executor`` hook."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pi_host.errors import HookError

from ._executor import BatchExecutor, BatchExecutorError

if TYPE_CHECKING:
    from pi_host.plugin import PluginManager

__all__ = ["open_batch_executor"]

_KNOWN_PLUGINS = {"ray": "pi-batch-ray"}
"""Executor names whose first-party plugin is known, for the remedy in the error."""


def open_batch_executor(
    name: str, address: str | None, plugin_manager: PluginManager, *, timeout: float | None = None
) -> BatchExecutor:
    """The executor ``name`` names, from the first plugin (in call order) that serves it.

    ``pi_batch_executor`` is asked like every synchronous first-result hook
    (:meth:`PluginManager.call_first`: its declared reducer, the shared error policy and hook
    timeout); what is left here is what a failure means for a batch.

    :param timeout: the host's hook timeout (``Dispatcher.hook_timeout``), ``None`` for none.
    :raises BatchExecutorError: for a name no plugin serves (naming the plugin to install
        when it is known), or a plugin that fails or returns something else.
    """
    try:
        executor = plugin_manager.call_first("pi_batch_executor", timeout=timeout, name=name, address=address)
    except HookError as exc:
        cause = exc.__cause__
        if isinstance(cause, BatchExecutorError):
            raise cause from None  # the plugin's own word on its executor
        detail = f"{type(cause).__name__}: {cause}" if cause is not None else str(exc)
        raise BatchExecutorError(
            f'plugin "{exc.plugin}" failed to start the batch executor {name!r}: {detail}'
        ) from cause
    if isinstance(executor, BatchExecutor):
        return executor
    plugin = _KNOWN_PLUGINS.get(name)
    remedy = f"install it with `pip install {plugin}`" if plugin else "install a plugin that provides it"
    raise BatchExecutorError(f"no batch executor is called {name!r}: {remedy}, or use --executor local")
