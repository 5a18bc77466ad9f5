"""What ``pi_configure`` receives: the host's configuration once settings and flags are known."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pi_host._frozen import deep_freeze
from pi_host.hookspecs import Mode, Stash

__all__ = ["SessionHostConfig"]


@dataclass(frozen=True)
class SessionHostConfig:
    """Implements :class:`pi_host.hookspecs.HostConfig`.

    :ivar settings: the merged ``settings.json`` (global, then project when trusted), in pi's
        camelCase keys, unknown keys included, so a plugin reads its own section; read-only
        all the way down, like every value plugins receive.
    """

    cwd: str
    mode: Mode
    settings: dict[str, Any]
    stash: Stash = field(default_factory=Stash)
    flags: dict[str, bool | str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # One plugin's pi_configure must not change the settings the next one reads.
        object.__setattr__(self, "settings", deep_freeze(self.settings))
        object.__setattr__(self, "flags", deep_freeze(self.flags))

    def get_flag(self, name: str) -> bool | str | None:
        return self.flags.get(name)
