"""What hook implementations return, and what the dispatcher hands back after combining them.

Every result is a frozen pydantic model: an implementation builds a new value instead of
mutating one that other plugins also see. Unknown field names are rejected (``extra="forbid"``)
so a misspelt field fails where it is written, not silently later.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from pi_host.messages import AgentMessage, CustomMessage, ImageContent, TextContent
from pi_host.providers import Model, ThinkingLevel

__all__ = [
    "BeforeAgentStartOutcome",
    "BeforeAgentStartResult",
    "BranchSummary",
    "Cancel",
    "CompactionResult",
    "ContinueRun",
    "DiscoveredResources",
    "HookResult",
    "InputHandled",
    "InputTransform",
    "NextTurnUpdate",
    "ProjectTrustDecision",
    "ResourcePaths",
    "SessionBeforeForkResult",
    "SourcedPath",
    "ToolCallBlock",
    "ToolCallRewrite",
    "ToolResultPatch",
    "TreeSummaryResult",
    "UserBashResult",
]


class HookResult(BaseModel):
    """Base of every hook result: frozen, strict about field names, snake_case."""

    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid")


# -- input and prompt ----------------------------------------------------------------------


class InputTransform(HookResult):
    """``pi_input``: replace the prompt text (and images) seen by later plugins and the agent.

    :ivar text: the new prompt text.
    :ivar images: the new images; ``None`` keeps the current ones.
    """

    text: str
    images: tuple[ImageContent, ...] | None = None


class InputHandled(HookResult):
    """``pi_input``: the plugin dealt with the input; later plugins and the agent do not see it."""


class BeforeAgentStartResult(HookResult):
    """``pi_before_agent_start``: inject a message and/or replace the system prompt for this run.

    :ivar message: a custom message placed after the user's prompt (the model reads it as
        user input; ``display=False`` hides it in user interfaces).
    :ivar system_prompt: the system prompt for this run; later plugins see it as their
        ``system_prompt`` argument, so replacements chain.
    """

    message: CustomMessage | None = None
    system_prompt: str | None = None


class BeforeAgentStartOutcome(HookResult):
    """What ``pi_before_agent_start`` amounts to once every plugin ran.

    :ivar messages: the injected messages, in call order.
    :ivar system_prompt: the chained system prompt, or ``None`` when no plugin replaced it
        (the runtime then uses its base prompt).
    """

    messages: tuple[CustomMessage, ...] = ()
    system_prompt: str | None = None


class ContinueRun(HookResult):
    """``pi_before_prompt`` / ``pi_after_agent_run``: the runtime must ``agent.continue()`` now.

    :ivar messages: replaces the agent's message list before continuing (e.g. without the
        failed reply about to be tried again, or a rebuilt context); ``None`` keeps it.
    """

    messages: tuple[AgentMessage, ...] | None = None


class NextTurnUpdate(HookResult):
    """``pi_prepare_next_turn``: change what the next turn of the current run uses.

    Unset fields keep their current value.

    :ivar messages: the context messages for the next provider call (a context rebuilt mid-run).
    :ivar model: switch models for the rest of the run.
    :ivar thinking_level: switch the reasoning level (``"off"`` disables reasoning).
    """

    messages: tuple[AgentMessage, ...] | None = None
    model: Model | None = None
    thinking_level: ThinkingLevel | None = None


class UserBashResult(HookResult):
    """``pi_user_bash``: the plugin ran the user's ``!command`` itself; this is its outcome.

    Fields follow pi's ``BashResult`` and become a ``bashExecution`` message.

    :ivar output: combined stdout and stderr (possibly truncated).
    :ivar exit_code: the exit status, ``None`` when killed or cancelled.
    :ivar cancelled: whether the user cancelled the command.
    :ivar truncated: whether ``output`` was truncated.
    :ivar full_output_path: a file holding the untruncated output, if any.
    """

    output: str
    exit_code: int | None = None
    cancelled: bool = False
    truncated: bool = False
    full_output_path: str | None = None


# -- tools ---------------------------------------------------------------------------------


class ToolCallBlock(HookResult):
    """``pi_tool_call``: do not run the tool; the model receives ``reason`` as an error result."""

    reason: str = "Tool execution was blocked"


class ToolCallRewrite(HookResult):
    """``pi_tool_call``: replace the tool's arguments.

    The new arguments are what later ``pi_tool_call`` implementations see and what the tool
    runs with; they are validated against the tool's parameters again before it runs.

    :ivar input: the complete replacement arguments.
    """

    input: dict[str, Any]


class ToolResultPatch(HookResult):
    """``pi_tool_result``: change parts of a tool's result. Only the fields you pass apply.

    ``ToolResultPatch(details=None)`` clears the details; ``ToolResultPatch(content=[...])``
    leaves details and the error flag as they were.

    :ivar content: replacement content blocks.
    :ivar details: replacement details (any JSON-serialisable value).
    :ivar is_error: mark the result as an error (or not).
    """

    content: tuple[TextContent | ImageContent, ...] | None = None
    details: Any = None
    is_error: bool | None = None


# -- sessions ------------------------------------------------------------------------------


class Cancel(HookResult):
    """``pi_session_before_*``: cancel the switch, fork, compaction or tree navigation.

    :ivar reason: why, for the user interface.
    """

    reason: str | None = None


class SessionBeforeForkResult(HookResult):
    """``pi_session_before_fork``: go ahead, with options (cancel with :class:`Cancel`).

    :ivar skip_conversation_restore: do not put the forked-from prompt back in the editor.
    """

    skip_conversation_restore: bool = False


class CompactionResult(HookResult):
    """``pi_session_before_compact``: the compaction to record instead of pi-host's own.

    :ivar summary: the text that stands in for the compacted history.
    :ivar first_kept_entry_id: the id of the first session entry kept verbatim.
    :ivar tokens_before: the context size before compaction.
    :ivar details: plugin data stored with the ``compaction`` entry (not sent to the model).
    :ivar from_hook: pi's ``fromHook`` of the entry: ``True`` (the default) for a summary a
        plugin supplied, ``False`` for pi's own default summary, whose ``details`` are pi's
        ``{readFiles, modifiedFiles}`` lists that the next compaction and branch summaries
        carry on. Only a compaction plugin's default summariser sets ``False``.
    """

    summary: str
    first_kept_entry_id: str
    tokens_before: int
    details: Any = None
    from_hook: bool = True


class BranchSummary(HookResult):
    """A summary of an abandoned branch (``pi_summarize_branch``, ``pi_session_before_tree``).

    :ivar summary: the summary text.
    :ivar details: plugin data stored with the ``branch_summary`` entry.
    """

    summary: str
    details: Any = None


class TreeSummaryResult(HookResult):
    """``pi_session_before_tree``: go ahead, supplying the summary or adjusting how it is made.

    :ivar summary: use this summary of the abandoned branch instead of generating one.
    :ivar custom_instructions: instructions for the generated summary.
    :ivar replace_instructions: the custom instructions replace the default prompt instead
        of being appended to it.
    :ivar label: a label for the branch summary entry.
    """

    summary: BranchSummary | None = None
    custom_instructions: str | None = None
    replace_instructions: bool | None = None
    label: str | None = None


# -- startup -------------------------------------------------------------------------------


class ProjectTrustDecision(HookResult):
    """``pi_project_trust``: whether the project's ``.pi`` resources and plugins may load.

    :ivar trusted: the decision.
    :ivar remember: record the decision for this project in the user's trust file.
    """

    trusted: bool
    remember: bool = False


class ResourcePaths(HookResult):
    """``pi_resources_discover``: extra resource locations this plugin provides.

    :ivar skill_paths: ``SKILL.md`` files or directories holding skills.
    :ivar prompt_paths: prompt template files or directories.
    :ivar theme_paths: theme files or directories.
    """

    skill_paths: tuple[str, ...] = ()
    prompt_paths: tuple[str, ...] = ()
    theme_paths: tuple[str, ...] = ()


class SourcedPath(HookResult):
    """A discovered resource path and the plugin that provided it."""

    path: str
    plugin: str


class DiscoveredResources(HookResult):
    """Every plugin's :class:`ResourcePaths`, aggregated in call order with their source."""

    skill_paths: tuple[SourcedPath, ...] = ()
    prompt_paths: tuple[SourcedPath, ...] = ()
    theme_paths: tuple[SourcedPath, ...] = ()
