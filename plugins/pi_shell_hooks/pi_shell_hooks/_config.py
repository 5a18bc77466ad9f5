"""The ``hooks`` settings section: which commands run for which events.

The shape is Claude Code's, so an existing ``hooks`` block can be pasted in::

    {"hooks": {
        "tool_call": [
            {"matcher": "bash|write", "hooks": [{"type": "command", "command": "~/bin/check.sh"}]}
        ],
        "PreToolUse": [ ... ]          // Claude Code's event names work too
    }}

Each entry may also give ``command`` directly (``{"matcher": "bash", "command": "..."}``), or
``args`` (a list: the program and its arguments, run without a shell). ``timeout`` is in
seconds (default 60). Global hooks come first, then the project's (only when the project is
trusted). ``"disableAllHooks": true`` in the settings turns every hook off.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeAlias, get_args

from pi_host import SettingsManager, agent_dir

from ._runner import DEFAULT_TIMEOUT, shell_argv

__all__ = ["EVENTS", "EVENT_ALIASES", "Event", "HookCommand", "HookConfig", "load_config"]

Event: TypeAlias = Literal[
    "input",
    "before_agent_start",
    "tool_call",
    "tool_result",
    "turn_end",
    "agent_end",
    "session_start",
    "session_shutdown",
    "session_before_compact",
]

#: Every event a hook can run for, in :data:`Event`'s order (read from it, so the two agree).
EVENTS: tuple[Event, ...] = get_args(Event)

EVENT_ALIASES: dict[str, Event] = {
    "UserPromptSubmit": "input",
    "PreToolUse": "tool_call",
    "PostToolUse": "tool_result",
    "Stop": "agent_end",
    "SessionStart": "session_start",
    "SessionEnd": "session_shutdown",
    "PreCompact": "session_before_compact",
}
"""Claude Code's event names and the pi event each one maps to."""


@dataclass(frozen=True)
class HookCommand:
    """One configured command.

    :ivar event: the pi event it runs for.
    :ivar configured_as: the event name as written in settings (sent as ``hook_event_name``).
    :ivar argv: what runs (a shell command is ``[bash, -c, command]``).
    :ivar label: how messages name the hook (the command text).
    :ivar matcher: a regular expression over the tool name (tool events), the reason
        (session events) or ``None`` for every call.
    :ivar timeout: seconds before the command's process group is killed.
    :ivar scope: ``global`` or ``project``.
    """

    event: Event
    configured_as: str
    argv: tuple[str, ...]
    label: str
    matcher: re.Pattern[str] | None = None
    timeout: float = DEFAULT_TIMEOUT
    scope: Literal["global", "project"] = "global"

    def matches(self, subject: str | None) -> bool:
        if self.matcher is None or subject is None:
            return True
        return self.matcher.fullmatch(subject) is not None


@dataclass
class HookConfig:
    """Every configured hook command, by event, and the problems found reading them."""

    commands: dict[Event, list[HookCommand]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def for_event(self, event: Event, subject: str | None = None) -> list[HookCommand]:
        return [command for command in self.commands.get(event, []) if command.matches(subject)]

    def __bool__(self) -> bool:
        return any(self.commands.values())


def _matcher(value: Any, where: str, problems: list[str]) -> re.Pattern[str] | None:
    if value is None or value in ("", "*"):
        return None
    if not isinstance(value, str):
        problems.append(f"{where}: matcher must be a string (a tool name or a regular expression)")
        return None
    try:
        # Claude Code's tool names are capitalised (Bash, Write); pi's are not.
        return re.compile(value, re.IGNORECASE)
    except re.error as exc:
        problems.append(
            f"{where}: matcher {value!r} is not a regular expression ({exc}); matching it literally"
        )
        return re.compile(re.escape(value), re.IGNORECASE)


def _command(
    spec: Any, event: Event, name: str, matcher: re.Pattern[str] | None, scope: Literal["global", "project"],
    where: str, problems: list[str],
) -> HookCommand | None:  # fmt: skip
    if not isinstance(spec, Mapping):
        problems.append(f"{where}: a hook must be an object with a command")
        return None
    kind = spec.get("type", "command")
    if kind != "command":
        problems.append(f'{where}: hook type {kind!r} is not supported; only "command" hooks run')
        return None
    timeout = spec.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        problems.append(f"{where}: timeout must be a positive number of seconds; using {DEFAULT_TIMEOUT:g}")
        timeout = DEFAULT_TIMEOUT
    args = spec.get("args")
    command = spec.get("command")
    if isinstance(args, list) and args and all(isinstance(a, str) for a in args):
        argv = tuple(os.path.expanduser(a) if i == 0 else a for i, a in enumerate(args))
        label = " ".join(args)
    elif isinstance(command, str) and command.strip():
        argv, label = tuple(shell_argv(command)), command
    else:
        problems.append(f'{where}: give "command" (a shell command) or "args" (a list of strings)')
        return None
    return HookCommand(
        event=event,
        configured_as=name,
        argv=argv,
        label=label,
        matcher=matcher,
        timeout=float(timeout),
        scope=scope,
    )


def parse_hooks(section: Any, scope: Literal["global", "project"], source: str, config: HookConfig) -> None:
    """Add the commands of one settings file's ``hooks`` section to ``config``."""
    problems = config.problems
    if not isinstance(section, Mapping):
        problems.append(f"{source}: hooks must be an object mapping event names to lists")
        return
    for name, entries in section.items():
        event = EVENT_ALIASES.get(name, name)
        if event not in EVENTS:
            known = ", ".join([*EVENTS, *EVENT_ALIASES])
            problems.append(f"{source}: hooks.{name} is not an event pi-shell-hooks runs; use one of {known}")
            continue
        if not isinstance(entries, list):
            problems.append(f"{source}: hooks.{name} must be a list of {{matcher, hooks}} entries")
            continue
        for index, entry in enumerate(entries):
            where = f"{source}: hooks.{name}[{index}]"
            if not isinstance(entry, Mapping):
                problems.append(f"{where}: must be an object")
                continue
            matcher = _matcher(entry.get("matcher"), where, problems)
            specs = entry.get("hooks", [entry] if ("command" in entry or "args" in entry) else [])
            if not isinstance(specs, list) or not specs:
                problems.append(f"{where}: has no hooks to run")
                continue
            for position, spec in enumerate(specs):
                command = _command(spec, event, name, matcher, scope, f"{where}.hooks[{position}]", problems)
                if command is not None:
                    config.commands.setdefault(event, []).append(command)


def load_config(cwd: str, *, trusted: bool, root: str | os.PathLike[str] | None = None) -> HookConfig:
    """Read ``hooks`` from the global settings and, for a trusted project, the project's."""
    manager = SettingsManager.load(
        cwd, Path(root) if root is not None else agent_dir(), project_trusted=trusted
    )
    config = HookConfig()
    files: list[tuple[Literal["global", "project"], dict[str, Any], str]] = [
        ("global", manager.raw("global"), str(manager.global_path))
    ]
    if trusted:
        files.append(("project", manager.raw("project"), str(manager.project_path)))
    if any(data.get("disableAllHooks") is True for _, data, _ in files):
        return config
    for scope, data, source in files:
        if "hooks" in data:
            parse_hooks(data["hooks"], scope, source, config)
    return config
