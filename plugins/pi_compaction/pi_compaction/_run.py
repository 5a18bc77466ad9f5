"""One compaction, with pi's events and hooks, run by this plugin through the public ``ctx``.

pi's sequence: ``compaction_start`` → the preparation (``pi_compaction_prepare``) →
``pi_session_before_compact`` (a plugin may cancel or supply the summary; this plugin's own
summariser answers last) → the ``compaction`` entry, from which the agent's messages are
rebuilt → ``pi_session_compact`` → ``compaction_end`` with the result, the error or
``aborted``. The session's abort (Escape, RPC ``abort``) reaches the summary through the
``compaction`` abort scope; prompts the user sends meanwhile wait for the new history.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from pi_host import CompactionResult, PluginContext

__all__ = ["NOTHING_TO_COMPACT", "CompactionFailed", "compaction_json", "run_compaction"]

Reason = Literal["manual", "threshold", "overflow"]

NOTHING_TO_COMPACT = "Nothing to compact (session too small)"
"""pi's error for a manual compaction with nothing to summarise."""

# pi's prefixes of ``compaction_end.errorMessage`` when compacting failed.
_FAILED = {
    "manual": "Compaction failed: ",
    "threshold": "Auto-compaction failed: ",
    "overflow": "Context overflow recovery failed: ",
}


class CompactionFailed(RuntimeError):
    """A manual compaction could not be done; the message is pi's (``/compact`` and RPC
    ``compact`` report it)."""


def compaction_json(result: CompactionResult) -> dict[str, Any]:
    """A compaction result in pi's camelCase shape (``compaction_end.result``)."""
    data: dict[str, Any] = {
        "summary": result.summary,
        "firstKeptEntryId": result.first_kept_entry_id,
        "tokensBefore": result.tokens_before,
    }
    if result.details is not None:
        data["details"] = result.details
    return data


def _exception_text(described: str) -> str:
    """``RuntimeError: boom`` (how a reported failure reads) → ``boom``."""
    name, separator, text = described.partition(": ")
    return text if separator and name.isidentifier() else described


async def run_compaction(
    ctx: PluginContext,
    reason: Reason,
    *,
    will_retry: bool = False,
    custom_instructions: str | None = None,
) -> CompactionResult | None:
    """Compact now; returns the result, or ``None`` when nothing was compacted.

    :raises CompactionFailed: a manual compaction had nothing to compact or failed (the
        ``compaction_end`` event reported it first, as pi does).
    """
    from pi_host import Cancel, CompactionEndEvent, CompactionResult, CompactionStartEvent

    def end(**fields: Any) -> None:
        ctx.emit(CompactionEndEvent(reason=reason, **{"will_retry": False, **fields}))

    with ctx.hold_prompts(), ctx.abort_scope("compaction", fresh=reason == "manual") as signal:
        ctx.emit(CompactionStartEvent(reason=reason))
        try:
            branch = list(ctx.session_manager.get_branch())
            preparation = await ctx.call_hook(
                "pi_compaction_prepare",
                branch_entries=branch,
                custom_instructions=custom_instructions,
                reason=reason,
                ctx=ctx,
            )
            if preparation is None:
                if reason != "manual":
                    # pi ends an automatic compaction with nothing to cut quietly: a long tool
                    # loop may check after every turn.
                    end()
                    return None
                end(error_message=NOTHING_TO_COMPACT)
                raise CompactionFailed(NOTHING_TO_COMPACT)
            # A summariser that fails is reported and skipped; its error, not a
            # cancellation, is what ends this compaction then.
            with ctx.collect_hook_errors("pi_session_before_compact") as failures, signal.scope():
                decision = await ctx.call_hook(
                    "pi_session_before_compact",
                    preparation=preparation,
                    branch_entries=branch,
                    custom_instructions=custom_instructions,
                    reason=reason,
                    will_retry=will_retry,
                    signal=signal,
                    ctx=ctx,
                )
            if signal.aborted or isinstance(decision, Cancel):
                end(aborted=True)
                return None
            if not isinstance(decision, CompactionResult):
                if decision is None and failures:
                    raise RuntimeError(_exception_text(failures[-1].message))
                end(aborted=True)
                return None
            entry = ctx.append_compaction_entry(decision)
            await ctx.call_hook(
                "pi_session_compact",
                compaction_entry=entry,
                from_extension=decision.from_hook,
                reason=reason,
                will_retry=will_retry,
                ctx=ctx,
            )
            end(result=compaction_json(decision), will_retry=will_retry)
            return decision
        except CompactionFailed:
            raise
        except Exception as exc:
            text = f"{_FAILED[reason]}{exc}"
            end(error_message=text)
            if reason == "manual":
                raise CompactionFailed(text) from exc
            return None
