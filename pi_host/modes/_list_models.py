"""``pi-host --list-models [search]``: the models pi-host knows, as pi lists them."""

from __future__ import annotations

__all__ = ["run_list_models"]


def run_list_models(search: str | None) -> int:
    """Print the model table (models with credentials configured, plus keyless providers)."""
    from pi_host.providers._registry import ModelRegistry
    from pi_host.providers._resolve import format_model_list
    from pi_host.runtime import Host, ModelResolver

    host = Host.load()
    resolver = ModelResolver(ModelRegistry.create(), host.providers)
    text = format_model_list(resolver.available_models(), search)
    if text is None:
        if search:
            print(f'No models matching "{search}"')
        else:
            print(
                "No models available. Set an API key (e.g. ANTHROPIC_API_KEY) or add models to models.json."
            )
        return 0
    print(text)
    return 0
