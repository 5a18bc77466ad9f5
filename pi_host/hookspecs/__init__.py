"""Layer 2, the hook specifications: one module per lifecycle area (in progress)."""

from __future__ import annotations

from ._markers import hookimpl

__all__ = ["hookimpl"]
