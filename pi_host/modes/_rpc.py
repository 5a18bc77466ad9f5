"""RPC mode (``--mode rpc``): pi's JSONL protocol over stdin and stdout.

Each stdin line is a command (``{"id"?, "type", ...}``) answered by one ``response`` record
echoing its ``id``; session events are written as they happen; plugins' ``ctx.ui`` calls
become ``extension_ui_request`` records (see :class:`~pi_host.modes._rpc_io.RpcUI`).
Commands are handled concurrently, as pi does, so ``steer``, ``abort`` or ``get_state``
are answered while a prompt runs. EOF on stdin aborts any run, fires the shutdown hooks and
ends the mode with status 0; SIGTERM / SIGHUP end it with 143 / 129.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any, BinaryIO, cast

import anyio
from anyio.abc import TaskGroup, TaskStatus

from pi_host.messages import AssistantMessage, ImageContent, TextContent, UserMessage, message_usage
from pi_host.providers import Model, ThinkingLevel
from pi_host.runtime import AgentSession, clamp_thinking_level

from ._rpc_io import JsonlWriter, RpcUI, read_lines
from ._signals import watch_exit_signals

__all__ = ["RpcServer", "run_rpc_mode"]

_THINKING_LEVELS: tuple[ThinkingLevel, ...] = ("off", "minimal", "low", "medium", "high", "xhigh")
_QUEUE_MODES = ("all", "one-at-a-time")


class CommandError(Exception):
    """A command failed before doing anything; its message is the response's ``error``."""


def _success(request_id: Any, command: str, data: Any = ..., /) -> dict[str, Any]:
    response: dict[str, Any] = {"id": request_id, "type": "response", "command": command, "success": True}
    if request_id is None:
        del response["id"]
    if data is not ...:
        response["data"] = data
    return response


def _js_number(value: float) -> float:
    """``value`` as JavaScript writes it: a whole number without ``.0``."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _unknown_command(command: dict[str, Any]) -> dict[str, Any]:
    """pi's answer to a command it has no handler for: no request id, and the type shown
    as JavaScript would show it (``undefined`` when missing, ``null``, ``true``)."""
    response: dict[str, Any] = {"type": "response", "success": False}
    if "type" not in command:
        response["error"] = "Unknown command: undefined"
        return response
    kind = command["type"]
    shown = kind if isinstance(kind, str) else json.dumps(kind)
    return {"type": "response", "command": kind, "success": False, "error": f"Unknown command: {shown}"}


def _error(request_id: Any, command: Any, message: str) -> dict[str, Any]:
    response: dict[str, Any] = {
        "id": request_id,
        "type": "response",
        "command": command,
        "success": False,
        "error": message,
    }
    return {key: value for key, value in response.items() if value is not None}


def _json_error_message(exc: json.JSONDecodeError) -> str:
    return f"{exc.msg} at line {exc.lineno} column {exc.colno} (char {exc.pos})"


def _images(command: dict[str, Any]) -> list[ImageContent]:
    raw = command.get("images") or []
    if not isinstance(raw, list):
        raise CommandError('"images" must be a list of {"type": "image", "data", "mimeType"} objects')
    return [ImageContent.model_validate(image) for image in raw]


def _message_text(command: dict[str, Any]) -> str:
    message = command.get("message")
    if not isinstance(message, str):
        raise CommandError(f'"{command.get("type")}" needs a "message" string')
    return message


def _user_text(message: UserMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    return "".join(block.text for block in message.content if isinstance(block, TextContent))


def _model_json(model: Model | None) -> dict[str, Any] | None:
    return None if model is None else model.to_json_dict()


class RpcServer:
    """Serves one :class:`AgentSession` over pi's RPC protocol.

    :param session: the session to drive (its ``ui`` is replaced by an :class:`RpcUI`).
    :param stdin: binary stream of command lines.
    :param stdout: binary stream that receives responses, events and UI requests.
    """

    def __init__(self, session: AgentSession, stdin: BinaryIO, stdout: BinaryIO) -> None:
        self.session = session
        self.stdin = stdin
        self.writer = JsonlWriter(stdout)
        self.ui = RpcUI(self.writer.write)
        self.exit_code = 0
        self._bash_scope: anyio.CancelScope | None = None
        self._done = anyio.Event()
        self._handlers: dict[str, Callable[[Any, dict[str, Any]], Awaitable[dict[str, Any] | None]]] = {
            name.removeprefix("_cmd_"): getattr(self, name) for name in dir(self) if name.startswith("_cmd_")
        }

    # -- the loop ---------------------------------------------------------------------------

    async def serve(self) -> int:
        """Read and answer commands until EOF, a signal, or a plugin asks to shut down."""
        session = self.session
        session.ui = self.ui
        unsubscribe = session.subscribe(self.writer.write)
        try:
            async with anyio.create_task_group() as tg:
                session.bind_task_group(tg)
                await tg.start(self._watch_signals)
                await session.start("startup")
                tg.start_soon(self._read_commands, tg)
                await self._done.wait()
                await self._shutdown()
                tg.cancel_scope.cancel()
        finally:
            unsubscribe()
            self.ui.cancel_all()
            self.writer.flush()
        return self.exit_code

    async def _read_commands(self, tg: TaskGroup) -> None:
        await read_lines(self.stdin, lambda line: self.handle_line(line, tg))
        self._done.set()

    async def _shutdown(self) -> None:
        with anyio.CancelScope(shield=True):
            self.ui.cancel_all()
            if self.session.is_streaming or self.session.is_compacting:
                with anyio.move_on_after(10):
                    await self.session.abort()
            await self.session.shutdown("quit")

    async def _watch_signals(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        def stop(status: int) -> None:
            self.exit_code = status
            self._done.set()

        await watch_exit_signals(stop, task_status=task_status)

    def handle_line(self, line: str, tg: TaskGroup) -> None:
        """Parse one record: a UI response is delivered at once, a command runs in ``tg``."""
        try:
            parsed = json.loads(line)
        except json.JSONDecodeError as exc:
            self.writer.write(_error(None, "parse", f"Failed to parse command: {_json_error_message(exc)}"))
            return
        if isinstance(parsed, dict) and parsed.get("type") == "extension_ui_response":
            self.ui.resolve(parsed)
            return
        command = parsed if isinstance(parsed, dict) else {}
        tg.start_soon(self._run_command, command)

    async def _run_command(self, command: dict[str, Any]) -> None:
        request_id, kind = command.get("id"), command.get("type")
        handler = self._handlers.get(kind) if isinstance(kind, str) else None
        if handler is None and isinstance(kind, str) and kind.startswith("abort_"):
            handler = self._abort_scope_handler(kind.removeprefix("abort_"))
        if handler is None and isinstance(kind, str):
            handler = self._plugin_handler(kind)
        if handler is None:
            self.writer.write(_unknown_command(command))
            return
        try:
            response = await handler(request_id, command)
        except Exception as exc:
            self.writer.write(_error(request_id, kind, str(exc) or type(exc).__name__))
        else:
            if response is not None:
                self.writer.write(response)
        if self.session.shutdown_requested:
            self._done.set()

    # -- prompting --------------------------------------------------------------------------

    async def _cmd_prompt(self, request_id: Any, command: dict[str, Any]) -> None:
        text, images = _message_text(command), _images(command)
        behavior = command.get("streamingBehavior")
        if behavior not in (None, "steer", "followUp"):
            raise CommandError(f'Invalid streamingBehavior "{behavior}": use "steer" or "followUp"')
        accepted = False

        def preflight(ok: bool) -> None:
            nonlocal accepted
            if ok:
                accepted = True
                self.writer.write(_success(request_id, "prompt"))

        # This task is the run: later failures reach the client as events, never as a
        # second response to the same request.
        try:
            await self.session.prompt(
                text, images=images, streaming_behavior=behavior, source="rpc", preflight=preflight
            )
        except Exception as exc:
            if not accepted:
                self.writer.write(_error(request_id, "prompt", str(exc)))

    async def _cmd_steer(self, request_id: Any, command: dict[str, Any]) -> dict[str, Any]:
        await self.session.steer(_message_text(command), _images(command))
        return _success(request_id, "steer")

    async def _cmd_follow_up(self, request_id: Any, command: dict[str, Any]) -> dict[str, Any]:
        await self.session.follow_up(_message_text(command), _images(command))
        return _success(request_id, "follow_up")

    async def _cmd_abort(self, request_id: Any, command: dict[str, Any]) -> dict[str, Any]:
        await self.session.abort()
        return _success(request_id, "abort")

    async def _cmd_new_session(self, request_id: Any, command: dict[str, Any]) -> dict[str, Any]:
        parent = command.get("parentSession")
        cancelled = await self.session.new_session(parent_session=parent if isinstance(parent, str) else None)
        return _success(request_id, "new_session", {"cancelled": cancelled})

    # -- state ------------------------------------------------------------------------------

    async def _cmd_get_state(self, request_id: Any, command: dict[str, Any]) -> dict[str, Any]:
        session, manager = self.session, self.session.session_manager
        state: dict[str, Any] = {
            "model": _model_json(session.model),
            "thinkingLevel": session.thinking_level,
            "isStreaming": session.is_streaming,
            "isCompacting": session.is_compacting,
            "steeringMode": session.agent.steering_mode,
            "followUpMode": session.agent.follow_up_mode,
            "sessionFile": None if manager.session_file is None else str(manager.session_file),
            "sessionId": manager.session_id,
            "sessionName": manager.session_name,
            "autoCompactionEnabled": session.setting_value("compaction.enabled", True) is not False,
            "messageCount": len(session.messages),
            "pendingMessageCount": session.pending_message_count,
        }
        for optional in ("sessionFile", "sessionName"):
            if state[optional] is None:
                del state[optional]
        return _success(request_id, "get_state", state)

    async def _cmd_get_messages(self, request_id: Any, command: dict[str, Any]) -> dict[str, Any]:
        messages = [message.to_json_dict() for message in self.session.messages]
        return _success(request_id, "get_messages", {"messages": messages})

    # -- model and thinking -----------------------------------------------------------------

    def _available_models(self) -> list[Model]:
        resolver = self.session.model_resolver
        return [] if resolver is None else list(resolver.available_models())

    async def _cmd_set_model(self, request_id: Any, command: dict[str, Any]) -> dict[str, Any]:
        provider, model_id = command.get("provider"), command.get("modelId")
        model = next(
            (m for m in self._available_models() if m.provider == provider and m.id == model_id), None
        )
        if model is None:
            return _error(request_id, "set_model", f"Model not found: {provider}/{model_id}")
        if not await self.session.set_model(model):
            return _error(request_id, "set_model", f"No API key for {provider}/{model_id}")
        return _success(request_id, "set_model", model.to_json_dict())

    async def _cmd_cycle_model(self, request_id: Any, command: dict[str, Any]) -> dict[str, Any]:
        session = self.session
        models = self._available_models()
        if len(models) <= 1:
            return _success(request_id, "cycle_model", None)
        current = session.model
        index = next(
            (
                i
                for i, m in enumerate(models)
                if current is not None and m.provider == current.provider and m.id == current.id
            ),
            0,
        )
        following = models[(index + 1) % len(models)]
        # pi keeps the session's level when the model thinks, else falls back to the default.
        level: ThinkingLevel = session.thinking_level
        if current is None or not current.reasoning:
            default = getattr(session.settings, "default_thinking_level", None)
            level = cast(ThinkingLevel, default or "medium")
        await session.set_model(following, source="cycle")
        session.set_thinking_level(level)
        data = {"model": following.to_json_dict(), "thinkingLevel": session.thinking_level, "isScoped": False}
        return _success(request_id, "cycle_model", data)

    async def _cmd_get_available_models(self, request_id: Any, command: dict[str, Any]) -> dict[str, Any]:
        models = [model.to_json_dict() for model in self._available_models()]
        return _success(request_id, "get_available_models", {"models": models})

    async def _cmd_set_thinking_level(self, request_id: Any, command: dict[str, Any]) -> dict[str, Any]:
        level = command.get("level")
        if level not in _THINKING_LEVELS:
            valid = ", ".join(_THINKING_LEVELS)
            return _error(
                request_id, "set_thinking_level", f"Invalid thinking level: {level}. Valid: {valid}"
            )
        self.session.set_thinking_level(cast(ThinkingLevel, level))
        return _success(request_id, "set_thinking_level")

    async def _cmd_cycle_thinking_level(self, request_id: Any, command: dict[str, Any]) -> dict[str, Any]:
        session = self.session
        model = session.model
        if model is None or not model.reasoning:
            return _success(request_id, "cycle_thinking_level", None)
        levels = [level for level in _THINKING_LEVELS if clamp_thinking_level(model, level) == level]
        current = session.thinking_level
        index = levels.index(current) if current in levels else -1
        session.set_thinking_level(levels[(index + 1) % len(levels)])
        return _success(request_id, "cycle_thinking_level", {"level": session.thinking_level})

    # -- queue modes ------------------------------------------------------------------------

    async def _cmd_set_steering_mode(self, request_id: Any, command: dict[str, Any]) -> dict[str, Any]:
        mode = command.get("mode")
        if mode not in _QUEUE_MODES:
            return _error(
                request_id, "set_steering_mode", f'Invalid mode "{mode}": use "all" or "one-at-a-time"'
            )
        self.session.agent.steering_mode = mode
        return _success(request_id, "set_steering_mode")

    async def _cmd_set_follow_up_mode(self, request_id: Any, command: dict[str, Any]) -> dict[str, Any]:
        mode = command.get("mode")
        if mode not in _QUEUE_MODES:
            return _error(
                request_id, "set_follow_up_mode", f'Invalid mode "{mode}": use "all" or "one-at-a-time"'
            )
        self.session.agent.follow_up_mode = mode
        return _success(request_id, "set_follow_up_mode")

    # -- compact and the settings sections of plugins ------------------------------------------

    async def _cmd_compact(self, request_id: Any, command: dict[str, Any]) -> dict[str, Any]:
        instructions = command.get("customInstructions")
        result = await self.session.compact(instructions if isinstance(instructions, str) else None)
        if result is None:
            return _error(request_id, "compact", "Compaction cancelled")
        data: dict[str, Any] = {
            "summary": result.summary,
            "firstKeptEntryId": result.first_kept_entry_id,
            "tokensBefore": result.tokens_before,
        }
        if result.details is not None:
            data["details"] = result.details
        return _success(request_id, "compact", data)

    # pi's set_auto_* commands switch the ``enabled`` key of a settings section, in memory;
    # the plugin owning the section reads it from there.

    async def _cmd_set_auto_compaction(self, request_id: Any, command: dict[str, Any]) -> dict[str, Any]:
        self.session.set_setting_value("compaction.enabled", bool(command.get("enabled")))
        return _success(request_id, "set_auto_compaction")

    async def _cmd_set_auto_retry(self, request_id: Any, command: dict[str, Any]) -> dict[str, Any]:
        self.session.set_setting_value("retry.enabled", bool(command.get("enabled")))
        return _success(request_id, "set_auto_retry")

    def _plugin_handler(
        self, kind: str
    ) -> Callable[[Any, dict[str, Any]], Awaitable[dict[str, Any] | None]] | None:
        """A command a plugin added (``pi_register_rpc_commands``); pi's own were looked up first."""
        plugin_command = self.session.host.rpc_commands.get(kind)
        if plugin_command is None:
            return None

        async def run(request_id: Any, command: dict[str, Any]) -> dict[str, Any]:
            data = await plugin_command.handler(command, self.session.ctx)
            return _success(request_id, kind) if data is None else _success(request_id, kind, data)

        return run

    def _abort_scope_handler(
        self, name: str
    ) -> Callable[[Any, dict[str, Any]], Awaitable[dict[str, Any] | None]] | None:
        """``abort_<name>`` for an abort scope a plugin declared (pi's ``abort_retry`` …)."""
        if name not in self.session.host.abort_scopes:
            return None

        async def abort(request_id: Any, command: dict[str, Any]) -> dict[str, Any]:
            self.session.abort_scope(name)
            return _success(request_id, f"abort_{name}")

        return abort

    # -- bash -------------------------------------------------------------------------------

    async def _cmd_bash(self, request_id: Any, command: dict[str, Any]) -> dict[str, Any]:
        line = command.get("command")
        if not isinstance(line, str):
            raise CommandError('"bash" needs a "command" string')
        exclude = bool(command.get("excludeFromContext"))
        scope = anyio.CancelScope()
        self._bash_scope = scope
        message = None
        try:
            with scope:
                message = await self.session.run_user_bash(line, exclude_from_context=exclude)
        finally:
            if self._bash_scope is scope:
                self._bash_scope = None
        if message is None:
            return _success(request_id, "bash", {"output": "", "cancelled": True, "truncated": False})
        data: dict[str, Any] = {
            "output": message.output,
            "exitCode": message.exit_code,
            "cancelled": message.cancelled,
            "truncated": message.truncated,
        }
        if message.exit_code is None:
            del data["exitCode"]
        if message.full_output_path:
            data["fullOutputPath"] = message.full_output_path
        return _success(request_id, "bash", data)

    async def _cmd_abort_bash(self, request_id: Any, command: dict[str, Any]) -> dict[str, Any]:
        if self._bash_scope is not None:
            self._bash_scope.cancel()
        return _success(request_id, "abort_bash")

    # -- session ----------------------------------------------------------------------------

    async def _cmd_get_session_stats(self, request_id: Any, command: dict[str, Any]) -> dict[str, Any]:
        session, manager = self.session, self.session.session_manager
        messages = session.messages
        roles = [getattr(message, "role", None) for message in messages]
        assistants = [m for m in messages if isinstance(m, AssistantMessage)]
        # Replies' usage, and what tools spent for their results (sub-agents' requests).
        usages = [u for u in (message_usage(m) for m in messages) if u is not None]
        tokens = {
            "input": sum(u.input for u in usages),
            "output": sum(u.output for u in usages),
            "cacheRead": sum(u.cache_read for u in usages),
            "cacheWrite": sum(u.cache_write for u in usages),
        }
        tokens["total"] = sum(tokens.values())
        stats: dict[str, Any] = {
            "sessionFile": None if manager.session_file is None else str(manager.session_file),
            "sessionId": manager.session_id,
            "userMessages": roles.count("user"),
            "assistantMessages": len(assistants),
            "toolCalls": sum(1 for m in assistants for block in m.content if block.type == "toolCall"),
            "toolResults": roles.count("toolResult"),
            "totalMessages": len(messages),
            "tokens": tokens,
            "cost": _js_number(sum(u.cost.total for u in usages)),
        }
        if stats["sessionFile"] is None:
            del stats["sessionFile"]
        usage = session.context_usage()
        if usage is not None and usage.context_window > 0:
            stats["contextUsage"] = {
                "tokens": usage.tokens,
                "contextWindow": usage.context_window,
                "percent": None if usage.percent is None else _js_number(usage.percent),
            }
        return _success(request_id, "get_session_stats", stats)

    async def _cmd_export_html(self, request_id: Any, command: dict[str, Any]) -> dict[str, Any]:
        from ._export import export_html

        session_file = self.session.session_manager.session_file
        if session_file is None:
            return _error(
                request_id, "export_html", "Cannot export an in-memory session (--no-session) to HTML"
            )
        output = command.get("outputPath")
        target = output if isinstance(output, str) and output else None
        path = await anyio.to_thread.run_sync(lambda: export_html(session_file, target))
        return _success(request_id, "export_html", {"path": str(path)})

    async def _cmd_switch_session(self, request_id: Any, command: dict[str, Any]) -> dict[str, Any]:
        path = command.get("sessionPath")
        if not isinstance(path, str) or not path:
            raise CommandError('"switch_session" needs a "sessionPath" string')
        if not await anyio.Path(path).is_file():
            return _error(request_id, "switch_session", f"Session file not found: {path}")
        from pi_host.session import SessionFileError, check_session_file

        try:
            check_session_file(path)  # before the current session is shut down
        except SessionFileError as exc:
            return _error(request_id, "switch_session", str(exc))
        cancelled = await self.session.switch_session(path)
        return _success(request_id, "switch_session", {"cancelled": cancelled})

    async def _cmd_fork(self, request_id: Any, command: dict[str, Any]) -> dict[str, Any]:
        entry_id = command.get("entryId")
        entry = self.session.session_manager.get_entry(entry_id) if isinstance(entry_id, str) else None
        message = getattr(entry, "message", None)
        if entry is None or not isinstance(message, UserMessage):
            return _error(request_id, "fork", "Invalid entry ID for forking")
        text = _user_text(message)
        cancelled = await self.session.fork(entry.id)
        return _success(request_id, "fork", {"text": text, "cancelled": cancelled})

    async def _cmd_clone(self, request_id: Any, command: dict[str, Any]) -> dict[str, Any]:
        leaf = self.session.session_manager.leaf_id
        if not leaf:
            return _error(request_id, "clone", "Cannot clone session: no current entry selected")
        cancelled = await self.session.fork(leaf, position="at")
        return _success(request_id, "clone", {"cancelled": cancelled})

    async def _cmd_get_fork_messages(self, request_id: Any, command: dict[str, Any]) -> dict[str, Any]:
        messages = []
        for entry in self.session.session_manager.get_entries():
            message = getattr(entry, "message", None)
            if entry.type == "message" and isinstance(message, UserMessage):
                text = _user_text(message)
                if text:
                    messages.append({"entryId": entry.id, "text": text})
        return _success(request_id, "get_fork_messages", {"messages": messages})

    async def _cmd_get_last_assistant_text(self, request_id: Any, command: dict[str, Any]) -> dict[str, Any]:
        text = None
        for message in reversed(self.session.messages):
            if not isinstance(message, AssistantMessage):
                continue
            if message.stop_reason == "aborted" and not message.content:
                continue
            joined = "".join(block.text for block in message.content if isinstance(block, TextContent))
            text = joined.strip() or None
            break
        return _success(request_id, "get_last_assistant_text", {"text": text})

    async def _cmd_set_session_name(self, request_id: Any, command: dict[str, Any]) -> dict[str, Any]:
        name = command.get("name")
        name = name.strip() if isinstance(name, str) else ""
        if not name:
            return _error(request_id, "set_session_name", "Session name cannot be empty")
        self.session.set_session_name(name)
        return _success(request_id, "set_session_name")

    async def _cmd_get_commands(self, request_id: Any, command: dict[str, Any]) -> dict[str, Any]:
        session = self.session
        commands: list[dict[str, Any]] = []
        for plugin_command in session.host.commands.values():
            entry: dict[str, Any] = {"name": plugin_command.name, "source": "extension"}
            if plugin_command.description:
                entry["description"] = plugin_command.description
            commands.append(entry)
        for template in session.prompt_templates:
            commands.append(
                {
                    "name": template.name,
                    "description": template.description,
                    "source": "prompt",
                    "sourceInfo": {
                        "path": str(template.file_path),
                        "source": "local",
                        "scope": template.scope,
                    },
                }
            )
        for skill in session.skills:
            commands.append(
                {
                    "name": f"skill:{skill.name}",
                    "description": skill.description,
                    "source": "skill",
                    "sourceInfo": {
                        "path": str(skill.file_path),
                        "source": "local",
                        "scope": skill.scope,
                        "baseDir": str(skill.base_dir),
                    },
                }
            )
        return _success(request_id, "get_commands", {"commands": commands})


async def run_rpc_mode(session: AgentSession) -> int:
    """Serve ``session`` over stdin / stdout until EOF; returns the exit status.

    While the mode runs, ``sys.stdout`` points at stderr, so a stray ``print`` from a plugin
    cannot corrupt the protocol stream.
    """
    stdout, stdin = sys.stdout.buffer, sys.stdin.buffer
    saved = sys.stdout
    sys.stdout = sys.stderr
    try:
        return await RpcServer(session, stdin, stdout).serve()
    finally:
        sys.stdout = saved
