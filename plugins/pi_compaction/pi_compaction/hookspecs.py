"""pi-compaction's own hooks, for plugins that take part in its compactions.

pi-compaction adds them to the host through ``pi_addhooks`` when it loads, so they exist
only where it is installed; implement them with ``@hookimpl(optionalhook=True)`` if your
plugin should also load without it. Where they fire in pi's sequence::

    compaction_start (event)
      pi_compaction_prepare        what to summarise and what to keep (this module)
      pi_session_before_compact    cancel, or supply the summary (pi's hook)
      (the compaction entry is written)
      pi_session_compact           (pi's hook)
    compaction_end (event)
"""

# mypy: disable-error-code="empty-body"

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pi_host.hookspecs import CompactionPreparation, Strategy, hookspec

if TYPE_CHECKING:
    from pi_host.hookspecs import CompactionReason, EntryView, PluginContext

__all__ = ["pi_compaction_prepare"]


@hookspec(strategy=Strategy.FIRST, returns=CompactionPreparation)
def pi_compaction_prepare(
    branch_entries: Sequence[EntryView],
    custom_instructions: str | None,
    reason: CompactionReason,
    ctx: PluginContext,
) -> CompactionPreparation | None:
    """Decide what a compaction summarises and what it keeps (pi's ``prepareCompaction``).

    Fires after the ``compaction_start`` session event, before ``pi_session_before_compact``,
    which receives the preparation. With no preparation the compaction ends with
    ``Nothing to compact (session too small)``.

    :param branch_entries: every entry of the current branch, root first.
    :param custom_instructions: the user's focus for the summary (``/compact <text>``).
    :param reason: ``"manual"``, ``"threshold"`` or ``"overflow"``.
    :param ctx: the plugin context (a compaction plugin reads its budgets from its own
        settings section, ``ctx.plugin_settings(Model)``).
    :returns: a :class:`CompactionPreparation` (cut point, messages to summarise, split-turn
        prefix, token estimate, previous summary, file operations), or ``None`` when there
        is nothing to compact.

    **Combination:** first — the first preparation wins. pi-compaction answers last
    (``trylast=True``) with pi's algorithm; a plugin may choose a different cut by answering
    before it.
    **On error:** reported and skipped.

    Example (``optionalhook``: the plugin still loads where pi-compaction is not installed)::

        from pi_host import hookimpl
        from pi_host.hookspecs import CompactionPreparation


        @hookimpl(tryfirst=True, optionalhook=True)
        def pi_compaction_prepare(branch_entries):
            messages = [entry for entry in branch_entries if entry.type == "message"]
            if len(messages) < 4:
                return None
            return CompactionPreparation(first_kept_entry_id=messages[-2].id)
    """
