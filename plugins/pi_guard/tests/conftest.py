"""Fixtures for pi-guard: the pi-host testing kit, and helpers to run ``pi-host`` itself."""

from __future__ import annotations
