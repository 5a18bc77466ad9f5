"""The built-in slash commands and the keyboard shortcuts that act on the session.

Built-ins are handled here; a ``/name`` that a plugin registered goes to
``run_plugin_command``; anything else starting with ``/`` goes to ``prompt`` so the session can
expand prompt templates and skills.
"""

from __future__ import annotations

import datetime as _dt
import shlex
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from pi_host.messages import AssistantMessage, TextContent, ToolCall, message_usage

from ._hotkeys import hotkeys_markdown
from ._render import field_of, render_markdown, shorten_path

if TYPE_CHECKING:
    from pi_host.providers import Model, ScopedModel

    from ._app import InteractiveApp
    from ._driver import InteractiveSession, TreeNode

__all__ = ["BUILTIN_COMMANDS", "THINKING_LEVELS", "CommandRunner", "flatten_tree"]

THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh")

BUILTIN_COMMANDS: tuple[tuple[str, str], ...] = (
    ("model", "Switch the model (picker, or /model provider/id)"),
    ("thinking", "Set the thinking level (picker, or /thinking high)"),
    ("compact", "Summarize older messages to free context; optional focus instructions"),
    ("new", "Start a new session"),
    ("resume", "Pick a previous session to continue"),
    ("fork", "Start a new session from an earlier user message"),
    ("clone", "Copy the current branch into a new session"),
    ("tree", "Jump to any point of the session tree"),
    ("name", "Set the session's display name"),
    ("session", "Show the session file, id, message counts, tokens and cost"),
    ("export", "Write the session as HTML, or the branch as .jsonl (optional output path)"),
    ("import", "Import a session file (.jsonl) and continue it"),
    ("copy", "Copy the last reply to the clipboard"),
    ("reload", "Reload plugins, skills, prompt templates and context files"),
    ("trust", "Show or change whether this project's .pi resources are trusted"),
    ("hotkeys", "Show the keyboard shortcuts"),
    ("changelog", "Show pi-host's changelog"),
    ("quit", "Quit"),
    ("login", "Log in to a provider (Anthropic Claude Pro/Max)"),
    ("logout", "Remove a credential stored in auth.json"),
    ("settings", "Change settings (saved to settings.json)"),
    ("scoped-models", "Choose and order the models Ctrl+P cycles through"),
)
_BUILTIN_NAMES = frozenset(name for name, _ in BUILTIN_COMMANDS)


def _split_command(text: str) -> tuple[str, str]:
    name, _, args = text[1:].partition(" ")
    return name, args.strip()


def _first_argument(args: str) -> str | None:
    """The first shell-style word of ``args`` (quotes allowed), as ``/export "a b.html"`` needs."""
    if not args:
        return None
    try:
        words = shlex.split(args)
    except ValueError:
        return None
    return words[0] if words else None


def _age(ms: int) -> str:
    if not ms:
        return ""
    seconds = max(0, int(_dt.datetime.now().timestamp() - ms / 1000))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return "just now"


def _one_line(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class CommandRunner:
    """Runs slash commands against the app's session."""

    def __init__(self, app: InteractiveApp) -> None:
        self.app = app
        self._scope: list[ScopedModel] | None = None
        self._scope_loaded = False
        self._handlers: dict[str, Callable[[str], Awaitable[None]]] = {
            "model": self.model,
            "thinking": self.thinking,
            "compact": self.compact,
            "new": self.new,
            "resume": self.resume,
            "fork": self.fork,
            "clone": self.clone,
            "tree": self.tree,
            "name": self.name,
            "session": self.session_info,
            "export": self.export,
            "import": self.import_session,
            "copy": self.copy,
            "reload": self.reload,
            "trust": self.trust,
            "hotkeys": self.hotkeys,
            "changelog": self.changelog,
            "quit": self.quit,
            "login": self.login,
            "logout": self.logout,
            "settings": self.settings,
            "scoped-models": self.scoped_models,
        }

    @property
    def session(self) -> InteractiveSession:
        return self.app.session

    # -- lookup ---------------------------------------------------------------------------------

    def is_builtin(self, text: str) -> bool:
        if not text.startswith("/"):
            return False
        return _split_command(text)[0] in _BUILTIN_NAMES

    def plugin_command(self, text: str) -> tuple[str, str] | None:
        """``(name, args)`` when ``text`` invokes a plugin command."""
        if not text.startswith("/"):
            return None
        name, args = _split_command(text)
        names = {command.name for command in self.app._safe(self.session.plugin_commands, ())}
        return (name, args) if name in names else None

    def completion_entries(self) -> list[tuple[str, str | None]]:
        entries: list[tuple[str, str | None]] = list(BUILTIN_COMMANDS)
        for command in self.app._safe(self.session.plugin_commands, ()):
            entries.append((command.name, command.description))
        return entries

    def thinking_levels(self) -> Sequence[str]:
        model = self.app._safe(lambda: self.session.model, None)
        if model is None or not model.reasoning:
            return ("off",)
        return THINKING_LEVELS

    async def run(self, text: str) -> None:
        name, args = _split_command(text)
        await self._handlers[name](args)

    # -- models and thinking --------------------------------------------------------------------

    async def model(self, args: str) -> None:
        models = list(self.app._safe(self.session.available_models, ()))
        if args:
            exact = [m for m in models if args in (m.ref, m.id)]
            if len(exact) == 1 or not models:
                await self._set_model(exact[0].ref if exact else args)
                return
        if not models:
            self.app.warning("No models available. Configure an API key or models.json first.")
            return
        current = self.app._safe(lambda: self.session.model, None)
        labels = [
            f"{m.id}  [{m.provider}]" + ("  ✓" if current and m.ref == current.ref else "") for m in models
        ]
        initial = next((i for i, m in enumerate(models) if current and m.ref == current.ref), 0)
        # No exact match: the picker opens with what was typed as its search.
        index = await self.app.select(
            "Select model", labels, initial=initial, query=args or None, filterable=True
        )
        if index is not None:
            await self._set_model(models[index].ref)

    async def _set_model(self, ref: str) -> None:
        try:
            await self.session.set_model(ref)
        except Exception as exc:
            self.app.error(str(exc))
            return
        model = self.session.model
        self.app.notice(f"Model: {model.id if model else ref}")

    async def cycle_model(self, step: int = 1) -> None:
        """Switch to the next model (``step=-1``: the previous one), within the model scope
        (``enabledModels``, ``/scoped-models``) when there is one."""
        models = list(self.app._safe(self.session.available_models, ()))
        scope = self.model_scope(models)
        if scope is not None:
            usable = {m.ref for m in models}
            scoped = [entry for entry in scope if entry.model.ref in usable]
            if len(scoped) < 2:
                self.app.notice("Only one model in scope")
                return
            current_ref = getattr(self.session.model, "ref", None)
            refs = [entry.model.ref for entry in scoped]
            position = refs.index(current_ref) if current_ref in refs else 0
            following = scoped[(position + step) % len(scoped)]
            await self._set_model(following.model.ref)
            if following.thinking_level is not None and self.session.model == following.model:
                # A level written in the pattern (``provider/id:high``) comes with the model.
                self.session.set_thinking_level(following.thinking_level)
            return
        if len(models) < 2:
            self.app.notice("Only one model available" if models else "No models available")
            return
        current = self.session.model
        refs = [m.ref for m in models]
        position = refs.index(current.ref) if current is not None and current.ref in refs else -1
        await self._set_model(refs[(position + step) % len(refs)])

    def model_scope(self, models: Sequence[Model] | None = None) -> list[ScopedModel] | None:
        """The models Ctrl+P cycles through, or ``None`` for all available models.

        Read from ``enabledModels`` the first time (patterns, globs and ``:level`` suffixes as
        pi takes them; patterns that match nothing are reported once), then kept as
        ``/scoped-models`` changes it.
        """
        if self._scope_loaded:
            return self._scope
        self._scope_loaded = True
        patterns = self.app._safe(lambda: self.session.setting("enabledModels"), None)
        if not isinstance(patterns, list) or not patterns:
            return None
        from pi_host.providers._resolve import resolve_model_scope

        available = list(models if models is not None else self.app._safe(self.session.available_models, ()))
        scoped, warnings = resolve_model_scope([str(p) for p in patterns], available)
        for warning in warnings:
            self.app.warning(f"enabledModels: {warning}")
        self._scope = scoped or None
        return self._scope

    def set_model_scope(self, refs: Sequence[str] | None, models: Sequence[Model]) -> None:
        """Cycle through ``refs`` from now on (``None``, none or all of them: every model)."""
        from pi_host.providers._resolve import ScopedModel

        self._scope_loaded = True
        by_ref = {model.ref: model for model in models}
        chosen = [by_ref[ref] for ref in refs or () if ref in by_ref]
        if not chosen or len(chosen) == len(models):
            self._scope = None
            return
        # A level a pattern of the settings gave a model stays with it.
        levels = {entry.model.ref: entry.thinking_level for entry in self._scope or ()}
        self._scope = [ScopedModel(model, levels.get(model.ref)) for model in chosen]

    async def thinking(self, args: str) -> None:
        levels = list(self.thinking_levels())
        if args:
            level = args.strip().lower()
            if level not in THINKING_LEVELS:
                self.app.error(f"Unknown thinking level {args!r}. Use one of: {', '.join(THINKING_LEVELS)}")
                return
        else:
            current = self.session.thinking_level
            initial = levels.index(current) if current in levels else 0
            index = await self.app.select("Thinking level", levels, initial=initial)
            if index is None:
                return
            level = levels[index]
        self.session.set_thinking_level(level)
        self.app.notice(f"Thinking level: {self.session.thinking_level}")

    def cycle_thinking_level(self) -> None:
        levels = list(self.thinking_levels())
        if len(levels) < 2:
            self.app.notice("Current model does not support thinking")
            return
        current = self.session.thinking_level
        position = levels.index(current) if current in levels else -1
        self.session.set_thinking_level(levels[(position + 1) % len(levels)])
        self.app.notice(f"Thinking level: {self.session.thinking_level}")

    # -- context --------------------------------------------------------------------------------

    async def compact(self, args: str) -> None:
        if len(self.session.messages) < 2:
            self.app.warning("Nothing to compact (no messages yet)")
            return
        self.app._compaction_error_shown = False
        try:
            await self.session.compact(args or None)
        except Exception as exc:
            # The compaction_end event usually reported it already.
            if not self.app._compaction_error_shown:
                self.app.error(str(exc))

    # -- sessions -------------------------------------------------------------------------------

    async def new(self, args: str) -> None:
        result = await self.session.new_session()
        if result.cancelled:
            return
        self.app.session_switched()
        self.app.add_static(Text("✓ New session started", style="green"))

    async def resume(self, args: str) -> None:
        sessions = list(self.session.list_sessions())
        current = self.session.session_file
        sessions = [s for s in sessions if s.path != current]
        if not sessions:
            self.app.notice("No other sessions found")
            return
        labels = []
        for listing in sessions:
            title = listing.name or _one_line(listing.first_message or "(empty)", 60)
            details = " · ".join(
                part for part in (_age(listing.modified_ms), f"{listing.message_count} messages") if part
            )
            labels.append(f"{title}  ({details})")
        index = await self.app.select("Resume session", labels, filterable=True)
        if index is None:
            return
        result = await self.session.resume(sessions[index].path)
        if result.cancelled:
            self.app.notice("Resume cancelled")
            return
        self.app.session_switched("Resumed session")

    async def fork(self, args: str) -> None:
        points = list(self.session.fork_points())
        if not points:
            self.app.notice("No messages to fork from")
            return
        labels = [_one_line(point.text) for point in points]
        index = await self.app.select("Fork from message", labels, initial=len(points) - 1)
        if index is None:
            return
        result = await self.session.fork(points[index].entry_id)
        if result.cancelled:
            return
        self.app.session_switched("Forked to new session")
        self._put_in_editor(result.editor_text, replace=True)

    async def clone(self, args: str) -> None:
        if self.session.leaf_id is None:
            self.app.notice("Nothing to clone yet")
            return
        result = await self.session.clone()
        if result.cancelled:
            return
        self.app.session_switched("Cloned to new session")

    async def tree(self, args: str) -> None:
        roots = list(self.session.tree())
        if not roots:
            self.app.notice("No entries in session")
            return
        from ._tree import FILTER_MODES, TreeDialog, TreeView

        leaf = self.session.leaf_id
        mode = self.session.setting("treeFilterMode")
        view = TreeView(roots, leaf, mode if mode in FILTER_MODES else "default")
        while True:
            # The same view each time round: back from the summary question, the filter,
            # search and folds are as they were.
            target = await self.app.show_dialog(TreeDialog(view, max_visible=15, keymap=self.app.keymap))
            if target is None:
                return
            if target == leaf:
                self.app.notice("Already at this point")
                return
            choice = await self._summary_choice()
            if choice is None:
                continue  # back to the tree, as pi does
            summarize, instructions = choice
            if summarize:
                self.app.set_status(self._summarizing_status())
            try:
                result = await self.session.navigate_tree(
                    target, summarize=summarize, custom_instructions=instructions
                )
            finally:
                if summarize:
                    self.app.set_status(None)
            if result.aborted:
                self.app.notice("Branch summarization cancelled")
                continue
            if result.cancelled:
                self.app.notice("Navigation cancelled")
                return
            self.app.session_switched("Navigated to selected point")
            self._put_in_editor(result.editor_text, replace=False)
            return

    def _summarizing_status(self) -> Any:
        from ._app import _Status

        return _Status("Summarizing branch... (esc to cancel)", kind="summarizing")

    async def _summary_choice(self) -> tuple[bool, str | None] | None:
        options = ["No summary", "Summarize", "Summarize with custom prompt"]
        while True:
            index = await self.app.select("Summarize branch?", options)
            if index is None:
                return None
            if index < 2:
                return index == 1, None
            instructions = await self.app.editor("Custom summarization instructions")
            if instructions is not None:
                return True, instructions

    def _put_in_editor(self, text: str | None, *, replace: bool) -> None:
        if not text:
            return
        buffer = self.app.buffer
        if replace or not buffer.text.strip():
            buffer.text = text
            buffer.cursor_position = len(text)

    async def name(self, args: str) -> None:
        if not args:
            current = self.session.session_name
            if current:
                self.app.notice(f"Session name: {current}")
            else:
                self.app.warning("Usage: /name <name>")
            return
        self.session.set_session_name(args)
        self.app.notice(f"Session name set: {args}")
        self.app.update_title()

    async def session_info(self, args: str) -> None:
        session = self.session
        messages = list(session.messages)
        counts = {"user": 0, "assistant": 0, "toolResult": 0}
        tool_calls = 0
        tokens = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}
        cost = 0.0
        for message in messages:
            role = getattr(message, "role", None)
            if role in counts:
                counts[role] += 1
            if isinstance(message, AssistantMessage):
                tool_calls += sum(1 for block in message.content if isinstance(block, ToolCall))
            usage = message_usage(message)  # replies, and what sub-agents spent for tool results
            if usage is not None:
                tokens["input"] += usage.input
                tokens["output"] += usage.output
                tokens["cache_read"] += usage.cache_read
                tokens["cache_write"] += usage.cache_write
                cost += float(usage.cost.total)
        table = Table.grid(padding=(0, 2))
        table.add_column(style="dim", no_wrap=True)
        table.add_column(overflow="fold")  # a long path wraps whole rather than losing its end

        def section(title: str) -> None:
            table.add_row(Text(title, style="bold"), "")

        section("Session Info")
        if session.session_name:
            table.add_row("Name", session.session_name)
        table.add_row("File", session.session_file or "In-memory")
        table.add_row("ID", session.session_id)
        section("Messages")
        table.add_row("User", str(counts["user"]))
        table.add_row("Assistant", str(counts["assistant"]))
        table.add_row("Tool Calls", str(tool_calls))
        table.add_row("Tool Results", str(counts["toolResult"]))
        table.add_row("Total", str(len(messages)))
        section("Tokens")
        table.add_row("Input", f"{tokens['input']:,}")
        table.add_row("Output", f"{tokens['output']:,}")
        if tokens["cache_read"]:
            table.add_row("Cache Read", f"{tokens['cache_read']:,}")
        if tokens["cache_write"]:
            table.add_row("Cache Write", f"{tokens['cache_write']:,}")
        table.add_row("Total", f"{sum(tokens.values()):,}")
        if cost > 0:
            section("Cost")
            table.add_row("Total", f"{cost:.4f}")
        self.app.add_static(table)

    async def export(self, args: str) -> None:
        from ._app import maybe_await

        try:
            target = _first_argument(args)
            if target and target.endswith(".jsonl"):  # as pi: the branch as a session file
                path = await maybe_await(self.session.export_jsonl(target))
            else:
                path = await maybe_await(self.session.export_html(target))
        except Exception as exc:
            self.app.error(f"Failed to export session: {exc}")
            return
        self.app.notice(f"Session exported to: {path}")

    async def import_session(self, args: str) -> None:
        path = _first_argument(args)
        if not path:
            self.app.error("Usage: /import <path.jsonl>")
            return
        if self.app.busy:
            self.app.warning("Wait for the current response to finish before importing.")
            return
        if not await self.app.confirm("Import session", f"Replace current session with {path}?"):
            self.app.notice("Import cancelled")
            return

        async def continue_without_cwd(recorded: str, current: str) -> bool:
            return await self.app.confirm(
                "Session cwd not found",
                f"The session's working directory does not exist:\n{recorded}\n\n"
                f"Continue in the current one?\n{current}",
            )

        try:
            result = await self.session.import_session(path, confirm_missing_cwd=continue_without_cwd)
        except Exception as exc:
            self.app.error(f"Failed to import session: {exc}")
            return
        if result.cancelled:
            self.app.notice("Import cancelled")
            return
        self.app.session_switched(f"Session imported from: {path}")
        if result.file:
            self.app.notice(f"Saved as {shorten_path(result.file)}")
        if result.recorded_cwd:
            self.app.notice(
                f"The session was recorded in {shorten_path(result.recorded_cwd)}; "
                f"it continues in {shorten_path(self.session.cwd)}"
            )
        for warning in result.warnings[:3]:
            self.app.warning(warning)
        if len(result.warnings) > 3:
            self.app.warning(f"… and {len(result.warnings) - 3} more problems in the file were skipped")

    async def copy(self, args: str) -> None:
        text = None
        for message in reversed(list(self.session.messages)):
            if isinstance(message, AssistantMessage):
                parts = [block.text for block in message.content if isinstance(block, TextContent)]
                if "".join(parts).strip():
                    text = "".join(parts).strip()
                    break
        if text is None:
            self.app.error("No agent messages to copy yet.")
            return
        self.app.copy_to_clipboard(text)
        self.app.notice("Copied last agent message to clipboard")

    async def reload(self, args: str) -> None:
        if self.app.busy:
            self.app.warning("Wait for the current response to finish before reloading.")
            return
        if self.app._compacting:
            self.app.warning("Wait for compaction to finish before reloading.")
            return
        # The keys first: a plugin that fails to reload must not keep an edited file from applying.
        self.app.reload_keys()
        try:
            await self.session.reload()
        except Exception as exc:
            self.app.error(f"Reload failed: {exc}")
            return
        self.app.notice("Reloaded keybindings, plugins, skills, prompt templates and context files")

    async def trust(self, args: str) -> None:
        state = self.session.trust_state()
        table = Table.grid(padding=(0, 2))
        table.add_column(style="dim")
        table.add_column()
        table.add_row(Text("Project Trust", style="bold"), "")
        table.add_row("Folder", shorten_path(state.cwd))
        table.add_row("Trusted", "yes" if state.trusted else "no")
        table.add_row("Because", state.source)
        self.app.add_static(table)
        for issue in state.issues:
            self.app.warning(issue)
        if not state.options:
            if state.needs_trust:
                self.app.notice("Trust cannot change in this run.")
            return
        if self.app.busy:
            self.app.warning("Wait for the current response to finish before changing trust.")
            return
        question = (
            f"Trust project folder?\n{state.cwd}\n\nThis lets pi-host load the project's .pi settings, "
            "skills, prompts and system prompt, and run its project plugins."
        )
        index = await self.app.select(question, list(state.options))
        if index is None:
            return
        try:
            changed = await self.session.set_trust(state.options[index])
        except Exception as exc:
            self.app.error(f"Changing trust failed: {exc}")
            return
        after = self.session.trust_state()
        for issue in after.issues:
            if issue not in state.issues:
                self.app.warning(issue)
        if changed and after.trusted:
            self.app.notice("Project trusted: its .pi settings, skills, prompts and plugins are loaded")
        elif changed:
            self.app.notice("Project not trusted: its .pi settings, skills, prompts and plugins are unloaded")
        else:
            verdict = "trusted" if after.trusted else "not trusted"
            self.app.notice(f"Trust unchanged ({verdict}, {after.source})")

    async def hotkeys(self, args: str) -> None:
        self.app.add_static(
            Group(
                Rule(style="dim"),
                Text("Keyboard Shortcuts", style="bold cyan"),
                render_markdown(hotkeys_markdown(self.app.keymap, self._plugin_shortcuts())),
                Rule(style="dim"),
            )
        )

    def _plugin_shortcuts(self) -> list[tuple[str, str]]:
        """The plugins' shortcuts that are bound (a key the editor keeps is left out)."""
        from ._bindings import plugin_shortcut_sequences

        bound = {key for key, _ in plugin_shortcut_sequences(self.app, self.app.keymap)[0]}
        listed = getattr(self.session, "plugin_shortcuts", None)
        shortcuts = self.app._safe(listed, ()) if listed is not None else ()
        return [(s.key, s.description) for s in shortcuts if s.key in bound]

    async def changelog(self, args: str) -> None:
        from ._changelog import changelog_markdown

        self.app.add_static(
            Group(
                Rule(style="dim"),
                Text("What's New", style="bold cyan"),
                render_markdown(changelog_markdown()),
                Rule(style="dim"),
            )
        )

    async def quit(self, args: str) -> None:
        self.app.request_exit()

    async def login(self, args: str) -> None:
        from ._login import login

        await login(self.app)

    async def logout(self, args: str) -> None:
        from ._login import logout

        await logout(self.app)

    # -- settings -------------------------------------------------------------------------------

    async def settings(self, args: str) -> None:
        from ._settings_menu import run_settings_menu

        await run_settings_menu(self.app)

    async def scoped_models(self, args: str) -> None:
        from ._scoped_models import ScopedModelsDialog, saved_value

        models = list(self.app._safe(self.session.available_models, ()))
        if not models:
            self.app.notice("No models available")
            return
        scope = self.model_scope(models)
        enabled = None if scope is None else [entry.model.ref for entry in scope]
        all_refs = [model.ref for model in models]

        def save(refs: list[str] | None) -> bool:
            try:
                self.session.save_setting("enabledModels", saved_value(refs, all_refs))
            except Exception as exc:
                self.app.error(str(exc))
                return False
            self.app.notice("Model selection saved to settings")
            return True

        dialog = ScopedModelsDialog(
            models,
            enabled,
            on_change=lambda refs: self.set_model_scope(refs, models),
            on_save=save,
            keymap=self.app.keymap,
        )
        await self.app.show_dialog(dialog)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if field_of(block, "type") == "text":
            parts.append(str(field_of(block, "text") or ""))
    return "".join(parts)


def entry_label(entry: Any, tool_calls: dict[str, tuple[str, Any]]) -> str | None:
    """How ``/tree`` shows one session entry, or ``None`` to leave it out."""
    kind = field_of(entry, "type")
    if kind == "message":
        message = field_of(entry, "message")
        role = field_of(message, "role")
        if role == "user":
            return "user: " + _one_line(_content_text(field_of(message, "content")), 100)
        if role == "assistant":
            content = field_of(message, "content") or []
            for block in content:
                if field_of(block, "type") == "toolCall":
                    tool_calls[str(field_of(block, "id"))] = (
                        str(field_of(block, "name")),
                        field_of(block, "arguments"),
                    )
            text = _one_line(_content_text(content), 100)
            if text:
                return "assistant: " + text
            calls = [
                _one_line(f"{name} {_tool_call_summary(name, field_of(block, 'arguments'))}".strip(), 60)
                for block in content
                if field_of(block, "type") == "toolCall"
                for name in [str(field_of(block, "name"))]
            ]
            if calls:  # a turn that only called tools is named by its calls
                return "assistant: → " + _one_line(", ".join(calls), 100)
            if field_of(message, "stop_reason", "stopReason") == "aborted":
                return "assistant: (aborted)"
            error = field_of(message, "error_message", "errorMessage")
            return "assistant: " + (_one_line(error, 80) if error else "(no content)")
        if role == "toolResult":
            call = tool_calls.get(str(field_of(message, "tool_call_id", "toolCallId")))
            if call is None:
                return f"[{field_of(message, 'tool_name', 'toolName') or 'tool'}]"
            name, arguments = call
            return _one_line(f"[{name}] {_tool_call_summary(name, arguments)}", 100)
        if role == "bashExecution":
            return "[bash]: " + _one_line(str(field_of(message, "command") or ""), 100)
        return f"[{role}]"
    if kind == "custom_message":
        label = field_of(entry, "custom_type", "customType")
        return f"[{label}]: " + _one_line(_content_text(field_of(entry, "content")), 100)
    if kind == "compaction":
        tokens = field_of(entry, "tokens_before", "tokensBefore") or 0
        return f"[compaction: {round(tokens / 1000)}k tokens]"
    if kind == "branch_summary":
        return "[branch summary]: " + _one_line(str(field_of(entry, "summary") or ""), 100)
    if kind == "model_change":
        return f"[model: {field_of(entry, 'model_id', 'modelId')}]"
    if kind == "thinking_level_change":
        return f"[thinking: {field_of(entry, 'thinking_level', 'thinkingLevel')}]"
    if kind == "session_info":
        return f"[title: {field_of(entry, 'name') or 'empty'}]"
    return None  # labels and plugin data entries are bookkeeping


def _tool_call_summary(name: str, arguments: Any) -> str:
    if not isinstance(arguments, dict):
        return ""
    for key in ("command", "path", "file_path", "pattern"):
        value = arguments.get(key)
        if isinstance(value, str):
            return value
    return ""


def flatten_tree(
    roots: Sequence[TreeNode], leaf_id: str | None, mode: str = "default"
) -> list[tuple[str, str]]:
    """``(entry id, display line)`` for each entry ``/tree`` shows under filter ``mode``
    (pi's ``default``, ``no-tools``, ``user-only``, ``labeled-only`` or ``all``), depth first:
    see :meth:`~pi_host.modes._interactive._tree.TreeView.rows`.
    """
    from ._tree import FILTER_MODES, TreeView

    return TreeView(roots, leaf_id, mode if mode in FILTER_MODES else "default").rows()
