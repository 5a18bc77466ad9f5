"""``settings.json``: global (agent directory) and project (``<cwd>/.pi``), in pi's format.

Project settings override global ones, nested objects merged key by key. The project file is
read only for a trusted project: a cloned repository must not be able to change the model,
the shell or the resource paths before the user has agreed to it.

Reading never fails: a file that is not valid JSON is reported (naming the file and the
position) and ignored, and a value of the wrong type is reported and replaced by its default.
Writing changes only the keys asked for, re-reading the file first, so keys added by hand, by
pi or by plugins survive, and a file that does not parse is never overwritten.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from ._jsonfile import file_lock, write_json_atomic
from ._paths import project_config_dir

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ._settings_models import Settings, SettingsIssue

__all__ = [
    "DEFAULT_PROJECT_TRUST",
    "DefaultProjectTrust",
    "QueueMode",
    "SettingsManager",
    "SettingsScope",
    "ThinkingLevel",
    "deep_merge",
    "validate_section",
]

_M = TypeVar("_M", bound="BaseModel")

SettingsScope = Literal["global", "project"]
ThinkingLevel = Literal["off", "minimal", "low", "medium", "high", "xhigh"]
QueueMode = Literal["all", "one-at-a-time"]
DefaultProjectTrust = Literal["ask", "always", "never"]

DEFAULT_PROJECT_TRUST: DefaultProjectTrust = "ask"
"""``defaultProjectTrust`` when the settings do not set it."""

SETTINGS_FILE_NAME = "settings.json"


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """*override* on top of *base*: nested objects merge key by key, anything else replaces."""
    result = copy.deepcopy(dict(base))
    for key, value in override.items():
        current = result.get(key)
        if isinstance(value, Mapping) and isinstance(current, Mapping):
            result[key] = deep_merge(current, value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def _migrate(settings: dict[str, Any]) -> dict[str, Any]:
    """Bring old pi key spellings up to date, as pi does when it reads a file."""
    if "queueMode" in settings and "steeringMode" not in settings:
        settings["steeringMode"] = settings.pop("queueMode")
    if "transport" not in settings and isinstance(settings.get("websockets"), bool):
        settings["transport"] = "websocket" if settings.pop("websockets") else "sse"
    skills = settings.get("skills")
    if isinstance(skills, dict):
        if skills.get("enableSkillCommands") is not None and "enableSkillCommands" not in settings:
            settings["enableSkillCommands"] = skills["enableSkillCommands"]
        custom = skills.get("customDirectories")
        if isinstance(custom, list) and custom:
            settings["skills"] = custom
        else:
            del settings["skills"]
    return settings


class _InvalidFile(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _read_settings_file(path: Path) -> dict[str, Any]:
    """The file's settings (``{}`` when it does not exist). Raises :class:`_InvalidFile`."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise _InvalidFile(f"cannot be read ({exc})") from exc
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _InvalidFile(f"is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from exc
    if not isinstance(data, dict):
        raise _InvalidFile(f"must hold a JSON object, not {type(data).__name__}")
    return _migrate(data)


def _drop_path(data: dict[str, Any], location: tuple[str | int, ...]) -> tuple[str, ...]:
    """Remove the value at *location* (cut at the first list index); return the path removed."""
    keys: list[str] = []
    for part in location:
        if not isinstance(part, str):
            break
        keys.append(part)
    node: Any = data
    for key in keys[:-1]:
        node = node.get(key) if isinstance(node, dict) else None
    if keys and isinstance(node, dict):
        node.pop(keys[-1], None)
    return tuple(keys)


def _to_key(part: str | int) -> str:
    return part if isinstance(part, str) else str(part)


def validate_section(key: str, raw: Any, model: type[_M]) -> tuple[_M, list[tuple[tuple[str, ...], str]]]:
    """A plugin's settings section (``raw``, the merged value of ``key``) as ``model``.

    Values that do not validate fall back to the model's defaults, one by one, as the
    host's own settings do; a section that is not an object is replaced by the defaults.

    :returns: the section, and ``(key path removed, message)`` for every value dropped.
    """
    if raw is None:
        return model.model_validate({}), []
    if not isinstance(raw, Mapping):
        return model.model_validate({}), [
            ((key,), f"{key}: expected an object, got {type(raw).__name__}; using the defaults")
        ]
    section, problems = _validate(raw, model)
    return section, [((key, *keys), f"{key}.{message}") for keys, message in problems]


def _validate(
    raw: Mapping[str, Any], model: type[Any] | None = None
) -> tuple[Any, list[tuple[tuple[str, ...], str]]]:
    """Typed settings from *raw* (as ``model``, default :class:`Settings`); values of the wrong
    type fall back to their defaults.

    :returns: the settings, and ``(key path removed, message)`` for every value dropped.
    """
    if model is not None:
        return _validate_as(raw, model)
    from ._settings_models import Settings

    if not raw:
        # No settings at all (the common first run): the defaults, without building the
        # model's validators; tests/test_startup.py checks this equals validating ``{}``.
        return Settings.model_construct(), []
    return _validate_as(raw, Settings)


def _validate_as(raw: Mapping[str, Any], model: type[Any]) -> tuple[Any, list[tuple[tuple[str, ...], str]]]:
    from pydantic import ValidationError

    data = copy.deepcopy(dict(raw))
    problems: list[tuple[tuple[str, ...], str]] = []
    # Each round removes at least one bad value, so this ends; the bound is a safety net.
    for _ in range(100):
        try:
            return model.model_validate(data), problems
        except ValidationError as exc:
            removed_any = False
            for error in exc.errors():
                location = tuple(error["loc"])
                removed = _drop_path(data, location)
                if removed:
                    removed_any = True
                    shown = ".".join(_to_key(p) for p in location)
                    problems.append((removed, f"{shown}: {error['msg']}; using the default"))
            if not removed_any:
                break
    return model(), problems


def _set_path(data: dict[str, Any], keys: tuple[str, ...], value: Any) -> None:
    node = data
    for key in keys[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = {}
            node[key] = child
        node = child
    if value is None:
        node.pop(keys[-1], None)
    else:
        node[keys[-1]] = copy.deepcopy(value)


def _split_key(key_path: str) -> tuple[str, ...]:
    keys = tuple(part for part in key_path.split("."))
    if not keys or any(not part for part in keys):
        raise ValueError(
            f"invalid settings key {key_path!r}: use dotted camelCase keys like 'markdown.codeBlockIndent'"
        )
    return keys


class SettingsManager:
    """Global and project settings: loading, merging, typed access and careful writing.

    Create one with :meth:`load` (files) or :meth:`in_memory` (tests, embedding). The merged,
    typed view is :attr:`settings`; problems found along the way collect in :attr:`issues`.
    """

    def __init__(
        self,
        *,
        global_path: Path | None,
        project_path: Path | None,
        project_trusted: bool,
        global_data: Mapping[str, Any] | None = None,
        project_data: Mapping[str, Any] | None = None,
        _private: bool = False,
    ) -> None:
        if not _private:
            raise TypeError("use SettingsManager.load(...) or SettingsManager.in_memory(...)")
        self._global_path = global_path
        self._project_path = project_path
        self._project_trusted = project_trusted
        self._global: dict[str, Any] = _migrate(copy.deepcopy(dict(global_data or {})))
        self._project: dict[str, Any] = _migrate(copy.deepcopy(dict(project_data or {})))
        self._overrides: dict[str, Any] = {}
        self._load_failed: set[SettingsScope] = set()
        self._save_error: str | None = None
        self._issues: list[SettingsIssue] = []
        self._reported: set[SettingsIssue] = set()
        self._cache: Settings | None = None

    # -- construction ----------------------------------------------------------------

    @classmethod
    def load(
        cls, cwd: str | os.PathLike[str], agent_dir: str | os.PathLike[str], *, project_trusted: bool
    ) -> SettingsManager:
        """Read ``<agent_dir>/settings.json`` and, if *project_trusted*, ``<cwd>/.pi/settings.json``.

        Decide trust from the global settings first (``defaultProjectTrust``), then call
        :meth:`set_project_trusted` when the answer changes.
        """
        manager = cls(
            global_path=Path(agent_dir) / SETTINGS_FILE_NAME,
            project_path=project_config_dir(cwd) / SETTINGS_FILE_NAME,
            project_trusted=project_trusted,
            _private=True,
        )
        manager.reload()
        return manager

    @classmethod
    def in_memory(
        cls,
        global_settings: Mapping[str, Any] | None = None,
        project_settings: Mapping[str, Any] | None = None,
        *,
        project_trusted: bool = True,
    ) -> SettingsManager:
        """Settings held in memory only: writes change the object, never a file."""
        return cls(
            global_path=None,
            project_path=None,
            project_trusted=project_trusted,
            global_data=global_settings,
            project_data=project_settings,
            _private=True,
        )

    # -- reading ---------------------------------------------------------------------

    @property
    def global_path(self) -> Path | None:
        """The global settings file (``None`` in memory)."""
        return self._global_path

    @property
    def project_path(self) -> Path | None:
        """The project settings file (``None`` in memory)."""
        return self._project_path

    @property
    def project_trusted(self) -> bool:
        """Whether the project settings take part in :attr:`settings`."""
        return self._project_trusted

    @property
    def settings(self) -> Settings:
        """The effective settings: global, then project (when trusted), then overrides."""
        if self._cache is None:
            settings, problems = _validate(self.merged())
            for keys, message in problems:
                self._report(self._scope_of_value(keys), message)
            self._cache = settings
        return self._cache

    def report_section_problems(self, problems: list[tuple[tuple[str, ...], str]]) -> None:
        """Report values of a plugin's section that did not validate (see :func:`validate_section`),
        each naming the file that set it."""
        for keys, message in problems:
            self._report(self._scope_of_value(keys), message)

    def settings_for(self, scope: SettingsScope) -> Settings:
        """The typed settings of one file alone (``defaultProjectTrust`` comes from ``"global"``)."""
        settings: Settings = _validate(self._global if scope == "global" else self._project)[0]
        return settings

    def sets_any(self, *keys: str) -> bool:
        """Whether the effective settings set any of these top-level keys (``"plugins"``).

        When they do not, the typed values are their defaults, known without validating
        the settings (which imports pydantic and builds the settings model's validators).
        """
        sources = (
            [self._global, self._project, self._overrides]
            if self._project_trusted
            else [
                self._global,
                self._overrides,
            ]
        )
        return any(key in source for source in sources for key in keys)

    def merged(self) -> dict[str, Any]:
        """The effective settings as pi-shaped JSON data (a copy)."""
        merged = copy.deepcopy(self._global)
        if self._project_trusted:
            merged = deep_merge(merged, self._project)
        return deep_merge(merged, self._overrides)

    def raw(self, scope: SettingsScope) -> dict[str, Any]:
        """One file's settings as last read or written (a copy)."""
        return copy.deepcopy(self._global if scope == "global" else self._project)

    def get(self, key_path: str, default: Any = None) -> Any:
        """A value of the effective settings by dotted key (``"myPlugin.level"``), or *default*."""
        node: Any = self.merged()
        for key in _split_key(key_path):
            if not isinstance(node, dict) or key not in node:
                return default
            node = node[key]
        return node

    def resource_entries(
        self, kind: Literal["skills", "prompts", "extensions", "themes"]
    ) -> tuple[list[str], list[str]]:
        """The ``kind`` lists of the global and the project file (the latter empty if untrusted).

        Kept apart because their relative paths resolve against different directories.
        """

        def entries(scope: SettingsScope, data: Mapping[str, Any]) -> list[str]:
            value = data.get(kind, [])
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                return list(value)
            self._report(scope, f"{kind}: expected a list of paths; ignoring it")
            return []

        project = entries("project", self._project) if self._project_trusted else []
        return entries("global", self._global), project

    @property
    def issues(self) -> tuple[SettingsIssue, ...]:
        """Problems found so far (unreadable files, bad values, failed writes)."""
        _ = self.settings  # validation problems are found lazily
        return tuple(self._issues)

    def drain_issues(self) -> list[SettingsIssue]:
        """Return the problems not yet drained, and forget them.

        Each distinct problem is reported once per manager, so a value that stays wrong is not
        reported again after every change.
        """
        drained = list(self.issues)
        self._issues.clear()
        return drained

    # -- changing --------------------------------------------------------------------

    def reload(self) -> None:
        """Re-read both files. A file that no longer parses keeps its previous values."""
        self._load_scope("global")
        if self._project_trusted:
            self._load_scope("project")
        else:
            self._project = {}
        self._cache = None

    def set_project_trusted(self, trusted: bool) -> None:
        """Include (reading the file) or exclude the project settings after a trust decision."""
        if trusted == self._project_trusted:
            return
        self._project_trusted = trusted
        if trusted:
            self._load_scope("project")
        else:
            self._project = {}
        self._cache = None

    def apply_overrides(self, overrides: Mapping[str, Any]) -> None:
        """Lay *overrides* (pi-shaped JSON) over the effective settings, without saving them."""
        self._overrides = deep_merge(self._overrides, overrides)
        self._cache = None

    def set(self, key_path: str, value: Any, *, scope: SettingsScope = "global") -> bool:
        """Set one key (dotted camelCase, ``"markdown.codeBlockIndent"``) and save it to the file.

        Only that key is written: the file is re-read under a lock and every other key in it
        is kept, including ones edited by hand since it was loaded. ``None`` removes the key.
        The change always applies in memory; it is saved unless the file is unreadable or not
        valid JSON, which is reported in :attr:`issues` and leaves the file as it is.

        :returns: whether the change was saved.
        :raises TypeError: *value* is not JSON-serialisable.
        :raises ValueError: *value* is NaN or infinite (not JSON), or *key_path* is malformed.
        """
        return self.update({key_path: value}, scope=scope)

    def update(self, changes: Mapping[str, Any], *, scope: SettingsScope = "global") -> bool:
        """Set several keys at once (see :meth:`set`), in one write."""
        parsed = [(_split_key(key), value) for key, value in changes.items()]
        json.dumps([value for _, value in parsed], allow_nan=False)  # fail before touching anything
        target = self._global if scope == "global" else self._project
        for keys, value in parsed:
            _set_path(target, keys, value)
        self._cache = None
        path = self._global_path if scope == "global" else self._project_path
        self._save_error = None
        if path is None:
            return True
        if scope in self._load_failed:
            # The user may have fixed the file since: read it again before refusing.
            self._load_scope(scope)
            if scope in self._load_failed:
                return self._save_failed(scope, "the file could not be read when it was loaded; fix it first")
            target = self._global if scope == "global" else self._project
            for keys, value in parsed:
                _set_path(target, keys, value)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with file_lock(path):
                current = _read_settings_file(path)
                for keys, value in parsed:
                    _set_path(current, keys, value)
                write_json_atomic(path, current)
        except _InvalidFile as exc:
            return self._save_failed(scope, f"the file {exc.message}; it is left untouched")
        except OSError as exc:
            return self._save_failed(scope, str(exc))
        return True

    @property
    def save_error(self) -> str | None:
        """Why the last :meth:`set` / :meth:`update` did not save (``None``: it did)."""
        return self._save_error

    def _save_failed(self, scope: SettingsScope, reason: str) -> bool:
        self._save_error = reason
        self._report(scope, f"not saved: {reason}")
        return False

    # pi's most used setters, for callers that prefer names to key paths.

    def set_default_model(self, provider: str, model_id: str) -> bool:
        """Remember the model chosen by the user (``defaultProvider`` and ``defaultModel``)."""
        return self.update({"defaultProvider": provider, "defaultModel": model_id})

    def set_default_thinking_level(self, level: ThinkingLevel) -> bool:
        """Remember the thinking level chosen by the user."""
        return self.set("defaultThinkingLevel", level)

    def set_steering_mode(self, mode: QueueMode) -> bool:
        """How queued steering messages are delivered."""
        return self.set("steeringMode", mode)

    def set_follow_up_mode(self, mode: QueueMode) -> bool:
        """How queued follow-up messages are delivered."""
        return self.set("followUpMode", mode)

    # -- internals -------------------------------------------------------------------

    def _load_scope(self, scope: SettingsScope) -> None:
        path = self._global_path if scope == "global" else self._project_path
        if path is None:
            return
        try:
            data = _read_settings_file(path)
        except _InvalidFile as exc:
            self._load_failed.add(scope)
            self._report(scope, f"{exc.message}. It is ignored and left untouched; fix it to use it again.")
            return
        self._load_failed.discard(scope)
        if scope == "global":
            self._global = data
        else:
            self._project = data

    def _scope_of_value(self, keys: tuple[str, ...]) -> SettingsScope:
        """The file a merged value came from: the project's if it sets the key, else global's."""
        node: Any = self._project
        for key in keys:
            if not isinstance(node, dict) or key not in node:
                return "global"
            node = node[key]
        return "project" if self._project_trusted else "global"

    def _report(self, scope: SettingsScope, message: str) -> None:
        from ._settings_models import SettingsIssue

        path = self._global_path if scope == "global" else self._project_path
        shown = str(path) if path is not None else f"<{scope} settings>"
        issue = SettingsIssue(scope=scope, path=shown, message=message)
        if issue not in self._reported:
            self._reported.add(issue)
            self._issues.append(issue)
