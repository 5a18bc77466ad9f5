"""The plugin context (``ctx``): what every lifecycle hook can see and do.

These are :class:`typing.Protocol` types: the session runtime implements them, plugins and
tests only depend on their shape (a test may pass any object with the attributes it uses).
Names follow pi's ``ExtensionContext`` and ``ExtensionAPI`` in snake_case.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, TypeVar

from pydantic import BaseModel, ConfigDict

from pi_host.messages import AgentMessage, AssistantMessage, CustomMessage, ImageContent, TextContent
from pi_host.providers import AbortSignal, Model, ThinkingLevel

from ._payloads import EntryView
from ._results import CompactionResult
from ._stash import Stash

if TYPE_CHECKING:
    from pi_host.agent import Tool
    from pi_host.resources import Settings
    from pi_host.runtime import AgentSession, SessionOptions

    from ._registration import Command, Flag

__all__ = [
    "CommandContext",
    "ContextUsage",
    "DeliverAs",
    "ExecResult",
    "HookImplementation",
    "HostConfig",
    "Mode",
    "NotifyLevel",
    "PluginContext",
    "PluginUI",
    "SessionView",
]

_M = TypeVar("_M", bound=BaseModel)

Mode: TypeAlias = Literal["tui", "rpc", "json", "print"]
"""How pi-host runs: the interactive terminal UI, RPC over stdio, JSON event stream, or print."""

NotifyLevel: TypeAlias = Literal["info", "warning", "error"]

DeliverAs: TypeAlias = Literal["steer", "followUp", "nextTurn"]
"""When a message sent during a run is delivered: between turns, after the run, or with the
next prompt."""


class ContextUsage(BaseModel):
    """How full the model's context window is (pi's ``ContextUsage``).

    :ivar tokens: estimated tokens in context, ``None`` when unknown (e.g. just after compaction).
    :ivar context_window: the model's context window.
    :ivar percent: ``tokens`` as a percentage of the window, ``None`` when unknown.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    tokens: int | None
    context_window: int
    percent: float | None


class ExecResult(BaseModel):
    """The outcome of :meth:`PluginContext.exec`.

    :ivar stdout: the command's standard output.
    :ivar stderr: the command's standard error.
    :ivar code: the exit status.
    :ivar killed: whether the command was killed (timeout or abort).
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    stdout: str
    stderr: str
    code: int
    killed: bool = False


class HookImplementation(BaseModel):
    """One implementation of a hook, as :meth:`PluginContext.hook_implementations` lists it.

    :ivar plugin: the name the plugin is registered under (``pi-host plugins list``).
    :ivar function: the implementing function's ``module.qualname``
        (``"pi_guard._plugin.pi_tool_call"``), so a plugin can find its own implementation.
    :ivar tryfirst: marked ``tryfirst``.
    :ivar trylast: marked ``trylast``.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    plugin: str
    function: str
    tryfirst: bool = False
    trylast: bool = False


class SessionView(Protocol):
    """A read-only view of the session store (pi's ``ReadonlySessionManager``)."""

    @property
    def session_id(self) -> str: ...

    @property
    def session_file(self) -> str | None:
        """The JSONL file, ``None`` for an in-memory session (``--no-session``)."""
        ...

    @property
    def session_dir(self) -> str | None: ...

    @property
    def session_name(self) -> str | None: ...

    @property
    def cwd(self) -> str: ...

    @property
    def leaf_id(self) -> str | None:
        """The entry new entries are appended after."""
        ...

    def get_entry(self, entry_id: str) -> EntryView | None: ...

    def get_entries(self) -> Sequence[EntryView]:
        """Every entry of the session, in file order."""
        ...

    def get_branch(self, from_id: str | None = None) -> Sequence[EntryView]:
        """The entries from the root to ``from_id`` (default: the leaf)."""
        ...

    def get_label(self, entry_id: str) -> str | None: ...


class PluginUI(Protocol):
    """User interaction (pi's ``ExtensionUIContext``).

    In print and JSON modes the methods do nothing and dialogs return their defaults
    (``None`` / ``False``); check :attr:`PluginContext.has_ui` first when it matters.
    """

    async def select(self, title: str, options: Sequence[str], *, timeout: float | None = None) -> str | None:
        """Let the user pick one option; ``None`` when dismissed or timed out."""
        ...

    async def confirm(self, title: str, message: str, *, timeout: float | None = None) -> bool:
        """Ask a yes/no question; ``False`` when dismissed or timed out."""
        ...

    async def input(
        self, title: str, placeholder: str | None = None, *, timeout: float | None = None
    ) -> str | None:
        """Ask for a line of text; ``None`` when dismissed or timed out."""
        ...

    async def editor(self, title: str, prefill: str | None = None) -> str | None:
        """Open a multi-line editor; ``None`` when dismissed."""
        ...

    def notify(self, message: str, level: NotifyLevel = "info") -> None: ...

    def set_status(self, key: str, text: str | None) -> None:
        """Show ``text`` in the footer under ``key``; ``None`` clears it."""
        ...

    def set_widget(
        self,
        key: str,
        lines: Sequence[str] | None,
        *,
        placement: Literal["aboveEditor", "belowEditor"] = "aboveEditor",
    ) -> None:
        """Show lines above or below the editor under ``key``; ``None`` removes them."""
        ...

    def set_working_message(self, message: str | None = None) -> None:
        """The text shown while the agent works; ``None`` restores the default."""
        ...

    def set_title(self, title: str) -> None: ...

    def set_editor_text(self, text: str) -> None: ...

    def get_editor_text(self) -> str: ...


class PluginContext(Protocol):
    """What a hook implementation receives as ``ctx``: the session it runs in, and what it may do.

    Read-only state is exposed as properties; actions that change the session are methods.
    Actions that start work (``send_user_message``, ``compact``) return at once; the runtime
    performs them after the current hook returns, so a hook never waits on its own effects.
    """

    # -- where and how pi-host runs --

    @property
    def cwd(self) -> str: ...

    @property
    def mode(self) -> Mode: ...

    @property
    def has_ui(self) -> bool:
        """Whether dialogs reach a user (true in ``tui`` and ``rpc`` modes)."""
        ...

    @property
    def ui(self) -> PluginUI: ...

    @property
    def stash(self) -> Stash:
        """Per-session plugin state (see :class:`Stash`)."""
        ...

    @property
    def parent_stash(self) -> Stash | None:
        """The stash of the session that made this one with :meth:`create_child_session`;
        ``None`` in a session that is no child.

        A child runs in its parent's process and event loop, so a plugin can hand its child
        sessions live state (a server connection, a cache) instead of building it again: it
        keeps the state under its own :class:`StashKey` in the parent's stash, and the same
        plugin in the child (loaded again on the child's host) reads it here, typically in
        ``pi_session_start``. Keys are the plugins' own objects, so a plugin finds only what it
        (or a plugin that exports its key) put there. The state stays the parent's: the
        parent's plugin ends it (in the parent's ``pi_session_shutdown``), never the child's,
        which should check that it is still usable before each use. pi-mcp shares its
        running servers with sub-agents this way.

        Example: a child uses its parent's connection, and closes only one it opened::

            CONNECTION = StashKey[Connection]()
            OWNED = StashKey[Connection]()

            @hookimpl
            async def pi_session_start(reason, previous_session_file, ctx):
                parent = ctx.parent_stash
                shared = parent.get(CONNECTION, None) if parent is not None else None
                if shared is None:
                    shared = ctx.stash[OWNED] = await Connection.open()
                ctx.stash[CONNECTION] = shared

            @hookimpl
            async def pi_session_shutdown(reason, target_session_file, ctx):
                owned = ctx.stash.get(OWNED, None)
                if owned is not None:
                    await owned.close()
        """
        ...

    @property
    def session_manager(self) -> SessionView: ...

    def is_project_trusted(self) -> bool: ...

    def hook_implementations(self, hook: str) -> list[HookImplementation]:
        """The implementations of ``hook`` in this session's plugins, in the order they are
        called (blocked and unregistered plugins left out).

        Each session has its own plugins (many may run in one process), so a plugin that
        checks where it runs among the others asks its own session rather than remembering a
        plugin manager. Example: a policy plugin warns when a ``pi_tool_call`` would run
        after its own::

            order = ctx.hook_implementations("pi_tool_call")
            mine = [i for i, impl in enumerate(order) if impl.function == "my_plugin.pi_tool_call"]
            later = [impl.plugin for impl in order[mine[0] + 1 :]] if mine else []

        :raises pi_host.HookError: no hookspec declares ``hook``.
        """
        ...

    # -- the agent's state --

    @property
    def model(self) -> Model | None: ...

    @property
    def thinking_level(self) -> ThinkingLevel: ...

    @property
    def system_prompt(self) -> str:
        """The effective system prompt (during ``pi_before_agent_start``: as chained so far)."""
        ...

    @property
    def signal(self) -> AbortSignal | None:
        """The current run's abort signal, ``None`` while idle."""
        ...

    def is_idle(self) -> bool: ...

    def has_pending_messages(self) -> bool:
        """Whether steering or follow-up messages are queued."""
        ...

    def context_usage(self) -> ContextUsage | None: ...

    @property
    def messages(self) -> list[AgentMessage]:
        """The agent's transcript as the next request will see it (a copy)."""
        ...

    @property
    def settings(self) -> Settings:
        """The merged settings in force, typed (:class:`pi_host.Settings`) and read-only all the
        way down (its lists and mappings refuse changes). A plugin's own section is read typed
        and validated with :meth:`plugin_settings`; other keys pi-host does not know are in
        ``settings.model_extra``."""
        ...

    # -- controlling the agent --

    def abort(self) -> None:
        """Abort the current run (no-op while idle)."""
        ...

    def compact(
        self,
        custom_instructions: str | None = None,
        *,
        on_complete: Callable[[CompactionResult], None] | None = None,
        on_error: Callable[[BaseException], None] | None = None,
    ) -> None:
        """Start a compaction without waiting for it (pi's ``ctx.compact()``): the ``compact``
        command a plugin registered runs, as for ``/compact``."""
        ...

    async def call_hook(self, hook: str, /, **kwargs: Any) -> Any:
        """Call a hook's implementations with its combination rule (see its spec) and return
        the combined result, as the session does for its own hooks.

        For plugins that run a stage other plugins take part in: a compaction plugin calls
        pi's ``pi_session_before_compact`` and ``pi_session_compact`` this way. Failing
        implementations are reported and skipped (see :meth:`collect_hook_errors`).
        """
        ...

    def collect_hook_errors(self, hook: str) -> AbstractContextManager[list[Any]]:
        """``with ctx.collect_hook_errors(name) as errors:`` — the failures of ``hook``'s
        implementations during the block (:class:`pi_host.ExtensionError`, already reported),
        for a plugin whose outcome depends on them (a summariser that failed)."""
        ...

    def hold_prompts(self) -> AbstractContextManager[None]:
        """``with ctx.hold_prompts():`` — a prompt the user sends while the agent is idle waits
        until the block ends (for a plugin rewriting the history)."""
        ...

    def append_compaction_entry(self, result: CompactionResult) -> EntryView:
        """Write pi's ``compaction`` entry for ``result`` (``fromHook`` from
        ``result.from_hook``) and rebuild the agent's messages from the session: the summary,
        then the entries from ``result.first_kept_entry_id`` on. Returns the new entry."""
        ...

    def abort_scope(self, name: str, *, fresh: bool = False) -> AbstractContextManager[AbortSignal]:
        """``with ctx.abort_scope(name) as signal:`` — an abort signal for the plugin's own
        wait or request, aborted by the session's abort (Escape, RPC ``abort``) and by RPC
        ``abort_<name>`` once ``name`` is declared (``pi_register_abort_scopes``).

        An abort that arrived earlier in the same run, before the scope opened, leaves the
        signal aborted from the start: check ``signal.aborted`` (or just wait on it, which
        returns at once). ``fresh=True`` ignores such an earlier abort, for work the user
        asked for after aborting (a ``/compact`` command aborts the run first).

        Example::

            with ctx.abort_scope("retry") as signal:
                with anyio.move_on_after(delay_s):
                    await signal.wait()
            if signal.aborted:
                ...  # the user or client cancelled the wait
        """
        ...

    def abort_named(self, name: str) -> bool:
        """Abort the open abort scopes named ``name``, as RPC ``abort_<name>`` does; returns
        whether one was open (during a run, one opened later in it starts aborted)."""
        ...

    def plugin_settings(self, model: type[_M]) -> _M:
        """The plugin's settings section declared with ``model`` (``pi_register_settings``),
        read from the merged settings files and validated; bad values are reported and
        replaced by the model's defaults.

        :raises LookupError: no loaded plugin declared a section with ``model``.
        """
        ...

    async def complete(
        self,
        system_prompt: str,
        messages: Sequence[AgentMessage],
        *,
        max_tokens: int | None = None,
        model: Model | None = None,
        reasoning: ThinkingLevel | None = None,
        signal: AbortSignal | None = None,
    ) -> AssistantMessage:
        """Send one request outside the conversation (a summary, a classification), no tools,
        on the session's model and credentials unless ``model`` is given. Provider failures
        come back as a reply with ``stop_reason`` ``error`` or ``aborted``."""
        ...

    def emit(self, event: BaseModel) -> None:
        """Send an event to the session's subscribers: the user interface and JSON/RPC clients,
        which receive it as one of pi's event lines (camelCase keys).

        ``event`` is one of pi's session events (``AutoRetryStartEvent``,
        ``CompactionEndEvent`` … from :mod:`pi_host`), a :class:`pi_host.PluginEvent` of the
        plugin's own, or any pydantic model with a ``type`` field; a model whose ``type`` is
        one of pi's events is validated as that event, so the terminal UI shows it as pi's.
        An event that cannot be written as JSON is not sent: it is reported as an
        ``extension_error`` and the mode goes on.

        Example::

            from pi_host import AutoRetryStartEvent

            ctx.emit(AutoRetryStartEvent(attempt=1, max_attempts=3, delay_ms=2000, error_message=text))
        """
        ...

    async def create_child_session(self, options: SessionOptions) -> AgentSession:
        """A new session in this process with this session's plugins, for work handed to a
        child agent with a context of its own (a sub-agent).

        The child is built by :func:`pi_host.create_session` from ``options`` on a fresh host
        that loads the same plugins this session's did; its stash, tools and transcript are its
        own (its plugins reach this session's stash as :attr:`parent_stash`). What ``options``
        leaves unset is inherited: the model and thinking level, the agent directory, where
        sessions are kept (beside this session's file; an unsaved session makes an unsaved
        child), the project's trust, the UI, the plugin flags; the child's session file names
        this one as its ``parentSession``. The child is not started: the caller runs
        ``start("startup")``, its prompts, and ``shutdown("quit")``.

        :raises pi_host.SessionError: the options name an unknown model, or the session cannot
            be created; a host assembled by hand has no recipe to load its plugins again.

        Example::

            child = await ctx.create_child_session(SessionOptions(cwd=ctx.cwd, mode=ctx.mode, tools=["read"]))
            await child.start("startup")
            try:
                await child.prompt("Summarise README.md")
            finally:
                await child.shutdown("quit")
        """
        ...

    def shutdown(self) -> None:
        """Ask pi-host to exit gracefully, as pi's ``ctx.shutdown()`` does.

        The interactive mode quits once the agent is idle (after the run in flight and the
        messages queued behind it); RPC mode ends after the current command's response; print
        and JSON modes end when their prompts are done anyway. ``pi_session_shutdown`` fires
        with reason ``quit`` either way.
        """
        ...

    async def set_model(self, model: Model) -> bool:
        """Switch models; ``False`` when no credentials are configured for it."""
        ...

    def set_thinking_level(self, level: ThinkingLevel) -> None:
        """Set the reasoning level, clamped to what the model supports."""
        ...

    def get_active_tools(self) -> list[str]: ...

    def get_all_tools(self) -> list[Tool[Any]]: ...

    def set_active_tools(self, names: Sequence[str]) -> None: ...

    # -- registering at runtime --

    def register_tool(self, tool: Tool[Any]) -> None:
        """Add a tool now; it is active from the next provider call."""
        ...

    def unregister_tool(self, name: str, *, reason: str | None = None) -> bool:
        """Remove a tool added with :meth:`register_tool`; it is gone from the next provider call.

        A tool from ``pi_register_tools`` is not removed (deactivate it with
        :meth:`set_active_tools`). A later call of the name, which the model may still try
        from its history, gets the error "Tool NAME not found: REASON". Register a new
        definition under the name to replace a tool (it is then active again).

        :returns: whether a tool was removed.
        """
        ...

    def register_command(self, command: Command) -> None: ...

    def register_flag(self, flag: Flag) -> None: ...

    def get_flag(self, name: str) -> bool | str | None:
        """The value of a plugin flag (``--name``), ``None`` when unknown."""
        ...

    # -- messages and the session --

    def send_message(
        self,
        message: CustomMessage,
        *,
        trigger_turn: bool = False,
        deliver_as: DeliverAs | None = None,
    ) -> None:
        """Add a custom message to the conversation.

        While a run is active it is queued (``deliver_as``, default ``"steer"``); while idle
        it is appended, and ``trigger_turn=True`` starts a run with it.
        """
        ...

    def send_user_message(
        self,
        content: str | Sequence[TextContent | ImageContent],
        *,
        deliver_as: Literal["steer", "followUp"] | None = None,
    ) -> None:
        """Prompt as if the user typed ``content`` (``pi_input`` fires with source ``"extension"``)."""
        ...

    def append_entry(self, custom_type: str, data: Any = None) -> None:
        """Store plugin data in the session file (a ``custom`` entry, never sent to the model)."""
        ...

    def set_session_name(self, name: str) -> None: ...

    def set_label(self, entry_id: str, label: str | None) -> None:
        """Label a session entry for tree navigation; ``None`` removes the label."""
        ...

    async def exec(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        cwd: str | None = None,
        timeout: float | None = None,
        signal: AbortSignal | None = None,
    ) -> ExecResult:
        """Run a program (not through a shell) and capture its output."""
        ...


class CommandContext(PluginContext, Protocol):
    """What a slash command's handler receives: the plugin context plus session control.

    Each session-control method returns whether the operation was cancelled (by a
    ``pi_session_before_*`` hook or the user).
    """

    async def wait_for_idle(self) -> None: ...

    async def new_session(self, *, parent_session: str | None = None) -> bool: ...

    async def fork(self, entry_id: str, *, position: Literal["before", "at"] = "before") -> bool: ...

    async def navigate_tree(
        self,
        target_id: str,
        *,
        summarize: bool = False,
        custom_instructions: str | None = None,
        replace_instructions: bool = False,
        label: str | None = None,
    ) -> bool: ...

    async def switch_session(self, path: str) -> bool: ...

    async def reload(self) -> None: ...


class HostConfig(Protocol):
    """What ``pi_configure`` receives: the host's configuration at startup."""

    @property
    def cwd(self) -> str: ...

    @property
    def mode(self) -> Mode: ...

    @property
    def settings(self) -> dict[str, Any]:
        """The merged ``settings.json`` (global, then project)."""
        ...

    @property
    def stash(self) -> Stash: ...

    def get_flag(self, name: str) -> bool | str | None: ...
