"""What the interactive mode needs from a session: the :class:`InteractiveSession` protocol.

The terminal UI is written against this protocol rather than the runtime's concrete class, so it
can be driven by the real session runtime and, in tests, by a scripted fake. It follows pi's
``AgentSession`` (notes §3.3, §3.4) closely; every method is one the runtime already has for RPC
mode or pi's slash commands.

Events reach the UI through :meth:`InteractiveSession.subscribe`. The agent events are the
pydantic models of :mod:`pi_host.messages`; the session-level events (``queue_update``,
``compaction_start`` …) may be any object with a ``type`` attribute and pi's fields in snake case.
The frozen dataclasses below are one such set, used by the test fake and free for the runtime to
use.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Protocol

if TYPE_CHECKING:
    from pi_host.messages import AgentMessage
    from pi_host.providers import Model
    from pi_host.providers._oauth_login import LoginAttempt

    from ._settings_menu import PluginSetting
    from ._ui_bridge import UiBridge

__all__ = [
    "AutoRetryEndEvent",
    "AutoRetryStartEvent",
    "CompactionEndEvent",
    "CompactionStartEvent",
    "ContextUsage",
    "ForkPoint",
    "ImportResult",
    "InteractiveSession",
    "Listener",
    "LoginProvider",
    "LoginResult",
    "PluginCommand",
    "QueueUpdateEvent",
    "SessionInfoChangedEvent",
    "SessionListing",
    "StoredCredential",
    "StreamingBehavior",
    "SwitchResult",
    "ThinkingLevelChangedEvent",
    "TreeNode",
    "TrustState",
    "UserBashResult",
]

StreamingBehavior = Literal["steer", "followUp"]
Listener = Callable[[Any], "Awaitable[None] | None"]


# -- session-level events (pi's AgentSessionEvent additions, notes §3.4) ---------------------


@dataclass(frozen=True)
class QueueUpdateEvent:
    """The full steering and follow-up queues, after any change."""

    steering: tuple[str, ...] = ()
    follow_up: tuple[str, ...] = ()
    type: Literal["queue_update"] = "queue_update"


@dataclass(frozen=True)
class CompactionStartEvent:
    reason: Literal["manual", "threshold", "overflow"] = "manual"
    type: Literal["compaction_start"] = "compaction_start"


@dataclass(frozen=True)
class CompactionEndEvent:
    """``result`` carries ``summary`` and ``tokens_before`` when the compaction succeeded."""

    reason: Literal["manual", "threshold", "overflow"] = "manual"
    result: Any = None
    aborted: bool = False
    will_retry: bool = False
    error_message: str | None = None
    type: Literal["compaction_end"] = "compaction_end"


@dataclass(frozen=True)
class AutoRetryStartEvent:
    attempt: int
    max_attempts: int
    delay_ms: int
    error_message: str = ""
    type: Literal["auto_retry_start"] = "auto_retry_start"


@dataclass(frozen=True)
class AutoRetryEndEvent:
    success: bool
    attempt: int
    final_error: str | None = None
    type: Literal["auto_retry_end"] = "auto_retry_end"


@dataclass(frozen=True)
class SessionInfoChangedEvent:
    name: str | None
    type: Literal["session_info_changed"] = "session_info_changed"


@dataclass(frozen=True)
class ThinkingLevelChangedEvent:
    level: str
    type: Literal["thinking_level_changed"] = "thinking_level_changed"


# -- records returned by the session --------------------------------------------------------


class ContextUsage(NamedTuple):
    """Tokens in the context now (``None`` right after a compaction), the window, and the share."""

    tokens: int | None
    context_window: int
    percent: float | None


@dataclass(frozen=True)
class SwitchResult:
    """The outcome of replacing or moving within the session (pi's ``{cancelled}`` results).

    ``cancelled``: a plugin vetoed it. ``aborted``: the user stopped a branch summary.
    ``editor_text``: text to put back into the editor (the forked user message, say).
    """

    cancelled: bool = False
    aborted: bool = False
    editor_text: str | None = None


@dataclass(frozen=True)
class ImportResult:
    """The outcome of ``/import``.

    ``file``: the session file now in use (the copy in the session directory).
    ``recorded_cwd``: the directory the session was recorded in, when it is not the one the
    session goes on working in. ``warnings``: what was skipped while reading the file.
    """

    cancelled: bool = False
    file: str | None = None
    recorded_cwd: str | None = None
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class TrustState:
    """The project's trust, as ``/trust`` shows it.

    ``trusted``: whether the project's resources are loaded now. ``source``: why, in words
    (``"remembered in trust.json for /home/me/src"``, ``"--approve"`` …). ``options``: the
    answers that can change it (the start-up question's labels); empty when the command line
    decides (``--approve``/``--no-approve``) and nothing can be changed. ``needs_trust``: the
    project has resources that only load when trusted. ``issues``: problems with trust.json
    (a decision that could not be saved holds for this session only).
    """

    cwd: str
    trusted: bool
    source: str
    options: tuple[str, ...] = ()
    needs_trust: bool = True
    issues: tuple[str, ...] = ()


@dataclass(frozen=True)
class UserBashResult:
    """What a ``!cmd`` produced (pi's ``BashResult``)."""

    output: str = ""
    exit_code: int | None = None
    cancelled: bool = False
    truncated: bool = False
    full_output_path: str | None = None


@dataclass(frozen=True)
class ForkPoint:
    """A user message that ``/fork`` can start a new session from (RPC ``get_fork_messages``)."""

    entry_id: str
    text: str


@dataclass(frozen=True)
class PluginCommand:
    """A command a plugin registered (or a prompt template or skill), shown in completion."""

    name: str
    description: str | None = None


@dataclass(frozen=True)
class SessionListing:
    """One saved session, as ``/resume`` lists it."""

    path: str
    name: str | None = None
    first_message: str = ""
    modified_ms: int = 0
    message_count: int = 0


@dataclass
class TreeNode:
    """A session tree node (pi's ``SessionTreeNode``): ``entry`` is a session entry.

    ``entry`` is read by attribute or key: ``id``, ``type`` (``message``, ``compaction``,
    ``branch_summary``, ``custom_message`` …) and the fields of that type in pi's session format
    (``message``, ``summary``, ``tokens_before``/``tokensBefore`` …).
    """

    entry: Any
    children: list[TreeNode] = field(default_factory=list)
    label: str | None = None


@dataclass(frozen=True)
class LoginProvider:
    """A provider ``/login`` offers; ``logged_in`` when ``auth.json`` holds a credential for it."""

    id: str
    name: str
    logged_in: bool = False


@dataclass(frozen=True)
class StoredCredential:
    """A credential ``auth.json`` holds, as ``/logout`` lists it (``kind``: ``oauth``, ``api_key``)."""

    provider: str
    name: str
    kind: str


@dataclass(frozen=True)
class LoginResult:
    """What a completed login did.

    ``saved_to``: the ``auth.json`` written (``None``: kept in memory). ``model``: the model
    selected because none was. ``warning``: why no model could be selected when none was.
    """

    saved_to: str | None = None
    model: str | None = None
    warning: str | None = None


# -- the protocol ---------------------------------------------------------------------------


class InteractiveSession(Protocol):
    """The session the interactive mode drives (a subset of pi's ``AgentSession``).

    Methods that pi's slash commands need raise an exception whose message is shown to the user
    as ``Error: <message>`` when they fail.
    """

    # state ------------------------------------------------------------------------------

    @property
    def is_streaming(self) -> bool:
        """An agent run is in progress (prompts are queued as steer or follow-up)."""
        ...

    @property
    def shutdown_requested(self) -> bool:
        """A plugin asked for a graceful exit (``ctx.shutdown()``); the UI quits once idle."""
        ...

    @property
    def model(self) -> Model | None: ...

    @property
    def thinking_level(self) -> str: ...

    @property
    def messages(self) -> Sequence[AgentMessage]:
        """The messages of the current branch, in order (what ``/session`` counts)."""
        ...

    @property
    def cwd(self) -> str: ...

    @property
    def session_file(self) -> str | None: ...

    @property
    def session_id(self) -> str: ...

    @property
    def session_name(self) -> str | None: ...

    @property
    def leaf_id(self) -> str | None:
        """The id of the entry the session is at (marked in ``/tree``)."""
        ...

    @property
    def auto_compaction_enabled(self) -> bool: ...

    def context_usage(self) -> ContextUsage | None: ...

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` (awaiting it when it returns an awaitable) with every event."""
        ...

    def set_ui(self, ui: UiBridge | None) -> None:
        """Route plugin UI requests (``ctx.ui``) to ``ui``; ``None`` when the mode ends."""
        ...

    # running ----------------------------------------------------------------------------

    async def prompt(self, text: str, *, streaming_behavior: StreamingBehavior | None = None) -> None:
        """Run ``text`` through pi's prompt pipeline (commands, templates, skills).

        While idle this runs a whole agent run and returns when it ends; while streaming it
        queues ``text`` as ``streaming_behavior`` and returns at once.
        """
        ...

    async def abort(self) -> None:
        """Stop whatever runs: the agent run, a retry wait, a compaction, a branch summary or a
        user bash command; return when the session is idle."""
        ...

    def clear_queue(self) -> tuple[list[str], list[str]]:
        """Empty both queues and return their texts: ``(steering, follow_up)``."""
        ...

    async def run_user_bash(
        self,
        command: str,
        *,
        exclude_from_context: bool,
        on_output: Callable[[str], None] | None = None,
    ) -> UserBashResult:
        """Run ``!cmd`` (``!!cmd``: ``exclude_from_context``), streaming output to ``on_output``."""
        ...

    # slash-command targets ----------------------------------------------------------------

    async def compact(self, instructions: str | None = None) -> None: ...

    def available_models(self) -> Sequence[Model]: ...

    async def set_model(self, ref: str) -> None:
        """Switch to the model ``provider/id`` (or a unique id); raise naming the model if unknown."""
        ...

    def set_thinking_level(self, level: str) -> None: ...

    async def new_session(self) -> SwitchResult: ...

    def list_sessions(self) -> Sequence[SessionListing]: ...

    async def resume(self, path: str) -> SwitchResult: ...

    def fork_points(self) -> Sequence[ForkPoint]: ...

    async def fork(self, entry_id: str) -> SwitchResult: ...

    async def clone(self) -> SwitchResult: ...

    def tree(self) -> Sequence[TreeNode]:
        """The roots of the session tree."""
        ...

    async def navigate_tree(
        self, entry_id: str, *, summarize: bool, custom_instructions: str | None = None
    ) -> SwitchResult: ...

    def set_session_name(self, name: str) -> None: ...

    def export_html(self, path: str | None = None) -> str:
        """Write the session as HTML and return the file's path as given (``path`` is relative
        to the working directory, where the file goes by default)."""
        ...

    def export_jsonl(self, path: str) -> str:
        """Write the current branch as a session file of its own at ``path`` (relative to the
        working directory) and return its absolute path."""
        ...

    async def import_session(
        self, path: str, *, confirm_missing_cwd: Callable[[str, str], Awaitable[bool]]
    ) -> ImportResult:
        """Copy the session file ``path`` into the session directory and continue it.

        ``confirm_missing_cwd(recorded, current)`` is asked when the directory the session was
        recorded in is gone. Raises naming the file when it cannot be imported.
        """
        ...

    async def reload(self) -> None: ...

    def setting(self, key: str) -> Any:
        """The value in force for a settings.json key (pi's name, dotted for nested objects:
        ``"compaction.enabled"``), or ``None`` when no settings file sets it."""
        ...

    def save_setting(self, key: str, value: Any) -> None:
        """Apply a settings.json key to the running session and save it in the user's
        settings.json, keeping every other key of the file (``None`` removes the key).

        The change applies even when saving fails; the exception then names the file, why it
        was not written (it is never overwritten when it cannot be parsed) and what to do.
        """

    def plugin_settings(self) -> Sequence[PluginSetting]:
        """The values of the settings sections the loaded plugins declare, in order."""
        ...

    def trust_state(self) -> TrustState: ...

    async def set_trust(self, option: str) -> bool:
        """Apply one of :attr:`TrustState.options`; when that changes whether the project is
        trusted, reload settings, resources and plugins. Returns whether it changed."""
        ...

    def plugin_commands(self) -> Sequence[PluginCommand]: ...

    def login_providers(self) -> Sequence[LoginProvider]:
        """The providers ``/login`` can log in to, with ``auth.json`` read again.

        Raise when ``auth.json`` cannot be read: a login could not be saved.
        """
        ...

    async def login(self, attempt: LoginAttempt, pasted: str) -> LoginResult:
        """Redeem the code the user pasted for ``attempt`` and store the credential.

        Raise, naming the culprit and the remedy, when the code is missing, malformed or
        refused, the token endpoint fails, or ``auth.json`` cannot be written (it is then left
        as it was).
        """
        ...

    def stored_credentials(self) -> Sequence[StoredCredential]:
        """The credentials ``auth.json`` holds now; raise when it cannot be read."""
        ...

    async def logout(self, provider: str) -> None:
        """Remove ``provider``'s credential from ``auth.json``, keeping the others."""
        ...

    async def run_plugin_command(self, name: str, args: str) -> None: ...

    # Optional: what plugins add to the screen (``pi_register_shortcuts``,
    # ``pi_register_message_renderers``, ``pi_register_tool_renderers``). A session without
    # these methods has none.
    #
    #   def plugin_shortcuts(self) -> Sequence[Shortcut]
    #   async def run_plugin_shortcut(self, key: str) -> None
    #   def message_renderers(self) -> Mapping[str, MessageRenderer]
    #   def tool_renderers(self) -> Mapping[str, ToolRenderer]
