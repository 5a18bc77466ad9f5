"""A settings change made during a session (``/settings``, ``/scoped-models``): live, then saved.

The new value takes effect in the running session at once, even where the project's settings
set the same key (the user chose it for this session), and is written to the user's global
settings.json, pi's file, with every other key of the file kept. A file that cannot be parsed
is not written; the error says which file, why, and what to do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pi_host.runtime import SessionError

if TYPE_CHECKING:
    from pi_host.runtime import AgentSession

__all__ = ["change_setting"]


def _nested(key: str, value: Any) -> dict[str, Any]:
    """``{"a": {"b": value}}`` for ``"a.b"``."""
    data: dict[str, Any] = {}
    node = data
    parts = key.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value
    return data


def change_setting(session: AgentSession, key: str, value: Any) -> None:
    """Set the settings.json ``key`` (dotted camelCase) to ``value`` (``None`` removes it).

    :raises SessionError: the change applies, but the settings file was not written.
    """
    manager = session.settings_manager
    saved = True
    if manager is None:
        from pi_host.resources import Settings
        from pi_host.resources._settings import deep_merge

        current = session.settings or Settings.model_construct()
        merged = deep_merge(current.model_dump(mode="json", by_alias=True), _nested(key, value))
        session.settings = Settings.model_validate(merged)
    else:
        manager.apply_overrides(_nested(key, value))
        saved = manager.set(key, value)
        session.settings = manager.settings
    # What the agent was built with, it keeps until told.
    if key == "steeringMode" and value in ("all", "one-at-a-time"):
        session.agent.steering_mode = value
    elif key == "followUpMode" and value in ("all", "one-at-a-time"):
        session.agent.follow_up_mode = value
    if saved or manager is None:
        return
    raise SessionError(
        f"{key} applies to this session but was not saved to {manager.global_path}: "
        f"{manager.save_error or 'it could not be written'}. Fix the file, then change the setting again."
    )
