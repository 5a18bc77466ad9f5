"""The agent directory, where ``models.json`` and ``auth.json`` live (see :mod:`pi_host._paths`)."""

from __future__ import annotations

from pi_host._paths import AGENT_DIR_ENV, agent_dir, expand_home

__all__ = ["AGENT_DIR_ENV", "agent_dir", "expand_home"]
