"""``/tree``: moving the session's leaf to another entry, optionally summarising the branch left.

``pi_session_before_tree`` may cancel, or supply the summary itself; otherwise the summary
comes from ``pi_summarize_branch`` (abortable as the ``branch_summary`` scope). The entry
navigated to is re-editable when it is a user or custom message (pi's rule).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, cast

from pi_host.hookspecs import BranchSummary, Cancel, EntryView, TreePreparation, TreeSummaryResult
from pi_host.messages import UserMessage
from pi_host.providers import AbortSignal

from ._session_agent_events import user_text
from ._session_types import SessionError, TreeNavigation

if TYPE_CHECKING:
    from pi_host.agent import Agent
    from pi_host.session import SessionManager

    from ._abort_scopes import AbortScopes
    from ._context import SessionPluginContext
    from ._host import Host

__all__ = ["navigate_tree"]


class _Session(Protocol):
    """What tree navigation needs of its session."""

    host: Host
    agent: Agent
    session_manager: SessionManager
    ctx: SessionPluginContext
    abort_scopes: AbortScopes


async def navigate_tree(
    session: _Session,
    target_id: str,
    *,
    summarize: bool = False,
    custom_instructions: str | None = None,
    replace_instructions: bool = False,
    label: str | None = None,
) -> TreeNavigation:
    """Move the session's leaf to another entry (``/tree``), optionally summarising the branch left."""
    manager = session.session_manager
    old_leaf = manager.leaf_id
    if target_id == old_leaf:
        return TreeNavigation(cancelled=False)
    target = manager.get_entry(target_id)
    if target is None:
        raise SessionError(f"Entry {target_id} not found")
    old_path = {entry.id for entry in manager.get_branch()} if old_leaf else set()
    target_path = [entry.id for entry in manager.get_branch(target_id)]
    common = next((entry_id for entry_id in reversed(target_path) if entry_id in old_path), None)
    to_summarize = (
        [entry for entry in manager.get_branch() if common is None or entry.id not in set(target_path)]
        if old_leaf
        else []
    )
    preparation = TreePreparation(
        target_id=target_id,
        old_leaf_id=old_leaf,
        common_ancestor_id=common,
        entries_to_summarize=tuple(to_summarize),
        user_wants_summary=summarize,
        custom_instructions=custom_instructions,
        replace_instructions=replace_instructions,
        label=label,
    )
    signal = AbortSignal()
    decision = await session.host.dispatcher.session_before_tree(
        preparation=preparation, signal=signal, ctx=session.ctx
    )
    if isinstance(decision, Cancel):
        return TreeNavigation(cancelled=True)
    summary: BranchSummary | None = None
    from_hook = False
    if isinstance(decision, TreeSummaryResult):
        summary = decision.summary
        from_hook = summary is not None
        custom_instructions = decision.custom_instructions or custom_instructions
        if decision.replace_instructions is not None:
            replace_instructions = decision.replace_instructions
        label = decision.label or label
    if summary is None and summarize and to_summarize:
        with session.abort_scopes.open("branch_summary", fresh=True) as summary_signal:
            summary = await session.host.dispatcher.summarize_branch(
                entries=cast("list[EntryView]", to_summarize),
                custom_instructions=custom_instructions,
                replace_instructions=replace_instructions,
                signal=summary_signal,
                ctx=session.ctx,
            )
            if summary_signal.aborted:
                return TreeNavigation(cancelled=True, aborted=True)
    message = getattr(target, "message", None)
    editor_text = None
    if isinstance(message, UserMessage):
        new_leaf = target.parent_id
        editor_text = user_text(message)
    elif target.type == "custom_message":
        new_leaf = target.parent_id
        content = getattr(target, "content", "")
        editor_text = content if isinstance(content, str) else None
    else:
        new_leaf = target.id
    summary_entry = None
    if summary is not None and summary.summary:
        manager.branch_with_summary(new_leaf, summary.summary, summary.details, from_hook=from_hook or None)
        summary_entry = manager.get_leaf_entry()
        if label and summary_entry is not None:
            manager.append_label_change(summary_entry.id, label)
    elif new_leaf is None:
        manager.reset_leaf()
    else:
        manager.branch(new_leaf)
    if label and summary_entry is None:
        # Without a summary entry to carry it, pi labels the entry navigated to.
        manager.append_label_change(target_id, label)
    session.agent.state.messages = manager.build_session_context().messages
    await session.host.dispatcher.session_tree(
        new_leaf_id=manager.leaf_id,
        old_leaf_id=old_leaf,
        summary_entry=cast("EntryView | None", summary_entry),
        from_extension=from_hook,
        ctx=session.ctx,
    )
    return TreeNavigation(cancelled=False, editor_text=editor_text)
