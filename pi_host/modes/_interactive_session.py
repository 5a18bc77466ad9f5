"""The bridge from :class:`~pi_host.runtime.AgentSession` to the terminal UI's session protocol."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from pi_host.hookspecs import MessageRenderer, Shortcut, ToolRenderer
from pi_host.messages import AgentMessage, TextContent, UserMessage
from pi_host.providers import Model, ThinkingLevel
from pi_host.runtime import AgentSession, SessionError

from ._interactive import UiBridge
from ._interactive._driver import (
    ContextUsage,
    ForkPoint,
    ImportResult,
    Listener,
    LoginProvider,
    LoginResult,
    PluginCommand,
    SessionListing,
    StoredCredential,
    StreamingBehavior,
    SwitchResult,
    TreeNode,
    TrustState,
    UserBashResult,
)

if TYPE_CHECKING:
    from pi_host.providers import ModelRegistry
    from pi_host.providers._oauth_login import LoginAttempt

    from ._interactive._settings_menu import PluginSetting

__all__ = ["InteractiveSessionAdapter"]


class DeferredUI:
    """Stands in for the terminal UI until it is on screen.

    ``pi_session_start`` fires while the UI is still starting: notices, statuses and widgets
    set then are replayed once it attaches, and dialogs wait for it instead of being lost.
    """

    def __init__(self) -> None:
        self._ui: UiBridge | None = None
        self._attached = anyio.Event()
        self._pending: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def attach(self, ui: UiBridge) -> None:
        self._ui = ui
        for name, args, kwargs in self._pending:
            getattr(ui, name)(*args, **kwargs)
        self._pending.clear()
        self._attached.set()

    async def _ready(self) -> UiBridge:
        await self._attached.wait()
        assert self._ui is not None
        return self._ui

    async def select(self, title: str, options: Sequence[str], **kwargs: Any) -> str | None:
        return await (await self._ready()).select(title, options, **kwargs)

    async def confirm(self, title: str, message: str, **kwargs: Any) -> bool:
        return await (await self._ready()).confirm(title, message, **kwargs)

    async def input(self, title: str, placeholder: str | None = None, **kwargs: Any) -> str | None:
        return await (await self._ready()).input(title, placeholder, **kwargs)

    async def editor(self, title: str, prefill: str | None = None) -> str | None:
        return await (await self._ready()).editor(title, prefill)

    def get_editor_text(self) -> str:
        return self._ui.get_editor_text() if self._ui is not None else ""

    def __getattr__(self, name: str) -> Any:
        # notify, set_status, set_widget, set_title, set_editor_text, set_working_message …
        def call(*args: Any, **kwargs: Any) -> None:
            if self._ui is not None:
                getattr(self._ui, name)(*args, **kwargs)
            else:
                self._pending.append((name, args, kwargs))

        return call


class InteractiveSessionAdapter:
    """Presents an AgentSession as the interactive mode's ``InteractiveSession``.

    :meth:`start` fires ``pi_session_start`` while the terminal UI comes up; prompts wait for it.
    """

    def __init__(self, session: AgentSession) -> None:
        self._session = session
        self._deferred_ui = DeferredUI()
        self._started = anyio.Event()
        session.ui = self._deferred_ui

    async def start(self) -> None:
        """Fire the session's start hooks (plugins' UI calls reach the screen once it is up)."""
        try:
            await self._session.start("startup")
        finally:
            self._started.set()
        # What the other modes print before the run (models.json, settings.json problems).
        resolver = self._session.model_resolver
        if resolver is not None and resolver.registry.error_line:
            self._deferred_ui.notify(resolver.registry.error_line, "warning")
        if self._session.settings_manager is not None:
            for issue in self._session.settings_manager.drain_issues():
                if issue.message:
                    self._deferred_ui.notify(str(issue), "warning")

    # -- state --------------------------------------------------------------------------------

    @property
    def is_streaming(self) -> bool:
        return self._session.is_streaming

    @property
    def shutdown_requested(self) -> bool:
        return self._session.shutdown_requested

    @property
    def model(self) -> Model | None:
        return self._session.model

    @property
    def thinking_level(self) -> str:
        return self._session.thinking_level

    @property
    def messages(self) -> Sequence[AgentMessage]:
        return self._session.messages

    @property
    def cwd(self) -> str:
        return self._session.cwd

    @property
    def session_file(self) -> str | None:
        file = self._session.session_manager.session_file
        return None if file is None else str(file)

    @property
    def session_id(self) -> str:
        return self._session.session_manager.session_id

    @property
    def session_name(self) -> str | None:
        return self._session.session_manager.session_name

    @property
    def leaf_id(self) -> str | None:
        return self._session.session_manager.leaf_id

    @property
    def auto_compaction_enabled(self) -> bool:
        return self._session.setting_value("compaction.enabled", True) is not False

    def context_usage(self) -> ContextUsage | None:
        usage = self._session.context_usage()
        if usage is None:
            return None
        return ContextUsage(usage.tokens, usage.context_window, usage.percent)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        return self._session.subscribe(listener)

    def set_ui(self, ui: UiBridge | None) -> None:
        from pi_host.runtime import NullUI

        if ui is not None and self._session.ui is self._deferred_ui:
            self._deferred_ui.attach(ui)
        self._session.ui = ui if ui is not None else NullUI()

    # -- prompting ----------------------------------------------------------------------------

    async def prompt(self, text: str, *, streaming_behavior: StreamingBehavior | None = None) -> None:
        await self._started.wait()
        await self._session.prompt(text, streaming_behavior=streaming_behavior)

    async def abort(self) -> None:
        await self._session.abort()

    def clear_queue(self) -> tuple[list[str], list[str]]:
        return self._session.clear_queue()

    async def run_user_bash(
        self, command: str, *, exclude_from_context: bool, on_output: Callable[[str], None] | None = None
    ) -> UserBashResult:
        message = await self._session.run_user_bash(
            command, exclude_from_context=exclude_from_context, on_output=on_output
        )
        return UserBashResult(
            output=message.output,
            exit_code=message.exit_code,
            cancelled=message.cancelled,
            truncated=message.truncated,
            full_output_path=message.full_output_path,
        )

    # -- slash-command targets ----------------------------------------------------------------

    async def compact(self, instructions: str | None = None) -> None:
        await self._session.compact(instructions)

    def available_models(self) -> Sequence[Model]:
        resolver = self._session.model_resolver
        return list(resolver.available_models()) if resolver is not None else []

    async def set_model(self, ref: str) -> None:
        resolver = self._session.model_resolver
        if resolver is None:
            raise SessionError("No model registry is configured")
        resolution = resolver.resolve(ref)
        if resolution.error or resolution.model is None:
            raise SessionError(resolution.error or f'Unknown model "{ref}"')
        if not await self._session.set_model(resolution.model):
            raise SessionError(resolver.missing_auth_message(resolution.model))
        if resolution.thinking_level is not None:
            self._session.set_thinking_level(resolution.thinking_level)

    def set_thinking_level(self, level: str) -> None:
        self._session.set_thinking_level(_as_level(level))

    async def new_session(self) -> SwitchResult:
        return SwitchResult(cancelled=await self._session.new_session())

    def list_sessions(self) -> Sequence[SessionListing]:
        from pi_host.session import list_sessions

        directory = self._session.session_manager.session_dir
        if directory is None:
            return []
        return [
            SessionListing(
                path=str(info.path),
                name=info.name,
                first_message=info.first_message,
                modified_ms=int(info.modified.timestamp() * 1000)
                if hasattr(info.modified, "timestamp")
                else 0,
                message_count=info.message_count,
            )
            for info in list_sessions(directory)
        ]

    async def resume(self, path: str) -> SwitchResult:
        return SwitchResult(cancelled=await self._session.switch_session(path))

    def fork_points(self) -> Sequence[ForkPoint]:
        points = []
        # pi offers every user message of the session, on whichever branch it was sent.
        for entry in self._session.session_manager.get_entries():
            message = getattr(entry, "message", None)
            if isinstance(message, UserMessage):
                text = (
                    message.content
                    if isinstance(message.content, str)
                    else "".join(block.text for block in message.content if isinstance(block, TextContent))
                )
                points.append(ForkPoint(entry_id=entry.id, text=text))
        return points

    async def fork(self, entry_id: str) -> SwitchResult:
        entry = self._session.session_manager.get_entry(entry_id)
        message = getattr(entry, "message", None)
        cancelled = await self._session.fork(entry_id, position="before")
        text = None
        if isinstance(message, UserMessage) and not cancelled:
            text = (
                message.content
                if isinstance(message.content, str)
                else "".join(block.text for block in message.content if isinstance(block, TextContent))
            )
        return SwitchResult(cancelled=cancelled, editor_text=text)

    async def clone(self) -> SwitchResult:
        leaf = self._session.session_manager.leaf_id
        if leaf is None:
            return SwitchResult(cancelled=await self._session.new_session())
        return SwitchResult(cancelled=await self._session.fork(leaf, position="at"))

    def tree(self) -> Sequence[TreeNode]:
        def convert(node: Any) -> TreeNode:
            return TreeNode(entry=node.entry, children=[convert(c) for c in node.children], label=node.label)

        return [convert(node) for node in self._session.session_manager.get_tree()]

    async def navigate_tree(
        self, entry_id: str, *, summarize: bool, custom_instructions: str | None = None
    ) -> SwitchResult:
        outcome = await self._session.navigate_tree(
            entry_id, summarize=summarize, custom_instructions=custom_instructions
        )
        return SwitchResult(
            cancelled=outcome.cancelled, aborted=outcome.aborted, editor_text=outcome.editor_text
        )

    def set_session_name(self, name: str) -> None:
        self._session.set_session_name(name)

    def export_html(self, path: str | None = None) -> str:
        from ._export import default_export_name, export_html

        file = self._session.session_manager.session_file
        if file is None:
            raise SessionError("This session is not saved (--no-session); there is nothing to export.")
        # As pi's /export: into the working directory, named after the session file; the path
        # is reported as given.
        name = path or default_export_name(file)
        export_html(file, Path(self.cwd, name))
        return name

    def export_jsonl(self, path: str) -> str:
        from ._export import export_jsonl

        return str(export_jsonl(self._session.session_manager, Path(self.cwd, path)))

    async def import_session(
        self, path: str, *, confirm_missing_cwd: Callable[[str, str], Awaitable[bool]]
    ) -> ImportResult:
        outcome = await self._session.import_session(path, confirm_missing_cwd=confirm_missing_cwd)
        return ImportResult(
            cancelled=outcome.cancelled,
            file=outcome.file,
            recorded_cwd=outcome.recorded_cwd,
            warnings=outcome.warnings,
        )

    async def reload(self) -> None:
        await self._session.reload()

    def setting(self, key: str) -> Any:
        settings = self._session.settings
        if settings is None:
            return None
        node: Any = settings.model_dump(mode="json", by_alias=True)
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    def save_setting(self, key: str, value: Any) -> None:
        from ._settings_change import change_setting

        change_setting(self._session, key, value)

    def plugin_settings(self) -> list[PluginSetting]:
        from pi_host.runtime._plugin_settings import section_fields

        from ._interactive._settings_menu import PluginSetting

        host = self._session.host
        rows = []
        for key, section in host.settings_sections.items():
            plugin = host.settings_section_sources.get(key, "")
            for value in section_fields(section):
                rows.append(
                    PluginSetting(
                        value.key,
                        plugin,
                        value.description or section.description,
                        value.type,
                        _json_shown(value.default),
                        value.choices,
                    )
                )
        return rows

    def trust_state(self) -> TrustState:
        session = self._session
        project = session.project
        if project is None:
            return TrustState(session.cwd, session.project_trusted, "fixed when this session was built")
        description = project.describe(session.project_trusted)
        options = (
            tuple(option.label for option in project.trust.options(session.cwd))
            if description.changeable
            else ()
        )
        return TrustState(
            cwd=session.cwd,
            trusted=session.project_trusted,
            source=description.reason,
            options=options,
            needs_trust=description.needs_trust,
            issues=project.trust.issues,
        )

    async def set_trust(self, option: str) -> bool:
        session = self._session
        project = session.project
        if project is None:
            raise SessionError("This session was built without project resources; trust cannot change")
        choices = {choice.label: choice for choice in project.trust.options(session.cwd)}
        if option not in choices:
            raise SessionError(f"Unknown trust answer {option!r}; choose one of: {', '.join(choices)}")
        trusted = project.trust.choose(session.cwd, choices[option])
        if trusted == session.project_trusted:
            return False
        await session.set_project_trusted(trusted)
        return True

    def plugin_commands(self) -> Sequence[PluginCommand]:
        return [
            PluginCommand(name, command.description) for name, command in self._session.host.commands.items()
        ]

    async def run_plugin_command(self, name: str, args: str) -> None:
        await self._session.prompt(f"/{name} {args}".rstrip())

    def plugin_shortcuts(self) -> Sequence[Shortcut]:
        return list(self._session.host.shortcuts.values())

    async def run_plugin_shortcut(self, key: str) -> None:
        shortcut = self._session.host.shortcuts[key]
        await shortcut.handler(self._session.ctx)

    def message_renderers(self) -> Mapping[str, MessageRenderer]:
        return self._session.host.message_renderers

    def tool_renderers(self) -> Mapping[str, ToolRenderer]:
        return self._session.host.tool_renderers

    # -- credentials (/login, /logout) --------------------------------------------------------

    def _registry(self) -> ModelRegistry:
        resolver = self._session.model_resolver
        if resolver is None:
            raise SessionError("No model registry is configured; there are no credentials to manage")
        registry: ModelRegistry = resolver.registry
        return registry

    def _read_auth(self) -> ModelRegistry:
        """The registry, its ``auth.json`` read again (a pi elsewhere may have logged in or out)."""
        registry = self._registry()
        registry.auth.reload()
        if registry.auth.load_error is not None:
            raise SessionError(registry.auth.load_error)
        return registry

    def login_providers(self) -> Sequence[LoginProvider]:
        from pi_host.providers._oauth_login import LOGIN_PROVIDERS

        auth = self._read_auth().auth
        return [
            LoginProvider(id=provider, name=name, logged_in=(auth.get(provider) or {}).get("type") == "oauth")
            for provider, name in LOGIN_PROVIDERS.items()
        ]

    async def login(self, attempt: LoginAttempt, pasted: str) -> LoginResult:
        from pi_host.providers._auth import AuthFileError
        from pi_host.providers._oauth_login import exchange_code
        from pi_host.providers._resolve import pick_default_model

        registry = self._read_auth()  # a file we could not save to: say so before spending the code
        auth = registry.auth
        credential = await anyio.to_thread.run_sync(partial(exchange_code, attempt, pasted, env=auth.env))
        try:
            auth.set(attempt.provider, credential, strict=True)
        except AuthFileError as exc:
            raise SessionError(f"Logged in, but the credential could not be saved: {exc}") from None
        registry.refresh()
        saved_to = None if auth.path is None else str(auth.path)
        if self._session.model is not None:
            return LoginResult(saved_to=saved_to)
        # pi selects the provider's default model when the session had none.
        resolver = self._session.model_resolver
        assert resolver is not None
        candidates = [m for m in resolver.available_models() if m.provider == attempt.provider]
        model = pick_default_model(candidates)
        if model is None:
            return LoginResult(
                saved_to=saved_to,
                warning=f'No models of "{attempt.provider}" are available; use /model to select one',
            )
        if not await self._session.set_model(model):
            return LoginResult(
                saved_to=saved_to, warning=f"Could not select {model.ref}; use /model to select a model"
            )
        return LoginResult(saved_to=saved_to, model=model.ref)

    def stored_credentials(self) -> Sequence[StoredCredential]:
        from pi_host.providers._oauth_login import LOGIN_PROVIDERS

        auth = self._read_auth().auth
        credentials = []
        for provider in auth.providers():
            kind = str((auth.get(provider) or {}).get("type") or "unknown")
            name = LOGIN_PROVIDERS.get(provider, provider) if kind == "oauth" else provider
            credentials.append(StoredCredential(provider=provider, name=name, kind=kind))
        return sorted(credentials, key=lambda credential: credential.name.lower())

    async def logout(self, provider: str) -> None:
        from pi_host.providers._auth import AuthFileError

        registry = self._read_auth()
        try:
            registry.auth.remove(provider, strict=True)
        except AuthFileError as exc:
            raise SessionError(str(exc)) from None
        registry.refresh()


def _as_level(level: str) -> ThinkingLevel:
    from pi_host.providers import THINKING_LEVELS

    if level not in THINKING_LEVELS:
        raise SessionError(f'Invalid thinking level "{level}". Valid values: {", ".join(THINKING_LEVELS)}')
    return level


def _json_shown(value: Any) -> str:
    """A JSON value as a settings row shows it: ``true``, ``3``, ``null``, ``"text"`` bare."""
    if isinstance(value, str):
        return value
    import json

    return json.dumps(value)
