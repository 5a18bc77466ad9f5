"""The settings sections plugins own: read from the session's settings, validated, cached.

A plugin declares a section (``pi_register_settings``) and reads it with
``ctx.plugin_settings(Model)``. The values come from the session's effective settings
(global and project files merged, with the session's in-memory changes such as RPC
``set_auto_*``), validated with the plugin's model; bad values are reported once through
the settings manager (naming the file and the key) and replaced by the model's defaults.
"""

from __future__ import annotations

import enum
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from pydantic import BaseModel

    from pi_host.hookspecs import SettingsSection
    from pi_host.resources import Settings, SettingsManager

__all__ = [
    "PluginSettingsReader",
    "SectionField",
    "UnknownSettingsSection",
    "section_fields",
    "with_section_value",
]

_M = TypeVar("_M", bound="BaseModel")


class UnknownSettingsSection(LookupError):
    """``ctx.plugin_settings(Model)`` with a model no loaded plugin declared."""


class PluginSettingsReader:
    """Validates plugin sections of whatever settings object the session holds now.

    :param sections: the declared sections by key (the host's, kept up to date by reloads).
    :param settings: returns the session's current settings (``None`` without any).
    :param manager: returns the settings manager that reports bad values, if there is one.
    """

    def __init__(
        self,
        sections: Callable[[], Mapping[str, SettingsSection]],
        settings: Callable[[], Settings | None],
        manager: Callable[[], SettingsManager | None],
    ) -> None:
        self._sections = sections
        self._settings = settings
        self._manager = manager
        self._cache: dict[str, tuple[object, Any]] = {}

    def read(self, model: type[_M]) -> _M:
        """The section declared with ``model``, validated.

        :raises UnknownSettingsSection: no loaded plugin declared a section with ``model``.
        """
        section = next((s for s in self._sections().values() if s.model is model), None)
        if section is None:
            raise UnknownSettingsSection(
                f"{model.__name__} is not a declared settings section: register it with "
                "pi_register_settings(register) -> register(SettingsSection(key, model))"
            )
        settings = self._settings()
        cached = self._cache.get(section.key)
        if cached is not None and cached[0] is settings and isinstance(cached[1], model):
            return cached[1]
        from pi_host.resources import validate_section

        raw = (settings.model_extra or {}).get(section.key) if settings is not None else None
        value, problems = validate_section(section.key, raw, model)
        manager = self._manager()
        if problems and manager is not None:
            manager.report_section_problems(problems)
        self._cache[section.key] = (settings, value)
        return value


def with_section_value(settings: Settings, key_path: str, value: Any) -> Settings:
    """``settings`` with one value of a plugin section changed in memory (``"myPlugin.enabled"``).

    The section stays raw JSON data (the plugin's model validates it when read), so any
    section can be changed without knowing its model.
    """
    key, _, rest = key_path.partition(".")
    if not rest:
        return settings.model_copy(update={key: value})
    current = (settings.model_extra or {}).get(key)
    section = dict(current) if isinstance(current, dict) else {}
    node = section
    *parents, leaf = rest.split(".")
    for part in parents:
        child = node.get(part)
        node[part] = child = dict(child) if isinstance(child, dict) else {}
        node = child
    node[leaf] = value
    return settings.model_copy(update={key: section})


@dataclass(frozen=True)
class SectionField:
    """One value of a plugin's settings section, as ``/settings`` and ``plugins info`` show it.

    :ivar key: the dotted camelCase ``settings.json`` key (``"myPlugin.maxTries"``).
    :ivar type: the value's type in words (``boolean``, ``integer``, ``one of a, b`` …).
    :ivar default: the model's default, as JSON data.
    :ivar choices: the values a menu may step through, as shown (``true``/``false`` for a
        boolean, the members of an enum or ``Literal``); empty when only the file can change
        the value.
    :ivar description: the field's own description, else ``""``.
    """

    key: str
    type: str
    default: Any
    choices: tuple[str, ...] = ()
    description: str = ""


def section_fields(section: SettingsSection) -> list[SectionField]:
    """The values of ``section``'s model, nested models flattened to dotted keys, in order."""
    return _fields(section.model, section.key)


def _fields(model: type[Any], prefix: str) -> list[SectionField]:
    from pydantic import BaseModel
    from pydantic_core import to_jsonable_python

    found: list[SectionField] = []
    for name, info in model.model_fields.items():
        key = f"{prefix}.{info.alias or name}"
        annotation = info.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            found.extend(_fields(annotation, key))
            continue
        try:
            default = to_jsonable_python(info.get_default(call_default_factory=True))
        except Exception:
            # A default that is no JSON value (the model converts it): show it as text.
            default = repr(info.get_default(call_default_factory=True))
        kind, choices = _describe(annotation)
        found.append(SectionField(key, kind, default, choices, info.description or ""))
    return found


def _describe(annotation: Any) -> tuple[str, tuple[str, ...]]:
    """The type in words, and the values a menu can step through (none for free values)."""
    if annotation is bool:
        return "boolean", ("true", "false")
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        values = tuple(str(member.value) for member in annotation)
        return "one of " + ", ".join(values), values
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        values = tuple(str(value) for value in typing.get_args(annotation))
        if all(isinstance(value, str) for value in typing.get_args(annotation)):
            return "one of " + ", ".join(values), values
        return "one of " + ", ".join(values), ()
    if origin in (typing.Union, types.UnionType):
        parts = [_describe(arg)[0] for arg in typing.get_args(annotation) if arg is not type(None)]
        nullable = type(None) in typing.get_args(annotation)
        return " or ".join(parts + (["null"] if nullable else [])), ()
    words = {int: "integer", float: "number", str: "string"}
    if annotation in words:
        return words[annotation], ()
    return getattr(annotation, "__name__", None) or str(annotation), ()
