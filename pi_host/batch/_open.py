"""Choosing a batch executor by name through the ``pi_batch_executor`` hook."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._executor import BatchExecutor, BatchExecutorError

if TYPE_CHECKING:
    from pi_host.plugin import PluginManager

__all__ = ["KNOWN_EXECUTOR_PLUGINS", "open_batch_executor"]

KNOWN_EXECUTOR_PLUGINS: dict[str, str] = {"ray": "pi-batch-ray"}
"""Executor names whose first-party plugin is known, for the remedy in the error."""


def open_batch_executor(name: str, address: str | None, plugin_manager: PluginManager) -> BatchExecutor:
    """The executor ``name`` names, from the first plugin (in call order) that serves it.

    :raises BatchExecutorError: for a name no plugin serves (naming the plugin to install
        when it is known), or a plugin that fails or returns something else.
    """
    caller = getattr(plugin_manager.hook, "pi_batch_executor", None)
    impls = caller.get_hookimpls() if caller is not None else []
    for impl in reversed(impls):
        try:
            executor = impl.function(name=name, address=address)
        except BatchExecutorError:
            raise
        except Exception as exc:
            raise BatchExecutorError(
                f'plugin "{impl.plugin_name}" failed to start the batch executor {name!r}: '
                f"{type(exc).__name__}: {exc}"
            ) from exc
        if executor is None:
            continue
        if not isinstance(executor, BatchExecutor):
            raise BatchExecutorError(
                f'plugin "{impl.plugin_name}" returned {type(executor).__name__} for executor '
                f"{name!r}, which is not a pi_host.BatchExecutor"
            )
        return executor
    plugin = KNOWN_EXECUTOR_PLUGINS.get(name)
    remedy = f"install it with `pip install {plugin}`" if plugin else "install a plugin that provides it"
    raise BatchExecutorError(f"no batch executor is called {name!r}: {remedy}, or use --executor local")
