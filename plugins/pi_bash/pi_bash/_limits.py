"""Defaults the tool definition and the process runner share (kept apart so that defining the
tool does not import the runner)."""

from __future__ import annotations

from typing import Literal

__all__ = ["DEFAULT_KILL_GRACE", "BackgroundPolicy"]

BackgroundPolicy = Literal["keep", "kill"]

DEFAULT_KILL_GRACE = 0.5
"""Seconds between SIGTERM and SIGKILL when a command group is stopped."""
