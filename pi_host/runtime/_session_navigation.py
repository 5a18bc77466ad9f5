"""Which session file the session is bound to: start, shutdown, /new, /resume, /import, /fork.

pi rebinds the plugins whenever the session file changes: ``pi_session_before_switch`` (or
``pi_session_before_fork``) may cancel, then ``pi_session_shutdown`` names the next file,
the agent's context, model and thinking level are restored from the new file, and
``pi_session_start`` and ``pi_resources_discover`` fire for it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast

from pi_host.hookspecs import Cancel
from pi_host.messages import UserMessage
from pi_host.providers import Model, ThinkingLevel

from ._session_model import clamp_thinking_level
from ._session_types import SessionError, SessionImport

if TYPE_CHECKING:
    from pathlib import Path

    from pi_host.agent import Agent
    from pi_host.resources import PromptTemplate, Skill
    from pi_host.session import SessionManager

    from ._context import SessionPluginContext
    from ._host import Host
    from ._session_agent_events import AgentEventRelay
    from ._session_queues import MessageQueues

__all__ = ["SessionNavigation"]


class _Session(Protocol):
    """What session navigation needs of its session."""

    host: Host
    agent: Agent
    session_manager: SessionManager
    ctx: SessionPluginContext
    cwd: str
    model_resolver: Any
    skills: list[Skill]
    prompt_templates: list[PromptTemplate]

    @property
    def model(self) -> Model | None: ...

    @property
    def thinking_level(self) -> ThinkingLevel: ...

    @property
    def active_tool_names(self) -> list[str]: ...

    def set_active_tools(self, names: Sequence[str]) -> None: ...


class SessionNavigation:
    """Binds one session to its session file, and to another when the user switches."""

    def __init__(
        self,
        session: _Session,
        queues: MessageQueues,
        agent_events: AgentEventRelay,
        emit: Callable[[Any], Awaitable[None]],
    ) -> None:
        self._session = session
        self._queues = queues
        self._agent_events = agent_events
        self._emit = emit

    async def start(
        self,
        reason: Literal["startup", "reload", "new", "resume", "fork"] = "startup",
        previous_session_file: str | None = None,
    ) -> None:
        """Fire ``pi_session_start``, then ``pi_resources_discover`` (pi does both whenever it
        binds plugins to a session: at startup, after ``/new``, ``/resume``, ``/fork``, ``/reload``)."""
        session = self._session
        await session.host.dispatcher.session_start(
            reason=reason, previous_session_file=previous_session_file, ctx=session.ctx
        )
        await self._discover_resources("reload" if reason == "reload" else "startup")

    async def _discover_resources(self, reason: Literal["startup", "reload"]) -> None:
        """Add the skills and prompt templates plugins point to, then rebuild the system prompt."""
        session = self._session
        dispatcher = session.host.dispatcher
        if not dispatcher.has_implementations("pi_resources_discover"):
            return
        found = await dispatcher.resources_discover(cwd=session.cwd, reason=reason, ctx=session.ctx)
        if not found.skill_paths and not found.prompt_paths:
            return
        from pi_host.resources import load_prompt_templates, load_skills

        from ._events import ExtensionErrorEvent

        skills = load_skills([entry.path for entry in found.skill_paths], cwd=session.cwd)
        templates = load_prompt_templates([entry.path for entry in found.prompt_paths], cwd=session.cwd)
        for diagnostic in (*skills.diagnostics, *templates.diagnostics):
            await self._emit(
                ExtensionErrorEvent(
                    extension_path=diagnostic.path or "resources",
                    event="resources_discover",
                    error=diagnostic.message,
                )
            )
        # Plugin resources come after the session's own; the first of a name wins (pi's merge).
        known_skills = {skill.name for skill in session.skills}
        session.skills.extend(skill for skill in skills.skills if skill.name not in known_skills)
        known_templates = {template.name for template in session.prompt_templates}
        session.prompt_templates.extend(t for t in templates.templates if t.name not in known_templates)
        session.set_active_tools(session.active_tool_names)

    async def shutdown(
        self,
        reason: Literal["quit", "reload", "new", "resume", "fork"] = "quit",
        target_session_file: str | None = None,
    ) -> None:
        """Fire ``pi_session_shutdown``, then wait (off the event loop) until the store
        writes asked for so far, the plugins' last entries included, were sent."""
        session = self._session
        await session.host.dispatcher.session_shutdown(
            reason=reason, target_session_file=target_session_file, ctx=session.ctx
        )
        manager = session.session_manager
        if not manager.wait_for_writes(timeout=0):
            import anyio

            await anyio.to_thread.run_sync(manager.wait_for_writes)

    def _restore(self) -> Model | None:
        """Load the (new) session file's context; returns the model it replaced, if any."""
        session = self._session
        context = session.session_manager.build_session_context()
        session.agent.state.messages = context.messages
        # pi rebuilds the runtime for the destination session: its model (when it still has
        # credentials; otherwise the current one stays) and its thinking level.
        replaced = None
        if context.model is not None and session.model_resolver is not None:
            restored = session.model_resolver.find(context.model.provider, context.model.model_id)
            if restored is not None and session.model_resolver.has_auth(restored):
                current = session.model
                if current is not None and current.ref != restored.ref:
                    replaced = current
                session.agent.state.model = restored
        if context.has_thinking_entry:
            level = cast(ThinkingLevel, context.thinking_level)
            session.agent.state.thinking_level = clamp_thinking_level(session.model, level)
        self._queues.forget()
        self._agent_events.forget_last_reply()
        return replaced

    async def _announce_restored_model(self, replaced: Model | None) -> None:
        session = self._session
        model = session.model
        if replaced is not None and model is not None:
            await session.host.dispatcher.model_select(
                model=model, previous_model=replaced, source="restore", ctx=session.ctx
            )

    async def new_session(self, *, parent_session: str | None = None) -> bool:
        """Start a fresh session file; returns ``True`` when a plugin cancelled."""
        session = self._session
        dispatcher = session.host.dispatcher
        if (
            await dispatcher.session_before_switch(reason="new", target_session_file=None, ctx=session.ctx)
        ) is not None:
            return True
        previous = self._session_file_text()
        # The next session is chosen first so that shutdown hooks can name its file, as pi's do.
        planned = session.session_manager.next_session()
        await self.shutdown("new", _file_text(planned.file))
        session.session_manager.new_session(parent_session=parent_session, planned=planned)
        self._restore()
        model = session.model
        if model is not None:
            session.session_manager.append_model_change(model.provider, model.id)
        session.session_manager.append_thinking_level_change(session.thinking_level)
        await self.start("new", previous)
        return False

    async def switch_session(self, path: str) -> bool:
        """Resume another session file; returns ``True`` when a plugin cancelled."""
        session = self._session
        dispatcher = session.host.dispatcher
        if (
            await dispatcher.session_before_switch(reason="resume", target_session_file=path, ctx=session.ctx)
        ) is not None:
            return True
        await self._enter_session(path)
        return False

    async def _enter_session(self, path: str) -> None:
        from pi_host.session import SessionFileError, check_session_file

        session = self._session
        try:
            check_session_file(path)  # refused before this session is shut down
        except SessionFileError as exc:
            raise SessionError(str(exc)) from exc
        previous = self._session_file_text()
        await self.shutdown("resume", path)
        session.session_manager.set_session_file(path)
        replaced = self._restore()
        await self.start("resume", previous)
        await self._announce_restored_model(replaced)

    async def import_session(
        self,
        path: str,
        *,
        confirm_missing_cwd: Callable[[str, str], Awaitable[bool]] | None = None,
    ) -> SessionImport:
        """Copy a session file into this session's directory and continue it (``/import``).

        The rules are documented once, on :meth:`AgentSession.import_session`.
        """
        from ._import import check_session_file, copy_into_session_dir, import_destination, same_directory

        session = self._session
        checked = check_session_file(path)
        directory = session.session_manager.session_dir
        if directory is None or not session.session_manager.is_persisted:
            raise SessionError(
                "This session is not saved (--no-session), so there is no session directory to "
                "import into; start pi-host without --no-session"
            )
        if checked.cwd_missing:
            if confirm_missing_cwd is None:
                # pi's refusal, as at start-up with --session.
                raise SessionError(
                    "Stored session working directory does not exist: "
                    f"{checked.cwd}\nSession file: {checked.source}\nCurrent working directory: {session.cwd}"
                )
            if not await confirm_missing_cwd(checked.cwd, session.cwd):
                return SessionImport(cancelled=True)
        try:
            copy = import_destination(checked.source, directory)
        except OSError as exc:
            raise SessionError(f"Cannot look into the session directory {directory}: {exc}") from exc
        if (
            await session.host.dispatcher.session_before_switch(
                reason="resume", target_session_file=str(copy), ctx=session.ctx
            )
        ) is not None:
            return SessionImport(cancelled=True)
        try:
            copy_into_session_dir(checked.source, copy)
        except OSError as exc:
            raise SessionError(f"Cannot copy {checked.source} into {directory}: {exc}") from exc
        await self._enter_session(str(copy))
        recorded = checked.cwd if checked.cwd and not same_directory(checked.cwd, session.cwd) else None
        warnings = tuple(str(warning) for warning in session.session_manager.warnings)
        return SessionImport(cancelled=False, file=str(copy), recorded_cwd=recorded, warnings=warnings)

    async def fork(self, entry_id: str, *, position: Literal["before", "at"] = "before") -> bool:
        """Fork the conversation into a new session file (``/fork``: before a user message;
        ``/clone``: at the entry). Returns ``True`` when a plugin cancelled."""
        session = self._session
        manager = session.session_manager
        entry = manager.get_entry(entry_id)
        if entry is None:
            raise SessionError(f"Entry {entry_id} not found")
        message = getattr(entry, "message", None)
        if position == "before" and not isinstance(message, UserMessage):
            raise SessionError("Can only fork from a user message")
        decision = await session.host.dispatcher.session_before_fork(
            entry_id=entry_id, position=position, ctx=session.ctx
        )
        if isinstance(decision, Cancel):
            return True
        previous = self._session_file_text()
        planned = manager.next_session()
        await self.shutdown("fork", _file_text(planned.file))
        leaf = entry.parent_id if position == "before" else entry.id
        if leaf is None:
            manager.new_session(parent_session=manager.session_reference, planned=planned)
        else:
            manager.create_branched_session(leaf, planned=planned)
        replaced = self._restore()
        await self.start("fork", previous)
        await self._announce_restored_model(replaced)
        return False

    def _session_file_text(self) -> str | None:
        return _file_text(self._session.session_manager.session_file)


def _file_text(file: Path | None) -> str | None:
    return None if file is None else str(file)
