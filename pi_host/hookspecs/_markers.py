"""The pluggy markers of the ``pi`` project."""

from __future__ import annotations

import pluggy

__all__ = ["PROJECT_NAME", "hookimpl", "hookspec_marker"]

PROJECT_NAME = "pi"

hookimpl = pluggy.HookimplMarker(PROJECT_NAME)
"""Marks a plugin function as a hook implementation: ``@hookimpl`` or ``@hookimpl(tryfirst=True)``."""

hookspec_marker = pluggy.HookspecMarker(PROJECT_NAME)
