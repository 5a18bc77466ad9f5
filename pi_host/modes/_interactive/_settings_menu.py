"""``/settings``: pi's settings list, limited to the settings pi-host acts on.

Each row is one settings.json key under pi's name. Enter moves a setting to its next value
(the thinking level opens a list instead, as in pi); the value applies to the running session
at once and is saved to the user's settings.json. pi's other rows (images, transport, theme,
editor padding …) are left out because pi-host does not read those keys.

After pi's rows come the values of the settings sections plugins declare
(``pi_register_settings``), one row per key: a boolean or a choice of words steps as pi's rows
do, any other value is shown read-only (settings.json changes it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._app import InteractiveApp

__all__ = ["SETTING_ITEMS", "PluginSetting", "SettingItem", "run_settings_menu", "setting_items"]

_BOOL = ("true", "false")


@dataclass(frozen=True)
class SettingItem:
    """One row of ``/settings``.

    :param key: the settings.json key (dotted for nested objects), as pi names it.
    :param values: the values Enter steps through, as shown; ``true``/``false`` are saved as
        JSON booleans.
    :param default: the value in force when no settings file sets the key.
    """

    key: str
    label: str
    description: str
    values: tuple[str, ...]
    default: str


SETTING_ITEMS: tuple[SettingItem, ...] = (
    SettingItem(
        "compaction.enabled",
        "Auto-compact",
        "Summarize older messages by itself when the context window fills up",
        _BOOL,
        "true",
    ),
    SettingItem(
        "steeringMode",
        "Steering mode",
        "Messages sent while the agent works: one per turn, or all together",
        ("one-at-a-time", "all"),
        "one-at-a-time",
    ),
    SettingItem(
        "followUpMode",
        "Follow-up mode",
        "Follow-ups queued with Alt+Enter: one per run, or all together",
        ("one-at-a-time", "all"),
        "one-at-a-time",
    ),
    SettingItem(
        "hideThinkingBlock",
        "Hide thinking",
        "Show the model's thinking as a one-line label (Ctrl+T switches for now)",
        _BOOL,
        "false",
    ),
    SettingItem(
        "quietStartup",
        "Quiet startup",
        "Leave out the header with the key hints when pi-host starts (next start)",
        _BOOL,
        "false",
    ),
    SettingItem(
        "doubleEscapeAction",
        "Double-escape action",
        "What Escape pressed twice on an empty editor opens",
        ("tree", "fork", "none"),
        "tree",
    ),
    SettingItem(
        "defaultThinkingLevel",
        "Thinking level",
        "How much thinking-capable models reason; also the level new sessions start with",
        ("off", "minimal", "low", "medium", "high", "xhigh"),
        "medium",
    ),
)

_THINKING_KEY = "defaultThinkingLevel"


@dataclass(frozen=True)
class PluginSetting:
    """One value of a plugin's settings section, for a row of ``/settings``.

    :param key: the dotted settings.json key (``"myPlugin.enabled"``).
    :param plugin: the plugin that declared the section.
    :param description: what the value does (the field's description, else the section's).
    :param type: the value's type in words (``boolean``, ``integer`` …).
    :param default: the model's default, as shown (``true``, ``3``, ``null``).
    :param choices: the values Enter steps through; empty for a read-only row.
    """

    key: str
    plugin: str
    description: str
    type: str
    default: str
    choices: tuple[str, ...] = ()


def setting_items(app: InteractiveApp) -> list[SettingItem]:
    """pi's rows, then a row per plugin setting that none of pi's rows already shows."""
    builtin = {item.key for item in SETTING_ITEMS}
    plugin_rows = app._safe(lambda: list(app.session.plugin_settings()), [])
    extra = [
        SettingItem(
            row.key,
            row.key,
            f"{row.description + ' — ' if row.description else ''}{row.type}, from plugin {row.plugin}"
            + ("" if row.choices else " (edit settings.json to change it)"),
            row.choices,
            row.default,
        )
        for row in plugin_rows
        if row.key not in builtin
    ]
    return [*SETTING_ITEMS, *extra]


def _shown(value: Any, default: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        import json

        return json.dumps(value)
    return default if value is None else str(value)


def _stored(item: SettingItem, shown: str) -> Any:
    return shown == "true" if item.values == _BOOL else shown


def current_value(app: InteractiveApp, item: SettingItem) -> str:
    """The value ``item`` shows: the session's own state where it has one, else the settings."""
    if item.key == _THINKING_KEY:
        return str(app._safe(lambda: app.session.thinking_level, item.default))
    if item.key == "hideThinkingBlock":
        return _shown(app.options.hide_thinking, item.default)
    if item.key == "compaction.enabled":
        return _shown(bool(app._safe(lambda: app.session.auto_compaction_enabled, True)), item.default)
    return _shown(app._safe(lambda: app.session.setting(item.key), None), item.default)


def _next(values: Sequence[str], current: str) -> str:
    return values[(values.index(current) + 1) % len(values)] if current in values else values[0]


async def _choose_thinking_level(app: InteractiveApp, current: str) -> str | None:
    levels = list(app.commands.thinking_levels())
    index = await app.select(
        "Thinking level", levels, initial=levels.index(current) if current in levels else 0
    )
    return None if index is None else levels[index]


def apply_setting(app: InteractiveApp, item: SettingItem, shown: str) -> None:
    """Apply ``shown`` to the session and the screen, then save it; a failed save is shown."""
    if item.key == _THINKING_KEY:
        try:
            app.session.set_thinking_level(shown)
        except Exception as exc:
            app.error(str(exc))
            return
    if item.key == "hideThinkingBlock":
        app.options.hide_thinking = shown == "true"
        app.redraw_transcript()
    try:
        app.session.save_setting(item.key, _stored(item, shown))
    except Exception as exc:
        # The session uses the new value; only the file kept its old one.
        app.error(str(exc))


async def run_settings_menu(app: InteractiveApp) -> None:
    """Show the list until Esc, applying each change as it is made."""
    selected = 0
    items = setting_items(app)
    width = max(len(item.label) for item in items) + 2
    while True:
        rows = [f"{item.label.ljust(width)}{current_value(app, item)}" for item in items]
        index = await app.select(
            "Settings",
            rows,
            initial=selected,
            filterable=False,
            details=[item.description for item in items],
        )
        if index is None:
            return
        selected = index
        item = items[index]
        current = current_value(app, item)
        if not item.values:
            app.notice(f"{item.key} is read-only here: change it in settings.json")
            continue
        if item.key == _THINKING_KEY:
            chosen = await _choose_thinking_level(app, current)
            if chosen is None:
                continue
        else:
            chosen = _next(item.values, current)
        apply_setting(app, item, chosen)
