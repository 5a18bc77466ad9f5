"""The faux provider's model definitions, apart from the provider itself.

The ``faux`` builtin registers its model at every start; the scripted provider
(:mod:`pi_host.providers._faux`) is imported only when a faux model is asked to stream.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ._types import Model

__all__ = ["DEFAULT_API", "DEFAULT_MODEL_ID", "DEFAULT_PROVIDER", "faux_models"]

DEFAULT_API = "faux"
DEFAULT_PROVIDER = "faux"
DEFAULT_MODEL_ID = "faux-1"
_DEFAULT_MODEL_NAME = "Faux Model"
_DEFAULT_BASE_URL = "http://localhost:0"


def faux_models(
    definitions: Sequence[Mapping[str, Any]] | None = None,
    *,
    api: str = DEFAULT_API,
    provider: str = DEFAULT_PROVIDER,
) -> tuple[Model, ...]:
    """Models from keyword definitions; missing fields default to pi's faux model.

    Without definitions: the one model ``faux-1``.
    """
    if not definitions:
        definitions = [{"id": DEFAULT_MODEL_ID, "name": _DEFAULT_MODEL_NAME}]
    return tuple(_model(definition, api, provider) for definition in definitions)


def _model(definition: Mapping[str, Any], api: str, provider: str) -> Model:
    values: dict[str, Any] = {
        "base_url": _DEFAULT_BASE_URL,
        "input": ["text", "image"],
        "context_window": 128_000,
        "max_tokens": 16_384,
        **definition,
        "api": api,
        "provider": provider,
    }
    values.setdefault("name", values["id"])
    return Model.model_validate(values)
