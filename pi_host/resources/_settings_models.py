"""The typed settings: pydantic models of ``settings.json``, with pi's keys and defaults.

A module of their own so that reading settings files (:class:`SettingsManager`) does not
create them: ``pi-host --help`` asks the settings for ``plugins`` alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from pi_host._frozen import deep_freeze, empty_frozen_dict, empty_frozen_list
from pi_host._frozen_fields import FrozenJson, FrozenSeq

from ._paths import expand_home
from ._settings import DEFAULT_PROJECT_TRUST, DefaultProjectTrust, QueueMode, SettingsScope, ThinkingLevel

__all__ = [
    "ImageSettings",
    "MarkdownSettings",
    "PluginSettings",
    "Settings",
    "SettingsIssue",
    "TerminalSettings",
    "ThinkingBudgets",
    "WarningSettings",
]


class _Section(BaseModel):
    """Base for settings objects: pi's camelCase keys, frozen, unknown keys kept.

    Sections default through ``model_construct`` (what validating ``{}`` would give, checked
    in tests/test_startup.py): a default made by calling the class would build each
    section's own validator, besides the one the settings model builds for all of them.
    """

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, extra="allow", defer_build=True
    )

    @model_validator(mode="after")
    def _freeze_unknown_keys(self) -> Self:
        # The sections plugins own arrive as unknown keys: read-only too, so that no plugin
        # changes another's section (or its own for everyone) through ctx.settings.
        extra = self.model_extra
        if extra:
            for key, value in extra.items():
                extra[key] = deep_freeze(value)
        return self

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """pydantic's copy, with the updated values made read-only (``update`` is not validated)."""
        if update:
            update = {key: deep_freeze(value) for key, value in update.items()}
        return super().model_copy(update=update, deep=deep)


class TerminalSettings(_Section):
    """``terminal``: interactive-mode display."""

    show_images: bool = True
    image_width_cells: int = 60
    clear_on_shrink: bool = False
    show_terminal_progress: bool = False


class ImageSettings(_Section):
    """``images``: what happens to images sent to the model."""

    auto_resize: bool = True
    block_images: bool = False


class ThinkingBudgets(_Section):
    """``thinkingBudgets``: token budgets per thinking level (provider defaults when unset)."""

    minimal: int | None = None
    low: int | None = None
    medium: int | None = None
    high: int | None = None


class MarkdownSettings(_Section):
    """``markdown``: rendering of Markdown in the terminal."""

    code_block_indent: str = "  "


class WarningSettings(_Section):
    """``warnings``: optional warnings."""

    anthropic_extra_usage: bool = True


class PluginSettings(_Section):
    """``plugins`` (pi-host only): plugins to allow or disable by name, like ``--no-plugin NAME``.

    :ivar prefer: which plugin wins a name two plugins offer, by kind:
        ``{"tools": {"read": "tools_fs"}, "commands": {...}, "providers": {...}}``.
    :ivar hook_timeout: ``hookTimeout``, seconds one hook implementation may take (``0``: no
        limit); ``PI_HOST_HOOK_TIMEOUT`` beats it.
    """

    enable: FrozenSeq[str] = Field(default_factory=empty_frozen_list)
    disable: FrozenSeq[str] = Field(default_factory=empty_frozen_list)
    prefer: FrozenJson[dict[str, dict[str, str]]] = Field(default_factory=empty_frozen_dict)
    hook_timeout: float | None = None


class Settings(_Section):
    """The effective settings, typed, with pi's keys and defaults.

    Attribute names are snake_case (``settings.markdown.code_block_indent``); the file uses pi's
    camelCase (``"markdown": {"codeBlockIndent": …}``). Keys this model does not know (the
    sections plugins own) are kept in ``model_extra``;
    a plugin reads its section validated with ``ctx.plugin_settings(Model)`` (see
    ``pi_register_settings``), anyone else with :meth:`SettingsManager.get`.
    """

    # Model
    default_provider: str | None = None
    default_model: str | None = None
    default_thinking_level: ThinkingLevel | None = None
    hide_thinking_block: bool = False
    thinking_budgets: ThinkingBudgets | None = None
    enabled_models: FrozenSeq[str] | None = None
    # UI
    theme: str | None = None
    quiet_startup: bool = False
    default_project_trust: DefaultProjectTrust = DEFAULT_PROJECT_TRUST
    collapse_changelog: bool = False
    # pi's three, or the name of a plugin's slash command.
    double_escape_action: Literal["tree", "fork", "none"] | str = "tree"
    tree_filter_mode: Literal["default", "no-tools", "user-only", "labeled-only", "all"] = "default"
    editor_padding_x: int = 0
    autocomplete_max_visible: int = 5
    show_hardware_cursor: bool = False
    markdown: MarkdownSettings = Field(default_factory=MarkdownSettings.model_construct)
    warnings: WarningSettings = Field(default_factory=WarningSettings.model_construct)
    last_changelog_version: str | None = None
    # Network and delivery
    http_proxy: str | None = None
    transport: Literal["sse", "websocket", "auto"] = "auto"
    http_idle_timeout_ms: int = 300000
    websocket_connect_timeout_ms: int = 15000
    steering_mode: QueueMode = "one-at-a-time"
    follow_up_mode: QueueMode = "one-at-a-time"
    # Terminal and images
    terminal: TerminalSettings = Field(default_factory=TerminalSettings.model_construct)
    images: ImageSettings = Field(default_factory=ImageSettings.model_construct)
    # Shell
    shell_path: str | None = None
    shell_command_prefix: str | None = None
    npm_command: FrozenSeq[str] | None = None
    # Sessions
    session_dir: str | None = None
    session_store: str | None = None
    # Resources
    packages: FrozenJson[list[str | dict[str, Any]]] = Field(default_factory=empty_frozen_list)
    extensions: FrozenSeq[str] = Field(default_factory=empty_frozen_list)
    skills: FrozenSeq[str] = Field(default_factory=empty_frozen_list)
    prompts: FrozenSeq[str] = Field(default_factory=empty_frozen_list)
    themes: FrozenSeq[str] = Field(default_factory=empty_frozen_list)
    enable_skill_commands: bool = True
    # pi-host
    plugins: PluginSettings = Field(default_factory=PluginSettings.model_construct)

    def expanded_session_dir(self) -> str | None:
        """``sessionDir`` with a leading ``~`` expanded (relative paths are left to the caller)."""
        return expand_home(self.session_dir) if self.session_dir else None


class SettingsIssue(BaseModel):
    """A problem with a settings file: reported, never raised.

    :ivar scope: ``"global"`` or ``"project"``.
    :ivar path: the settings file.
    :ivar message: what is wrong and what pi-host did about it.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    scope: SettingsScope
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"
