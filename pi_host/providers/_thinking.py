"""Which thinking levels a model supports, and the nearest supported level to a requested one."""

from __future__ import annotations

from ._types import THINKING_LEVELS, Model, ThinkingLevel

__all__ = ["clamp_thinking_level", "supported_thinking_levels"]


def supported_thinking_levels(model: Model) -> list[ThinkingLevel]:
    """``["off"]`` for models without reasoning; otherwise every level its map does not set to
    ``null``, with ``xhigh`` only when the map names it (pi's ``getSupportedThinkingLevels``)."""
    if not model.reasoning:
        return ["off"]
    level_map = model.thinking_level_map or {}
    levels: list[ThinkingLevel] = []
    for level in THINKING_LEVELS:
        if level in level_map and level_map[level] is None:
            continue
        if level == "xhigh" and level not in level_map:
            continue
        levels.append(level)
    return levels


def clamp_thinking_level(model: Model, level: ThinkingLevel) -> ThinkingLevel:
    """``level`` if supported, else the nearest supported level, searching upward first."""
    available = supported_thinking_levels(model)
    if level in available:
        return level
    if level not in THINKING_LEVELS:
        return available[0] if available else "off"
    requested = THINKING_LEVELS.index(level)
    for candidate in THINKING_LEVELS[requested:]:
        if candidate in available:
            return candidate
    for candidate in reversed(THINKING_LEVELS[:requested]):
        if candidate in available:
            return candidate
    return available[0] if available else "off"
