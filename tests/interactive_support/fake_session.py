"""A scripted :class:`InteractiveSession` for driving the interactive mode without a runtime.

It behaves like pi's AgentSession where the UI can tell: a prompt runs a whole agent run with
pi's event order, streams text in small deltas, executes scripted tool calls, queues steering
and follow-up messages while streaming (``queue_update``), delivers steering after the tool
batch and follow-ups at the end, aborts cleanly, compacts, and keeps a session tree.

A scripted reply is a dict: ``{"text": ...}``, ``{"thinking": ..., "text": ...}``,
``{"toolCalls": [{"name": "bash", "arguments": {...}, "result": "...", "until": "steer"}]}``
(``until: "steer"`` makes the tool run until a steering message is queued or the run is
aborted), ``{"error": "message"}``. When the script runs out, the reply echoes the prompt.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio

from pi_host.hookspecs import ToolRenderer
from pi_host.messages import (
    AgentEndEvent,
    AgentStartEvent,
    AssistantMessage,
    CompactionSummaryMessage,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    TextContent,
    TextDeltaEvent,
    ThinkingContent,
    ThinkingDeltaEvent,
    ToolCall,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    ToolResult,
    ToolResultMessage,
    TurnEndEvent,
    Usage,
    UserMessage,
)
from pi_host.modes._interactive import (
    AutoRetryEndEvent,
    AutoRetryStartEvent,
    CompactionEndEvent,
    CompactionStartEvent,
    ContextUsage,
    ForkPoint,
    ImportResult,
    LoginProvider,
    LoginResult,
    PluginCommand,
    QueueUpdateEvent,
    SessionInfoChangedEvent,
    SessionListing,
    StoredCredential,
    SwitchResult,
    ThinkingLevelChangedEvent,
    TreeNode,
    TrustState,
    UiBridge,
    UserBashResult,
)
from pi_host.providers import AuthStorage, Model
from pi_host.providers._oauth_login import LOGIN_PROVIDERS, LoginAttempt, exchange_code

DELTA_PAUSE_S = 0.002  # pacing of the fake stream, so deltas arrive as separate events

FAKE_MODEL = Model(
    id="fake-model",
    name="Fake",
    api="faux",
    provider="faux",
    reasoning=True,
    context_window=200_000,
)
OTHER_MODEL = Model(id="other-model", api="faux", provider="faux", reasoning=False, context_window=32_000)


def _usage(input_tokens: int, output_tokens: int) -> Usage:
    return Usage.model_validate(
        {
            "input": input_tokens,
            "output": output_tokens,
            "totalTokens": input_tokens + output_tokens,
            "cost": {
                "input": input_tokens * 1e-6,
                "output": output_tokens * 5e-6,
                "total": input_tokens * 1e-6 + output_tokens * 5e-6,
            },
        }
    )


class FakeInteractiveSession:
    """See the module docstring."""

    def __init__(
        self,
        *,
        cwd: str,
        script: Sequence[dict[str, Any]] = (),
        session_dir: str | None = None,
        settings: dict[str, Any] | None = None,
    ):
        self._cwd = cwd
        # settings.json as pi-shaped data; save_setting changes it (and records the change)
        self.settings: dict[str, Any] = dict(settings or {})
        self.saved_settings: list[tuple[str, Any]] = []
        # The plugins' settings values /settings lists after pi's rows (PluginSetting rows).
        self.plugin_setting_rows: list[Any] = []
        self._script = list(script)
        self._last_reply: dict[str, Any] = {}
        self._listeners: list[Callable[[Any], Awaitable[None] | None]] = []
        self._model: Model | None = FAKE_MODEL
        self._thinking = "medium"
        self._streaming = False
        self._steering: list[str] = []
        self._follow_up: list[str] = []
        self._abort = anyio.Event()
        self._steered = anyio.Event()
        self._idle = anyio.Event()
        self._idle.set()
        self._ids = itertools.count(1)
        # the session tree: entry id -> (parent id, entry dict)
        self._entries: dict[str, tuple[str | None, dict[str, Any]]] = {}
        self._leaf: str | None = None
        self._name: str | None = None
        self._file = f"{session_dir or cwd}/session-1.jsonl"
        self._session_id = "fake-session-0001"
        self.ui: UiBridge | None = None
        self.plugin_log: list[tuple[str, str]] = []
        self.compactions: list[str | None] = []
        # /login and /logout use it as the runtime does: tests may put a file-backed one here.
        self.auth = AuthStorage.in_memory()
        self.trusted = False
        self.trust_log: list[str] = []

    # -- state ------------------------------------------------------------------------------

    @property
    def is_streaming(self) -> bool:
        return self._streaming

    @property
    def shutdown_requested(self) -> bool:
        return False

    @property
    def model(self) -> Model | None:
        return self._model

    @property
    def thinking_level(self) -> str:
        return self._thinking

    @property
    def messages(self) -> list[Any]:
        return [entry["message"] for entry in self._path() if entry["type"] == "message"]

    @property
    def cwd(self) -> str:
        return self._cwd

    @property
    def session_file(self) -> str | None:
        return self._file

    @property
    def session_id(self) -> str:
        return self._session_id

    @property
    def session_name(self) -> str | None:
        return self._name

    @property
    def leaf_id(self) -> str | None:
        return self._leaf

    @property
    def auto_compaction_enabled(self) -> bool:
        return self.setting("compaction.enabled") is not False

    def context_usage(self) -> ContextUsage | None:
        tokens = 0
        for message in self.messages:
            if isinstance(message, AssistantMessage):
                tokens = message.usage.input + message.usage.output
        window = self._model.context_window if self._model else 0
        return ContextUsage(tokens, window, 100 * tokens / window if window else None)

    def subscribe(self, listener: Callable[[Any], Awaitable[None] | None]) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def set_ui(self, ui: UiBridge | None) -> None:
        self.ui = ui

    async def _emit(self, event: Any) -> None:
        for listener in list(self._listeners):
            result = listener(event)
            if result is not None:
                await result

    # -- the tree ---------------------------------------------------------------------------

    def _append(self, entry: dict[str, Any]) -> str:
        entry_id = f"e{next(self._ids)}"
        entry = {"id": entry_id, **entry}
        self._entries[entry_id] = (self._leaf, entry)
        self._leaf = entry_id
        return entry_id

    def _append_message(self, message: Any) -> str:
        return self._append({"type": "message", "message": message})

    def _path(self) -> list[dict[str, Any]]:
        path: list[dict[str, Any]] = []
        cursor = self._leaf
        while cursor is not None:
            parent, entry = self._entries[cursor]
            path.append(entry)
            cursor = parent
        path.reverse()
        # a compaction replaces what came before it
        for index in range(len(path) - 1, -1, -1):
            if path[index]["type"] == "compaction":
                summary = CompactionSummaryMessage(
                    summary=path[index]["summary"], tokens_before=path[index]["tokensBefore"]
                )
                return [{"type": "message", "message": summary}, *path[index + 1 :]]
        return path

    def tree(self) -> list[TreeNode]:
        nodes = {entry_id: TreeNode(entry=entry) for entry_id, (_, entry) in self._entries.items()}
        roots: list[TreeNode] = []
        for entry_id, (parent, _) in self._entries.items():
            if parent is None:
                roots.append(nodes[entry_id])
            else:
                nodes[parent].children.append(nodes[entry_id])
        return roots

    async def navigate_tree(
        self, entry_id: str, *, summarize: bool, custom_instructions: str | None = None
    ) -> SwitchResult:
        parent, entry = self._entries[entry_id]
        editor_text = None
        if entry["type"] == "message" and isinstance(entry["message"], UserMessage):
            # pi moves to the user message's parent and offers its text for editing
            editor_text = entry["message"].content if isinstance(entry["message"].content, str) else None
            self._leaf = parent
        else:
            self._leaf = entry_id
        return SwitchResult(editor_text=editor_text)

    # -- running ----------------------------------------------------------------------------

    async def prompt(self, text: str, *, streaming_behavior: str | None = None) -> None:
        if self._streaming:
            if streaming_behavior is None:
                raise RuntimeError(
                    "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') "
                    "to queue the message."
                )
            (self._steering if streaming_behavior == "steer" else self._follow_up).append(text)
            if streaming_behavior == "steer":
                self._steered.set()
            await self._emit_queue()
            return
        self._streaming = True
        self._abort = anyio.Event()
        self._idle = anyio.Event()
        try:
            await self._run([text])
            attempt = 0
            # {"error": ..., "retry": true}: a retryable failure, retried as pi-retry does.
            while self._last_reply.get("retry") and not self._abort.is_set():
                attempt += 1
                await self._emit(
                    AutoRetryStartEvent(
                        attempt=attempt, max_attempts=3, delay_ms=10, error_message=self._last_reply["error"]
                    )
                )
                await anyio.sleep(0.01)
                await self._run([])
            if attempt:
                await self._emit(AutoRetryEndEvent(success=True, attempt=attempt))
        finally:
            self._streaming = False
            self._idle.set()

    async def _emit_queue(self) -> None:
        await self._emit(QueueUpdateEvent(steering=tuple(self._steering), follow_up=tuple(self._follow_up)))

    async def _deliver_user(self, text: str) -> None:
        message = UserMessage(content=text)
        await self._emit(MessageStartEvent(message=message))
        if text in self._steering:
            self._steering.remove(text)
            await self._emit_queue()
        elif text in self._follow_up:
            self._follow_up.remove(text)
            await self._emit_queue()
        self._append_message(message)
        await self._emit(MessageEndEvent(message=message))

    async def _run(self, prompts: list[str]) -> None:
        produced: list[Any] = []
        await self._emit(AgentStartEvent())
        pending = list(prompts)
        while True:
            for text in pending:
                await self._deliver_user(text)
            pending = []
            reply = (
                self._script.pop(0) if self._script else {"text": f"Echo: {prompts[-1] if prompts else ''}"}
            )
            self._last_reply = reply
            assistant = await self._stream_reply(reply)
            produced.append(assistant)
            results: list[ToolResultMessage] = []
            if assistant.stop_reason == "toolUse":
                for call in [b for b in assistant.content if isinstance(b, ToolCall)]:
                    spec = next(t for t in reply["toolCalls"] if t["name"] == call.name)
                    results.append(await self._execute(call, spec))
            await self._emit(TurnEndEvent(message=assistant, tool_results=results))
            if assistant.stop_reason in ("aborted", "error"):
                break
            if self._steering:
                pending = list(self._steering)
                continue
            if assistant.stop_reason == "toolUse":
                continue
            if self._follow_up:
                pending = list(self._follow_up)
                continue
            break
        await self._emit(AgentEndEvent(messages=produced))

    async def _stream_reply(self, reply: dict[str, Any]) -> AssistantMessage:
        partial = AssistantMessage(api="faux", provider="faux", model=FAKE_MODEL.id, usage=_usage(0, 0))
        await self._emit(MessageStartEvent(message=partial))
        content: list[Any] = []
        aborted = self._abort.is_set()
        if not aborted and reply.get("delayMs"):
            with anyio.move_on_after(reply["delayMs"] / 1000):
                await self._abort.wait()
            aborted = self._abort.is_set()
        for kind in ("thinking", "text"):
            if aborted or kind not in reply:
                continue
            block: Any = ThinkingContent(thinking="") if kind == "thinking" else TextContent(text="")
            content.append(block)
            for chunk in _chunks(reply[kind]):
                if self._abort.is_set():
                    aborted = True
                    break
                block = (
                    block.model_copy(update={"thinking": block.thinking + chunk})
                    if kind == "thinking"
                    else block.model_copy(update={"text": block.text + chunk})
                )
                content[-1] = block
                partial = partial.model_copy(update={"content": list(content)})
                delta_type = ThinkingDeltaEvent if kind == "thinking" else TextDeltaEvent
                delta = delta_type(content_index=len(content) - 1, delta=chunk, partial=partial)
                await self._emit(MessageUpdateEvent(message=partial, assistant_message_event=delta))
                await anyio.sleep(DELTA_PAUSE_S)
        stop = "stop"
        error = None
        if aborted or self._abort.is_set():
            stop, error = "aborted", "Request was aborted"
        elif "error" in reply:
            stop, error = "error", reply["error"]
        elif reply.get("toolCalls"):
            for index, spec in enumerate(reply["toolCalls"]):
                content.append(
                    ToolCall(
                        id=f"call_{next(self._ids)}_{index}",
                        name=spec["name"],
                        arguments=spec.get("arguments", {}),
                    )
                )
            stop = "toolUse"
        final = partial.model_copy(
            update={
                "content": content,
                "stop_reason": stop,
                "error_message": error,
                "usage": _usage(1200, 340),
            }
        )
        self._append_message(final)
        await self._emit(MessageEndEvent(message=final))
        return final

    async def _execute(self, call: ToolCall, spec: dict[str, Any]) -> ToolResultMessage:
        await self._emit(
            ToolExecutionStartEvent(tool_call_id=call.id, tool_name=call.name, args=call.arguments)
        )
        is_error = False
        text = spec.get("result", "")
        if spec.get("until") == "steer":
            self._steered = anyio.Event()
            if self._steering:
                self._steered.set()
            update = ToolResult.text("waiting for steering...")
            await self._emit(
                ToolExecutionUpdateEvent(
                    tool_call_id=call.id, tool_name=call.name, args=call.arguments, partial_result=update
                )
            )
            async with anyio.create_task_group() as tg:

                async def stop_on(event: anyio.Event) -> None:
                    await event.wait()
                    tg.cancel_scope.cancel()

                tg.start_soon(stop_on, self._steered)
                tg.start_soon(stop_on, self._abort)
        if self._abort.is_set():
            is_error, text = True, "Command aborted"
        result = ToolResult(content=[TextContent(text=text)], details=spec.get("details"))
        await self._emit(
            ToolExecutionEndEvent(tool_call_id=call.id, tool_name=call.name, result=result, is_error=is_error)
        )
        message = ToolResultMessage(
            tool_call_id=call.id,
            tool_name=call.name,
            content=result.content,
            details=result.details,
            is_error=is_error,
        )
        await self._emit(MessageStartEvent(message=message))
        self._append_message(message)
        await self._emit(MessageEndEvent(message=message))
        return message

    async def abort(self) -> None:
        self._abort.set()
        await self._idle.wait()

    def clear_queue(self) -> tuple[list[str], list[str]]:
        steering, follow_up = self._steering, self._follow_up
        self._steering, self._follow_up = [], []
        return steering, follow_up

    async def run_user_bash(
        self, command: str, *, exclude_from_context: bool, on_output: Callable[[str], None] | None = None
    ) -> UserBashResult:
        process = await anyio.run_process(["bash", "-c", command], check=False, cwd=self._cwd)
        output = process.stdout.decode() + process.stderr.decode()
        if on_output is not None:
            on_output(output)
        return UserBashResult(output=output, exit_code=process.returncode)

    # -- commands ---------------------------------------------------------------------------

    async def compact(self, instructions: str | None = None) -> None:
        self.compactions.append(instructions)
        await self._emit(CompactionStartEvent(reason="manual"))
        tokens_before = 12_345
        summary = f"Summary of {len(self.messages)} messages" + (f" ({instructions})" if instructions else "")
        self._append({"type": "compaction", "summary": summary, "tokensBefore": tokens_before})
        await self._emit(
            CompactionEndEvent(reason="manual", result={"summary": summary, "tokens_before": tokens_before})
        )

    def available_models(self) -> list[Model]:
        return [FAKE_MODEL, OTHER_MODEL]

    async def set_model(self, ref: str) -> None:
        for model in self.available_models():
            if ref in (model.ref, model.id):
                self._model = model
                return
        raise ValueError(f"Model {ref!r} not found")

    def set_thinking_level(self, level: str) -> None:
        self._thinking = level

    async def new_session(self) -> SwitchResult:
        self._entries.clear()
        self._leaf = None
        self._name = None
        self._file = f"{self._cwd}/session-2.jsonl"
        return SwitchResult()

    def list_sessions(self) -> list[SessionListing]:
        return [SessionListing(path=self._file, name=self._name, first_message="hello", message_count=2)]

    async def resume(self, path: str) -> SwitchResult:
        return SwitchResult()

    def fork_points(self) -> list[ForkPoint]:
        return [
            ForkPoint(entry_id=entry["id"], text=entry["message"].content)
            for entry in self._path()
            if entry["type"] == "message" and isinstance(entry["message"], UserMessage)
        ]

    async def fork(self, entry_id: str) -> SwitchResult:
        parent, entry = self._entries[entry_id]
        self._leaf = parent
        self._file = f"{self._cwd}/session-fork.jsonl"
        return SwitchResult(editor_text=entry["message"].content)

    async def clone(self) -> SwitchResult:
        self._file = f"{self._cwd}/session-clone.jsonl"
        return SwitchResult()

    def set_session_name(self, name: str) -> None:
        self._name = name
        self._append({"type": "session_info", "name": name})

    def export_html(self, path: str | None = None) -> str:
        target = path or f"{self._cwd}/session.html"
        with open(target, "w") as handle:
            handle.write("<html></html>")
        return target

    def export_jsonl(self, path: str) -> str:
        target = f"{self._cwd}/{path}"
        with open(target, "w") as handle:
            handle.write("{}\n")
        return target

    async def reload(self) -> None:
        return None

    def setting(self, key: str) -> Any:
        node: Any = self.settings
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    def save_setting(self, key: str, value: Any) -> None:
        *parents, last = key.split(".")
        node = self.settings
        for part in parents:
            node = node.setdefault(part, {})
        if value is None:
            node.pop(last, None)
        else:
            node[last] = value
        self.saved_settings.append((key, value))

    def plugin_settings(self) -> list[Any]:
        return list(self.plugin_setting_rows)

    async def import_session(
        self, path: str, *, confirm_missing_cwd: Callable[[str, str], Awaitable[bool]]
    ) -> ImportResult:
        """Read the file's messages with the real session store (no copy: the fake has no
        session directory)."""
        import os

        from pi_host.session import SessionManager

        if not os.path.isfile(path):
            raise FileNotFoundError(f"File not found: {os.path.abspath(path)}")
        manager = SessionManager.open(path, cache_dir=False)
        missing = bool(manager.cwd) and not os.path.isdir(manager.cwd)
        if missing and not await confirm_missing_cwd(manager.cwd, self._cwd):
            return ImportResult(cancelled=True)
        self._entries.clear()
        self._leaf = None
        for message in manager.build_session_context().messages:
            self._append_message(message)
        self._file = os.path.abspath(path)
        return ImportResult(file=self._file)

    _TRUST_OPTIONS = (
        "Trust",
        "Trust (this session only)",
        "Do not trust",
        "Do not trust (this session only)",
    )

    def trust_state(self) -> TrustState:
        return TrustState(
            cwd=self._cwd,
            trusted=self.trusted,
            source="for this session only" if self.trust_log else "not decided yet",
            options=self._TRUST_OPTIONS,
        )

    async def set_trust(self, option: str) -> bool:
        self.trust_log.append(option)
        trusted = not option.startswith("Do not")
        changed, self.trusted = trusted != self.trusted, trusted
        return changed

    def tool_renderers(self) -> dict[str, ToolRenderer]:
        """The renderers of the plugins a runtime would have loaded: pi-bash's, for ``bash``."""
        renderers: dict[str, ToolRenderer] = {}
        import pi_bash

        pi_bash.pi_register_tool_renderers(lambda renderer: renderers.setdefault(renderer.tool, renderer))
        return renderers

    def plugin_commands(self) -> list[PluginCommand]:
        return [PluginCommand("greet", "Say hello through the UI bridge")]

    async def run_plugin_command(self, name: str, args: str) -> None:
        self.plugin_log.append((name, args))
        # Plugins may print or log; neither may tear the screen.
        print("stray print from a plugin")
        logging.getLogger("pi_host.plugin").warning('plugin "greet" failed in pi_fake: just a test')
        assert self.ui is not None
        choice = await self.ui.select("Pick a greeting", ["hello", "howdy"])
        self.ui.notify(f"greeting: {choice}")
        self.ui.set_status("greet", f"greeted {choice}")

    def _read_auth(self) -> AuthStorage:
        self.auth.reload()
        if self.auth.load_error is not None:
            raise RuntimeError(self.auth.load_error)
        return self.auth

    def login_providers(self) -> list[LoginProvider]:
        auth = self._read_auth()
        return [
            LoginProvider(id=p, name=name, logged_in=(auth.get(p) or {}).get("type") == "oauth")
            for p, name in LOGIN_PROVIDERS.items()
        ]

    async def login(self, attempt: LoginAttempt, pasted: str) -> LoginResult:
        auth = self._read_auth()
        credential = await anyio.to_thread.run_sync(lambda: exchange_code(attempt, pasted, env=auth.env))
        auth.set(attempt.provider, credential, strict=True)
        return LoginResult(saved_to=None if auth.path is None else str(auth.path))

    def stored_credentials(self) -> list[StoredCredential]:
        auth = self._read_auth()
        return [
            StoredCredential(provider=p, name=p, kind=str((auth.get(p) or {}).get("type")))
            for p in auth.providers()
        ]

    async def logout(self, provider: str) -> None:
        self._read_auth().remove(provider, strict=True)

    # -- helpers for in-process tests ------------------------------------------------------

    async def emit(self, event: Any) -> None:
        await self._emit(event)

    async def set_name_event(self, name: str) -> None:
        self.set_session_name(name)
        await self._emit(SessionInfoChangedEvent(name=name))

    async def set_thinking_event(self, level: str) -> None:
        self._thinking = level
        await self._emit(ThinkingLevelChangedEvent(level=level))


def _chunks(text: str, size: int = 6) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]
