"""Parameter models whose JSON schema is the one pi sends to the model.

pydantic writes titles, ``$defs`` references and ``anyOf: [X, null]`` for optional fields;
pi's TypeBox schemas have none of these. Models were tuned on pi's schemas, so
:class:`ToolParams` rewrites pydantic's schema into that shape: inline objects, optional
fields simply left out of ``required``, a description on every property.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

__all__ = ["ToolParams", "pi_json_schema"]


def _drop_docstring(schema: dict[str, Any]) -> None:
    # pydantic turns a model's docstring into its schema description; pi's objects have none,
    # and the docstrings here are written for developers, not for the model.
    schema.pop("description", None)


class ToolParams(BaseModel):
    """Base of the tools' parameter models: camelCase on the wire, frozen, pi-shaped schema."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        frozen=True,
        json_schema_extra=_drop_docstring,
        # Validators are built by the first validation, not when the tools are registered:
        # most sessions call only some of the tools.
        defer_build=True,
    )

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The JSON schema in pi's shape (see :func:`pi_json_schema`)."""
        return pi_json_schema(super().model_json_schema(*args, **kwargs))


def pi_json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Rewrite a pydantic JSON schema the way TypeBox writes the same type.

    References are inlined, titles and ``default: null`` dropped, ``anyOf`` with ``null``
    collapsed to the non-null member; keys follow TypeBox's order.
    """
    definitions: dict[str, Any] = schema.get("$defs", {})
    return _convert(schema, definitions)


_DROPPED = frozenset({"title", "$defs", "default", "anyOf", "$ref"})


def _convert(node: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        target = dict(definitions[name])
        target.update({k: v for k, v in node.items() if k != "$ref"})
        return _convert(target, definitions)
    if "anyOf" in node:
        members = [m for m in node["anyOf"] if m != {"type": "null"}]
        if len(members) == 1:
            merged = dict(members[0])
            merged.update({k: v for k, v in node.items() if k not in ("anyOf", "default")})
            return _convert(merged, definitions)
        converted = {"anyOf": [_convert(m, definitions) for m in members]}
        if "description" in node:
            converted["description"] = node["description"]
        return converted

    out: dict[str, Any] = {}
    kind = node.get("type")
    if kind is not None:
        out["type"] = kind
    if kind == "object":
        if node.get("required"):
            out["required"] = list(node["required"])
        out["properties"] = {
            name: _convert(prop, definitions) for name, prop in node.get("properties", {}).items()
        }
    elif kind == "array" and "items" in node:
        out["items"] = _convert(node["items"], definitions)
    for key, value in node.items():
        if key in _DROPPED or key in out or key in ("description", "additionalProperties"):
            continue
        out[key] = value
    if "description" in node:
        out["description"] = node["description"]
    if "additionalProperties" in node:
        out["additionalProperties"] = node["additionalProperties"]
    return out
