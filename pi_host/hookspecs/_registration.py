"""What plugins register besides tools and providers: slash commands, command-line flags,
settings sections, abort scopes, and what extends the interactive screen (key bindings,
message and tool renderers)."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

if TYPE_CHECKING:
    from pi_host.messages import CustomMessage

    from ._context import CommandContext

__all__ = [
    "AbortScope",
    "Command",
    "Flag",
    "FlagType",
    "MessageRenderer",
    "RpcCommand",
    "SettingsSection",
    "Shortcut",
    "ToolCallView",
    "ToolRenderer",
]

Renderable: TypeAlias = Any
"""Anything rich can print: a ``str`` (shown as it is, ANSI colours included), a
``rich.text.Text``, a ``rich.table.Table``, a ``rich.console.Group`` of those …"""

FlagType: TypeAlias = Literal["boolean", "string"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_:.-]*$")
_SETTINGS_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
_SCOPE_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class Command:
    """A slash command (``/name args``), run before the prompt reaches ``pi_input``.

    :ivar name: the command name without the slash.
    :ivar description: one line for ``/`` completion and help.
    :ivar handler: ``async def handler(args: str, ctx: CommandContext) -> None``; ``args`` is
        the text after the name (stripped). Raising reports an error and leaves the session as it was.
    """

    name: str
    description: str
    handler: Callable[[str, CommandContext], Awaitable[None]]

    def __post_init__(self) -> None:
        name = self.name.removeprefix("/")
        if not _NAME.match(name):
            raise ValueError(f"invalid command name {self.name!r}: use letters, digits, '-', '_', ':' or '.'")
        object.__setattr__(self, "name", name)


@dataclass(frozen=True)
class RpcCommand:
    """A command of RPC mode (``{"type": name, ...}`` on stdin) that a plugin adds.

    :ivar name: the command's ``type``, in pi's snake_case (``rewind_list``). pi's own
        commands (``prompt``, ``fork`` …) cannot be replaced: theirs are looked up first.
    :ivar handler: ``async def handler(command: Mapping[str, Any], ctx: CommandContext) -> Any``;
        ``command`` is the whole record. What it returns becomes the response's ``data``
        (left out when ``None``); raising answers ``success: false`` with the message as
        ``error``, as pi does for a failing command.
    :ivar description: one line, for listings.
    """

    name: str
    handler: Callable[[Mapping[str, Any], CommandContext], Awaitable[Any]]
    description: str = ""

    def __post_init__(self) -> None:
        if not _SCOPE_NAME.match(self.name):
            raise ValueError(
                f"invalid RPC command name {self.name!r}: use lower case snake_case like 'my_command'"
            )


@dataclass(frozen=True)
class Flag:
    """A command-line flag a plugin adds (``--name`` or ``--name value``).

    :ivar name: the flag name without dashes.
    :ivar type: ``"boolean"`` (present or not) or ``"string"`` (takes a value).
    :ivar default: the value when the flag is not given.
    :ivar description: one line for ``--help``.
    """

    name: str
    type: FlagType = "boolean"
    default: bool | str | None = None
    description: str = ""

    def __post_init__(self) -> None:
        name = self.name.removeprefix("--")
        if not _NAME.match(name):
            raise ValueError(f"invalid flag name {self.name!r}: use letters, digits, '-' or '_'")
        if self.type not in ("boolean", "string"):
            raise ValueError(f'flag --{name}: type must be "boolean" or "string", not {self.type!r}')
        object.__setattr__(self, "name", name)


@dataclass(frozen=True)
class SettingsSection:
    """A top-level section of ``settings.json`` that a plugin owns (``"myPlugin": {...}``).

    The host reads the section from the global and project files (merged as every other
    key), validates it with ``model`` and hands the plugin the result through
    ``ctx.plugin_settings(model)``. A value that does not validate is reported once, naming
    the file and the key, and the model's default is used instead; the run goes on.

    :ivar key: the section's key in ``settings.json``, in the file's camelCase
        (``"branchSummary"``).
    :ivar model: a pydantic model of the section; give it camelCase aliases
        (``alias_generator=to_camel, populate_by_name=True``) so the file keeps pi's spelling
        while the plugin reads snake_case attributes. It must validate ``{}`` (every field
        has a default): that is the section when the file leaves it out.
    :ivar description: one line, shown where pi-host lists the settings plugins own.
    """

    key: str
    model: type[Any]
    description: str = ""

    def __post_init__(self) -> None:
        if not _SETTINGS_KEY.match(self.key):
            raise ValueError(f"invalid settings section {self.key!r}: use a camelCase key like 'myPlugin'")
        if not callable(getattr(self.model, "model_validate", None)):
            raise TypeError(f"settings section {self.key!r}: model must be a pydantic model class")


@dataclass(frozen=True)
class AbortScope:
    """A named kind of plugin work that the user or a client can abort on its own.

    A plugin declares the name at start-up and opens the scope around the work
    (``with ctx.abort_scope("retry") as signal:``). RPC ``abort_<name>`` (``abort_retry``)
    aborts the open scopes of that name; the session's abort (Escape, RPC ``abort``) aborts
    every open scope. An abort that arrives during a run before the scope opens is kept
    until the run ends, so a scope opened later in that run starts aborted.

    :ivar name: lowercase letters, digits and ``_`` (the ``<name>`` of ``abort_<name>``).
    :ivar description: one line for the documentation of the plugin.
    """

    name: str
    description: str = ""

    def __post_init__(self) -> None:
        if not _SCOPE_NAME.match(self.name):
            raise ValueError(f"invalid abort scope name {self.name!r}: use lowercase letters, digits and '_'")


@dataclass(frozen=True)
class Shortcut:
    """A key binding a plugin adds to the interactive editor (pi's ``registerShortcut``).

    :ivar key: pi's key notation: ``"ctrl+g"``, ``"alt+x"``, ``"shift+tab"``, ``"f6"``. A key
        the interactive mode already binds keeps its own action (the plugin's is not run).
    :ivar description: one line for ``/hotkeys``.
    :ivar handler: ``async def handler(ctx: CommandContext) -> None``, run in the background
        (the editor stays usable). Raising reports an error on the screen.
    """

    key: str
    description: str
    handler: Callable[[CommandContext], Awaitable[None]]

    def __post_init__(self) -> None:
        key = self.key.strip().lower()
        if not key or " " in key:
            raise ValueError(f"invalid shortcut key {self.key!r}: use pi's notation, such as 'ctrl+g'")
        object.__setattr__(self, "key", key)


@dataclass(frozen=True)
class MessageRenderer:
    """How the interactive screen shows the custom messages of one ``custom_type`` (those
    plugins send with ``ctx.send_message``); pi's ``registerMessageRenderer``.

    :ivar custom_type: the messages' ``custom_type``.
    :ivar render: ``render(message: CustomMessage, expanded: bool) -> Renderable | None``;
        ``expanded`` is the Ctrl+O state. ``None`` (or raising) shows the default: the type
        in brackets over the content as markdown.
    """

    custom_type: str
    render: Callable[[CustomMessage, bool], Renderable | None]


@dataclass(frozen=True)
class ToolCallView:
    """One tool call as the interactive screen shows it, handed to a :class:`ToolRenderer`.

    :ivar args: the call's arguments (a dict; partial while the model is still writing them).
    :ivar result_text: the result's text (``None`` until the tool reports something).
    :ivar details: the result's ``details``.
    :ivar partial: the tool is still running (``result_text`` is its latest update).
    :ivar elapsed: seconds since the tool started (``None`` before it starts).
    :ivar expanded: the Ctrl+O state: show everything rather than a preview.
    """

    tool_call_id: str
    name: str
    args: Any
    result_text: str | None
    details: Any
    is_error: bool
    partial: bool
    elapsed: float | None
    expanded: bool


@dataclass(frozen=True)
class ToolRenderer:
    """How the interactive screen draws the calls of one tool (pi's ``renderCall`` and
    ``renderResult``). The screen frames both in the call's panel, coloured by its state.

    :ivar tool: the tool's name.
    :ivar render_call: ``render_call(view: ToolCallView) -> Renderable | None``: the panel's
        first lines (what is being called).
    :ivar render_result: ``render_result(view: ToolCallView) -> Renderable | None``: what
        follows (the output, a preview of it while collapsed).

    Leave either out to keep the default for that part (``None`` returned shows nothing
    there); one that raises is reported once and the default is used.
    """

    tool: str
    render_call: Callable[[ToolCallView], Renderable | None] | None = None
    render_result: Callable[[ToolCallView], Renderable | None] | None = None
