"""pi-mcp's hooks: the ``mcp`` settings section, ``/mcp``, and the servers' session lifecycle.

Nothing of the MCP SDK is imported until a session has servers configured, so an
installed but unused pi-mcp costs pi-host's start-up nothing.
"""

from __future__ import annotations

import logging
import shlex
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pi_host import SettingsSection, agent_dir, hookimpl
from pi_host.hookspecs import Command, StashKey

from ._config import load_config
from ._settings import McpSettings

if TYPE_CHECKING:
    from pi_host.hookspecs import CommandContext, PluginContext

    from ._manager import McpManager

__all__ = [
    "manager_of",
    "pi_before_agent_start",
    "pi_register_commands",
    "pi_register_settings",
    "pi_session_shutdown",
    "pi_session_start",
]

logger = logging.getLogger("pi_mcp")

_MANAGER = StashKey["McpManager"]()


def _pop(ctx: PluginContext, key: StashKey[Any]) -> Any:
    value = ctx.stash.get(key, None)
    if key in ctx.stash:
        del ctx.stash[key]
    return value


def manager_of(ctx: PluginContext) -> McpManager | None:
    """The session's MCP manager, or ``None`` when no server is configured."""
    return ctx.stash.get(_MANAGER, None)


def _parent_manager(ctx: PluginContext) -> McpManager | None:
    """The MCP manager of the session that made this one its child (a sub-agent's parent),
    whose running servers this session uses; ``None`` in a session that is no child."""
    parent = ctx.parent_stash
    return parent.get(_MANAGER, None) if parent is not None else None


def _say(ctx: PluginContext, text: str, level: str = "warning") -> None:
    """A notice the user sees in every mode (print and JSON have no UI: stderr)."""
    logger.info("%s", text)
    if ctx.mode in ("print", "json"):
        print(f"pi-mcp: {text}", file=sys.stderr, flush=True)
    else:
        ctx.ui.notify(f"pi-mcp: {text}", "warning" if level == "warning" else "info")


@hookimpl
def pi_register_settings(register: Callable[[SettingsSection], None]) -> None:
    """``"mcp": {"servers": {...}, "startup": "lazy", "toolTimeoutMs": 30000, ...}``."""
    register(SettingsSection("mcp", McpSettings, "MCP servers and how pi-mcp runs them"))


@hookimpl
def pi_register_commands(register: Callable[[Command], None]) -> None:
    """``/mcp`` lists the servers; ``/mcp restart [name]`` starts them again."""
    register(
        Command(
            name="mcp", description="MCP servers: state, tools, errors (restart [name])", handler=_mcp_command
        )
    )


async def _mcp_command(args: str, ctx: CommandContext) -> None:
    manager = manager_of(ctx)
    if manager is None:
        ctx.ui.notify("No MCP servers configured (add them to .mcp.json or <agent dir>/mcp.json).", "info")
        return
    words = args.split()
    if words and words[0] == "restart":
        names = words[1:] or list(manager.connections)
        unknown = [n for n in names if n not in manager.connections]
        if unknown:
            ctx.ui.notify(
                f"No MCP server named {', '.join(unknown)}; servers: {', '.join(manager.connections)}",
                "error",
            )
            return
        shared = [n for n in names if n in manager.borrowed]
        if shared:
            # The parent owns them, and its other sub-agents may be using them right now.
            ctx.ui.notify(
                f"MCP server {', '.join(shared)} is the parent session's, shared with this one: "
                "restart it from the parent session",
                "warning",
            )
            names = [n for n in names if n not in manager.borrowed]
        for name in names:
            await manager.connections[name].stop()
            manager.reported.pop(name, None)
        await manager.start_all(names, force=True)
        await _start_and_register(ctx, manager)
    elif words:
        ctx.ui.notify(f"Unknown /mcp argument {words[0]!r}: use /mcp or /mcp restart [name]", "error")
        return
    ctx.ui.notify(manager.report(), "info")


@hookimpl
async def pi_session_start(reason: str, previous_session_file: str | None, ctx: PluginContext) -> None:
    """Read the configuration; with ``"startup": "eager"``, start the servers in the background.

    In a sub-agent's session, the servers the parent session runs are used, not started again.
    """
    settings = ctx.plugin_settings(McpSettings)
    loaded = load_config(
        agent_dir=agent_dir(),
        cwd=ctx.cwd,
        trusted=ctx.is_project_trusted(),
        settings_servers=settings.servers,
    )
    for problem in loaded.problems:
        _say(ctx, f"config error: {problem}")
    for path in loaded.untrusted_files:
        _say(
            ctx,
            f"ignored {path}: the project is not trusted, so its MCP servers do not start "
            "(trust it with /trust or --approve)",
        )
    if not loaded.servers:
        return
    from ._manager import McpManager  # the MCP SDK loads only when servers are configured

    manager = McpManager(config=loaded, settings=settings, cwd=ctx.cwd, parent=_parent_manager(ctx))
    ctx.stash[_MANAGER] = manager
    if settings.startup == "eager":
        manager.start_in_background()


async def _start_and_register(ctx: PluginContext, manager: McpManager) -> None:
    starting, manager.starting = manager.starting, None
    if starting is not None:
        await starting
    if manager.startable():
        # Every prompt is a use: a server that failed to start is tried again once its
        # backoff has passed (mcp.restartBackoffMs), a crashed one at once.
        await manager.start_all()
    manager.report_failures(ctx)
    # From now on a server's changed tool list (a restart on a use, a change it announced)
    # updates the session's tools at once; until now only the first prompt's start decides.
    manager.ctx = ctx
    manager.sync(ctx)
    _register_prompts(ctx, manager)


@hookimpl
async def pi_before_agent_start(
    prompt: str, images: Any, system_prompt: str, system_prompt_options: Any, ctx: PluginContext
) -> None:
    """Before the first request: every server started (or reported) and its tools registered."""
    manager = manager_of(ctx)
    if manager is not None:
        await _start_and_register(ctx, manager)


@hookimpl
async def pi_session_shutdown(reason: str, target_session_file: str | None, ctx: PluginContext) -> None:
    """Stop every server the session started; their processes are gone when this returns.

    A sub-agent's session leaves its parent's servers running.
    """
    manager = _pop(ctx, _MANAGER)
    if manager is not None:
        await manager.settle_background_start()
        manager.ctx = None
        # The tools call this manager's servers: a next session (/new) registers its own.
        manager.unregister_all(ctx)
        await manager.stop_all()


# -- prompts as slash commands --------------------------------------------------------------------


def _register_prompts(ctx: PluginContext, manager: McpManager) -> None:
    from ._tools import tool_name

    for connection in manager.connections.values():
        for prompt in connection.prompts:
            name = tool_name(connection.name, prompt.name)
            if name in manager.commands:
                continue
            manager.commands.add(name)
            ctx.register_command(
                Command(
                    name=name,
                    description=prompt.description or f"MCP prompt {prompt.name} of {connection.name}",
                    handler=_prompt_handler(manager, connection.name, prompt.name),
                )
            )


def prompt_arguments(declared: list[str], text: str) -> dict[str, str]:
    """``key=value`` words, else positional words in the declared order (the last takes the rest)."""
    try:
        words = shlex.split(text)
    except ValueError:
        words = text.split()
    if words and all("=" in w for w in words):
        return dict(w.split("=", 1) for w in words)
    values: dict[str, str] = {}
    for index, name in enumerate(declared):
        if index >= len(words):
            break
        values[name] = " ".join(words[index:]) if index == len(declared) - 1 else words[index]
    return values


def _prompt_handler(manager: McpManager, server: str, prompt: str) -> Any:
    async def handler(args: str, ctx: CommandContext) -> None:
        import mcp.types as mt

        from ._connection import McpServerError
        from ._settings import tool_timeout_seconds

        connection = manager.connections[server]
        declared = next((p for p in connection.prompts if p.name == prompt), None)
        names = [a.name for a in (declared.arguments or [])] if declared else []
        missing = [
            a.name
            for a in ((declared.arguments or []) if declared else [])
            if a.required and a.name not in prompt_arguments(names, args)
        ]
        if missing:
            ctx.ui.notify(f"/{connection.name} prompt {prompt} needs: {', '.join(missing)}", "error")
            return
        timeout, source = tool_timeout_seconds(manager.settings)
        try:
            result = await connection.request(
                f'the prompt "{prompt}"',
                lambda s: s.get_prompt(prompt, prompt_arguments(names, args)),
                timeout=timeout,
                timeout_source=source,
            )
        except McpServerError as exc:
            ctx.ui.notify(str(exc), "error")
            return
        texts = [m.content.text for m in result.messages if isinstance(m.content, mt.TextContent)]
        ctx.send_user_message("\n\n".join(texts))

    return handler
