"""The ``models.json`` schema (pi's format) as pydantic models, and its JSON dialect.

Imported only when a ``models.json`` exists or a plugin registers a provider, so building these
validators costs nothing on a start-up that needs neither.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

__all__ = [
    "ModelDefinition",
    "ModelOverride",
    "ModelsConfig",
    "ProviderConfig",
    "format_validation_error",
    "strip_json_comments",
]

_LEVEL = Literal["off", "minimal", "low", "medium", "high", "xhigh"]


class _Schema(BaseModel):
    # Unknown keys are allowed (pi's schema allows them); known keys are type-checked strictly.
    # Built on first use: validating models.json builds one validator (ModelsConfig's, with the
    # nested models inline) instead of one per class at import.
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        strict=True,
        extra="allow",
        frozen=True,
        defer_build=True,
    )


class _Cost(_Schema):
    input: float
    output: float
    cache_read: float
    cache_write: float


class _PartialCost(_Schema):
    input: float | None = None
    output: float | None = None
    cache_read: float | None = None
    cache_write: float | None = None


class ModelDefinition(_Schema):
    """A model entry of a provider in ``models.json``."""

    id: str = Field(min_length=1)
    name: str | None = Field(default=None, min_length=1)
    api: str | None = Field(default=None, min_length=1)
    base_url: str | None = Field(default=None, min_length=1)
    reasoning: bool | None = None
    thinking_level_map: dict[_LEVEL, str | None] | None = None
    input: list[Literal["text", "image"]] | None = None
    cost: _Cost | None = None
    context_window: float | None = None
    max_tokens: float | None = None
    headers: dict[str, str] | None = None
    compat: dict[str, Any] | None = None


class ModelOverride(_Schema):
    """A ``modelOverrides`` entry: fields patched onto one built-in model."""

    name: str | None = Field(default=None, min_length=1)
    reasoning: bool | None = None
    thinking_level_map: dict[_LEVEL, str | None] | None = None
    input: list[Literal["text", "image"]] | None = None
    cost: _PartialCost | None = None
    context_window: float | None = None
    max_tokens: float | None = None
    headers: dict[str, str] | None = None
    compat: dict[str, Any] | None = None


class ProviderConfig(_Schema):
    """A provider in ``models.json``, or one a plugin registers (:meth:`ModelRegistry.register_provider`)."""

    name: str | None = Field(default=None, min_length=1)
    base_url: str | None = Field(default=None, min_length=1)
    api_key: str | None = Field(default=None, min_length=1)
    api: str | None = Field(default=None, min_length=1)
    headers: dict[str, str] | None = None
    compat: dict[str, Any] | None = None
    auth_header: bool | None = None
    models: list[ModelDefinition] | None = None
    model_overrides: dict[str, ModelOverride] | None = None


class ModelsConfig(_Schema):
    """The whole ``models.json``."""

    providers: dict[str, ProviderConfig]


_COMMENT_OR_STRING = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*')
_TRAILING_COMMA_OR_STRING = re.compile(r'"(?:\\.|[^"\\])*"|,(\s*[}\]])')


def strip_json_comments(text: str) -> str:
    """Remove ``//`` line comments and trailing commas, leaving string literals alone."""
    text = _COMMENT_OR_STRING.sub(lambda m: m.group(0) if m.group(0).startswith('"') else "", text)
    return _TRAILING_COMMA_OR_STRING.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(0), text)


def format_validation_error(error: ValidationError) -> str:
    lines = []
    for item in error.errors():
        path = ".".join(str(part) for part in item["loc"]) or "root"
        lines.append(f"  - {path}: {item['msg']}")
    return "\n".join(lines) or "Unknown schema error"
