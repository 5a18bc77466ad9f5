"""Model hooks: the user (or a plugin) picked another model or reasoning level.

On a model change that also clamps the reasoning level, ``pi_thinking_level_select`` fires
first, then ``pi_model_select``. Neither fires when nothing changed.
"""

# mypy: disable-error-code="empty-body"

from __future__ import annotations

from typing import TYPE_CHECKING

from ._strategy import Strategy, hookspec

if TYPE_CHECKING:
    from pi_host.providers import Model, ThinkingLevel

    from ._context import PluginContext
    from ._payloads import ModelSelectSource

__all__ = ["pi_model_select", "pi_thinking_level_select"]


@hookspec(strategy=Strategy.NOTIFY)
def pi_thinking_level_select(level: ThinkingLevel, previous_level: ThinkingLevel, ctx: PluginContext) -> None:
    """The reasoning level changed (``/thinking``, Shift+Tab, a plugin, or a model switch clamping it).

    Fires before ``pi_model_select`` when a model switch clamps the level.

    :param level: the new level.
    :param previous_level: the level before.
    :param ctx: the plugin context.

    **Combination:** notify — every implementation runs; return nothing.
    **On error:** reported and skipped.

    Example::

        from pi_host import hookimpl


        @hookimpl
        def pi_thinking_level_select(level, ctx):
            ctx.ui.set_status("thinking", f"thinking: {level}")
    """


@hookspec(strategy=Strategy.NOTIFY)
def pi_model_select(
    model: Model, previous_model: Model | None, source: ModelSelectSource, ctx: PluginContext
) -> None:
    """Another model became active.

    Fires after the switch (and after ``pi_thinking_level_select`` if the level was clamped),
    not when the same model is selected again.

    :param model: the new model.
    :param previous_model: the model before, ``None`` at startup.
    :param source: ``"set"`` (``/model``, ``--model``, a plugin), ``"cycle"`` (Ctrl+P) or
        ``"restore"`` (resuming a session).
    :param ctx: the plugin context.

    **Combination:** notify — every implementation runs; return nothing.
    **On error:** reported and skipped.

    Example::

        from pi_host import hookimpl


        @hookimpl
        def pi_model_select(model, ctx):
            ctx.ui.set_status("model", model.ref)
    """
