"""Session hooks: a session starts, switches, forks, compacts, navigates its tree and ends.

Orders, as in pi:

- startup: ``pi_session_start(reason="startup")`` → ``pi_resources_discover``;
- ``/new``, ``/resume``: ``pi_session_before_switch`` → ``pi_session_shutdown`` →
  ``pi_session_start`` → ``pi_resources_discover``;
- ``/fork``, ``/clone``: ``pi_session_before_fork`` → ``pi_session_shutdown`` →
  ``pi_session_start(reason="fork")``;
- compaction (run by the plugin that compacts): ``pi_session_before_compact`` → (summary) →
  ``pi_session_compact``;
- ``/tree``: ``pi_session_before_tree`` → ``pi_summarize_branch`` (when a summary is wanted
  and none was supplied) → ``pi_session_tree``;
- exit: ``pi_session_shutdown(reason="quit")``.

The ``pi_session_before_*`` hooks may cancel the operation with :class:`Cancel`; the first
non-``None`` result decides. Call order is last-registered first, so a plugin installed
after pi-host's defaults is asked before them; mark a policy ``tryfirst=True`` to be asked
before every other plugin.
"""

# mypy: disable-error-code="empty-body"

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from ._payloads import CompactionPreparation
from ._results import (
    BranchSummary,
    Cancel,
    CompactionResult,
    SessionBeforeForkResult,
    TreeSummaryResult,
)
from ._strategy import Strategy, hookspec

if TYPE_CHECKING:
    from pi_host.providers import AbortSignal

    from ._context import PluginContext
    from ._payloads import (
        CompactionReason,
        EntryView,
        SessionShutdownReason,
        SessionStartReason,
        TreePreparation,
    )

__all__ = [
    "pi_session_before_compact",
    "pi_session_before_fork",
    "pi_session_before_switch",
    "pi_session_before_tree",
    "pi_session_compact",
    "pi_session_shutdown",
    "pi_session_start",
    "pi_session_tree",
    "pi_summarize_branch",
]


@hookspec(strategy=Strategy.NOTIFY)
def pi_session_start(
    reason: SessionStartReason, previous_session_file: str | None, ctx: PluginContext
) -> None:
    """A session became active: at startup, after ``/new``, ``/resume``, ``/fork`` or ``/reload``.

    Fires after ``pi_project_trust`` (at startup) or ``pi_session_shutdown`` of the previous
    session, and before ``pi_resources_discover``. Restore plugin state from the session's
    entries here (``ctx.session_manager.get_entries()``).

    :param reason: ``"startup"``, ``"reload"``, ``"new"``, ``"resume"`` or ``"fork"``.
    :param previous_session_file: the session file active before, for ``new``, ``resume``
        and ``fork``; otherwise ``None``.
    :param ctx: the plugin context, bound to the new session.

    **Combination:** notify — every implementation runs; return nothing.
    **On error:** reported (an ``extension_error`` event and a log line) and skipped.

    Example::

        from pi_host import hookimpl


        @hookimpl
        def pi_session_start(reason, ctx):
            if reason == "startup":
                ctx.ui.set_status("audit", "audit: on")
    """


@hookspec(strategy=Strategy.FIRST, returns=Cancel)
def pi_session_before_switch(
    reason: Literal["new", "resume"], target_session_file: str | None, ctx: PluginContext
) -> Cancel | None:
    """The user is about to leave this session for a new or another one; may cancel.

    Fires before ``pi_session_shutdown`` of the current session.

    :param reason: ``"new"`` (``/new``) or ``"resume"`` (``/resume``).
    :param target_session_file: the session file to switch to, for ``resume``.
    :param ctx: the plugin context of the current session.
    :returns: :class:`Cancel` to stay in the current session, or ``None``.

    **Combination:** first — the first non-``None`` result decides; later plugins are not asked.
    **On error:** reported and skipped (the switch goes ahead).

    Example::

        from pi_host import hookimpl
        from pi_host.hookspecs import Cancel


        @hookimpl
        async def pi_session_before_switch(ctx):
            if ctx.has_ui and not await ctx.ui.confirm("Leave session?", "Unsaved plan will be lost."):
                return Cancel(reason="kept the current session")
            return None
    """


@hookspec(strategy=Strategy.FIRST, returns=(Cancel, SessionBeforeForkResult))
def pi_session_before_fork(
    entry_id: str, position: Literal["before", "at"], ctx: PluginContext
) -> Cancel | SessionBeforeForkResult | None:
    """The user is about to fork (``/fork``) or clone (``/clone``) the session; may cancel.

    Fires before ``pi_session_shutdown`` and ``pi_session_start(reason="fork")``.

    :param entry_id: the entry the fork starts from.
    :param position: ``"before"`` (fork from before that user message, ``/fork``) or ``"at"``
        (copy up to and including it, ``/clone``).
    :param ctx: the plugin context of the current session.
    :returns: :class:`Cancel`, :class:`SessionBeforeForkResult` to adjust the fork, or ``None``.

    **Combination:** first — the first non-``None`` result decides.
    **On error:** reported and skipped (the fork goes ahead).

    Example::

        from pi_host import hookimpl
        from pi_host.hookspecs import SessionBeforeForkResult


        @hookimpl
        def pi_session_before_fork(position):
            if position == "at":
                return SessionBeforeForkResult(skip_conversation_restore=True)
            return None
    """


@hookspec(strategy=Strategy.FIRST, returns=(Cancel, CompactionResult), bounded=False)
def pi_session_before_compact(
    preparation: CompactionPreparation,
    branch_entries: Sequence[EntryView],
    custom_instructions: str | None,
    reason: CompactionReason,
    will_retry: bool,
    signal: AbortSignal,
    ctx: PluginContext,
) -> Cancel | CompactionResult | None:
    """Compaction is about to summarise old history; cancel it or supply the summary.

    Fires after the ``compaction_start`` session event and before the summary is generated;
    ``pi_session_compact`` follows once the compaction entry is written.

    :param preparation: what would be summarised and what kept.
    :param branch_entries: every entry of the current branch, root first.
    :param custom_instructions: the user's focus for the summary (``/compact <text>``).
    :param reason: ``"manual"``, ``"threshold"`` or ``"overflow"``.
    :param will_retry: whether the failed request is retried after compacting (overflow).
    :param signal: aborted when the user cancels the compaction; pass it to slow work.
    :param ctx: the plugin context.
    :returns: :class:`Cancel` to skip compaction, a :class:`CompactionResult` to use instead
        of generating one, or ``None``.

    **Combination:** first — the first non-``None`` result decides. The compaction plugin
    generates the default summary with ``trylast=True``, so any other plugin is asked first.
    **On error:** reported and skipped.

    Example::

        from pi_host import hookimpl
        from pi_host.hookspecs import CompactionResult


        @hookimpl
        def pi_session_before_compact(preparation):
            kept = len(preparation.messages_to_summarize)
            return CompactionResult(
                summary=f"{kept} earlier messages were dropped.",
                first_kept_entry_id=preparation.first_kept_entry_id,
                tokens_before=preparation.tokens_before,
            )
    """


@hookspec(strategy=Strategy.NOTIFY)
def pi_session_compact(
    compaction_entry: EntryView,
    from_extension: bool,
    reason: CompactionReason,
    will_retry: bool,
    ctx: PluginContext,
) -> None:
    """A compaction entry was written; the agent's messages now start from its summary.

    Fires after ``pi_session_before_compact`` and the summary, before the
    ``compaction_end`` session event.

    :param compaction_entry: the new ``compaction`` entry (``summary``, ``first_kept_entry_id``,
        ``tokens_before``, ``details``).
    :param from_extension: whether a plugin supplied the summary through
        ``pi_session_before_compact``.
    :param reason: ``"manual"``, ``"threshold"`` or ``"overflow"``.
    :param will_retry: whether the failed request is retried next.
    :param ctx: the plugin context.

    **Combination:** notify — every implementation runs; return nothing.
    **On error:** reported and skipped.

    Example::

        from pi_host import hookimpl


        @hookimpl
        def pi_session_compact(compaction_entry, ctx):
            ctx.ui.notify(f"compacted {compaction_entry.tokens_before} tokens")
    """


@hookspec(strategy=Strategy.FIRST, returns=(Cancel, TreeSummaryResult), bounded=False)
def pi_session_before_tree(
    preparation: TreePreparation, signal: AbortSignal, ctx: PluginContext
) -> Cancel | TreeSummaryResult | None:
    """The user is about to move to another point of the session tree (``/tree``); may cancel.

    Fires before ``pi_summarize_branch`` (which only fires when a summary is wanted and this
    hook supplied none) and ``pi_session_tree``.

    :param preparation: the target, the branch being left and the user's summary choices.
    :param signal: aborted when the user cancels the navigation.
    :param ctx: the plugin context.
    :returns: :class:`Cancel`, a :class:`TreeSummaryResult` supplying the summary or
        adjusting its instructions and label, or ``None``.

    **Combination:** first — the first non-``None`` result decides.
    **On error:** reported and skipped.

    Example::

        from pi_host import hookimpl
        from pi_host.hookspecs import TreeSummaryResult


        @hookimpl
        def pi_session_before_tree(preparation):
            if preparation.user_wants_summary and preparation.label is None:
                return TreeSummaryResult(label="explored")
            return None
    """


@hookspec(strategy=Strategy.FIRST, returns=BranchSummary, bounded=False)
def pi_summarize_branch(
    entries: Sequence[EntryView],
    custom_instructions: str | None,
    replace_instructions: bool,
    signal: AbortSignal,
    ctx: PluginContext,
) -> BranchSummary | None:
    """Summarise the branch the user is leaving during tree navigation.

    Fires after ``pi_session_before_tree`` when the user asked for a summary and no plugin
    supplied one there; the summary becomes a ``branch_summary`` entry before
    ``pi_session_tree``.

    :param entries: the entries of the abandoned branch, oldest first.
    :param custom_instructions: the user's instructions for the summary, if any.
    :param replace_instructions: whether those instructions replace the default prompt.
    :param signal: aborted when the user cancels the navigation.
    :param ctx: the plugin context (its ``model`` is the one to summarise with).
    :returns: a :class:`BranchSummary`, or ``None`` to let another plugin do it.

    **Combination:** first — the first summary wins. The compaction plugin provides the
    default with ``trylast=True``.
    **On error:** reported and skipped; with no summary the navigation proceeds without one.

    Example::

        from pi_host import hookimpl
        from pi_host.hookspecs import BranchSummary


        @hookimpl
        def pi_summarize_branch(entries):
            return BranchSummary(summary=f"Explored {len(entries)} entries, then came back.")
    """


@hookspec(strategy=Strategy.NOTIFY)
def pi_session_tree(
    new_leaf_id: str | None,
    old_leaf_id: str | None,
    summary_entry: EntryView | None,
    from_extension: bool,
    ctx: PluginContext,
) -> None:
    """The session moved to another point of its tree.

    Fires after ``pi_session_before_tree`` (and ``pi_summarize_branch``), once the new leaf
    is set and any branch summary entry is written.

    :param new_leaf_id: the new leaf entry.
    :param old_leaf_id: the leaf before navigating.
    :param summary_entry: the ``branch_summary`` entry written for the abandoned branch, if any.
    :param from_extension: whether a plugin supplied that summary.
    :param ctx: the plugin context.

    **Combination:** notify — every implementation runs; return nothing.
    **On error:** reported and skipped.

    Example::

        from pi_host import hookimpl


        @hookimpl
        def pi_session_tree(new_leaf_id, ctx):
            ctx.ui.set_status("tree", f"at {new_leaf_id}")
    """


@hookspec(strategy=Strategy.NOTIFY)
def pi_session_shutdown(
    reason: SessionShutdownReason, target_session_file: str | None, ctx: PluginContext
) -> None:
    """The session is ending: pi-host exits, reloads, or switches to another session.

    Fires after a successful ``pi_session_before_switch``/``_fork`` and before the next
    ``pi_session_start``; on exit (Ctrl+C, Ctrl+D, ``/quit``, SIGTERM, SIGHUP) it is the last
    hook. Release resources (processes, files) here.

    :param reason: ``"quit"``, ``"reload"``, ``"new"``, ``"resume"`` or ``"fork"``.
    :param target_session_file: the session file that becomes active next, if known.
    :param ctx: the plugin context of the ending session.

    **Combination:** notify — every implementation runs; return nothing.
    **On error:** reported and skipped.

    Example::

        from pi_host import hookimpl


        @hookimpl
        def pi_session_shutdown(reason, ctx):
            ctx.append_entry("audit", {"closed": reason})
    """
