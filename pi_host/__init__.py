"""pi-host: a plugin-centric Python framework for AI coding agents (public API in progress)."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
