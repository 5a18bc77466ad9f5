"""Stash keys the session shares with plugins (the retry plugin), in a module light to import."""

from __future__ import annotations

from pi_host.hookspecs._stash import StashKey

__all__ = ["ABORT_REQUESTED", "RETRY_ATTEMPT"]

RETRY_ATTEMPT: StashKey[int] = StashKey()
"""The retry plugin's current attempt (the session reports ``auto_retry_end`` on success)."""
ABORT_REQUESTED: StashKey[bool] = StashKey()
