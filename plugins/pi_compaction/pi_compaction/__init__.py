"""pi-compaction: summarise old history when the context fills up, as pi does.

Installed, it registers through the ``pi_host.plugins`` entry point ``compaction``: it
prepares compactions (``pi_compaction_prepare``, a hook of its own that other plugins may
implement: :mod:`pi_compaction.hookspecs`), writes the default summary (a ``trylast``
``pi_session_before_compact``) and branch summaries (``pi_summarize_branch``) with the
session's model, compacts before prompts, between the turns of a long tool loop and after
runs that overflowed or crossed the threshold, and adds ``/compact [instructions]``.
Settings: ``compaction.enabled``, ``compaction.reserveTokens``, ``compaction.keepRecentTokens``
and ``branchSummary.reserveTokens``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._plugin import (
    OVERFLOW_RECOVERY_FAILED,
    compact_command,
    compaction_settings,
    pi_addhooks,
    pi_after_agent_run,
    pi_before_prompt,
    pi_compaction_prepare,
    pi_message_end,
    pi_message_start,
    pi_prepare_next_turn,
    pi_register_commands,
    pi_register_settings,
    pi_session_before_compact,
    pi_summarize_branch,
)
from ._run import NOTHING_TO_COMPACT, CompactionFailed, compaction_json, run_compaction
from ._trigger import entry_ms, should_compact

if TYPE_CHECKING:
    from ._prepare import (
        CutPoint,
        add_file_ops,
        context_tokens,
        estimate_context_tokens,
        estimate_tokens,
        extract_file_ops,
        file_lists,
        find_cut_point,
        find_turn_start,
        prepare_compaction,
    )
    from ._settings import BranchSummarySettings, CompactionSettings
    from ._summarize import (
        BRANCH_SUMMARY_MAX_TOKENS,
        BRANCH_SUMMARY_PREAMBLE,
        NO_BRANCH_CONTENT,
        SUMMARY_SYSTEM_PROMPT,
        Summarize,
        SummaryAborted,
        format_file_operations,
        prepare_branch_entries,
        serialize_conversation,
        summarize_branch,
        summarize_compaction,
        summary_request,
    )

__all__ = [
    "BRANCH_SUMMARY_MAX_TOKENS",
    "BRANCH_SUMMARY_PREAMBLE",
    "NOTHING_TO_COMPACT",
    "NO_BRANCH_CONTENT",
    "OVERFLOW_RECOVERY_FAILED",
    "SUMMARY_SYSTEM_PROMPT",
    "BranchSummarySettings",
    "CompactionFailed",
    "CompactionSettings",
    "CutPoint",
    "Summarize",
    "SummaryAborted",
    "add_file_ops",
    "compact_command",
    "compaction_json",
    "compaction_settings",
    "context_tokens",
    "entry_ms",
    "estimate_context_tokens",
    "estimate_tokens",
    "extract_file_ops",
    "file_lists",
    "find_cut_point",
    "find_turn_start",
    "format_file_operations",
    "pi_addhooks",
    "pi_after_agent_run",
    "pi_before_prompt",
    "pi_compaction_prepare",
    "pi_message_end",
    "pi_message_start",
    "pi_prepare_next_turn",
    "pi_register_commands",
    "pi_register_settings",
    "pi_session_before_compact",
    "pi_summarize_branch",
    "prepare_branch_entries",
    "prepare_compaction",
    "run_compaction",
    "serialize_conversation",
    "should_compact",
    "summarize_branch",
    "summarize_compaction",
    "summary_request",
]

# The preparation and summary functions are imported on first access (PEP 562), as the hooks
# import them only when a compaction happens.
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(
        [
            "CutPoint",
            "add_file_ops",
            "context_tokens",
            "estimate_context_tokens",
            "estimate_tokens",
            "extract_file_ops",
            "file_lists",
            "find_cut_point",
            "find_turn_start",
            "prepare_compaction",
        ],
        f"{__name__}._prepare",
    ),
    **dict.fromkeys(["BranchSummarySettings", "CompactionSettings"], f"{__name__}._settings"),
    **dict.fromkeys(
        [
            "BRANCH_SUMMARY_MAX_TOKENS",
            "BRANCH_SUMMARY_PREAMBLE",
            "NO_BRANCH_CONTENT",
            "SUMMARY_SYSTEM_PROMPT",
            "Summarize",
            "SummaryAborted",
            "format_file_operations",
            "prepare_branch_entries",
            "serialize_conversation",
            "summarize_branch",
            "summarize_compaction",
            "summary_request",
        ],
        f"{__name__}._summarize",
    ),
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
