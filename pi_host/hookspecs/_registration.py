"""What plugins register besides tools and providers: slash commands and command-line flags."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias

if TYPE_CHECKING:
    from ._context import CommandContext

__all__ = ["Command", "Flag", "FlagType"]

FlagType: TypeAlias = Literal["boolean", "string"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_:.-]*$")


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
