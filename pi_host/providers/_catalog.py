"""The built-in model catalogue: current Anthropic and OpenAI models (pi 0.73's figures).

Ids, names, context windows, output limits, prices ($ per million tokens: input, output, cache
read, cache write), reasoning and image input are pi-ai 0.73's ``models.generated`` entries for
the ``anthropic`` and ``openai`` providers, so sessions, ``--model`` patterns and cost figures
agree with pi's.

pi sends OpenAI's own models through the Responses API; pi-host speaks chat completions to them
(``openai-completions``), which serves every OpenAI chat model. Models OpenAI offers only
through the Responses API are left out: gpt-5-codex, gpt-5-pro, gpt-5.1-codex, gpt-5.1-codex-max,
gpt-5.1-codex-mini, gpt-5.2-codex, gpt-5.2-pro, gpt-5.3-codex, gpt-5.3-codex-spark, gpt-5.4-pro,
gpt-5.5-pro, o1-pro, o3-deep-research, o3-pro, o4-mini-deep-research.

The table is plain tuples; :class:`Model` objects are built on first use, so importing the
catalogue costs nothing measurable.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from ._types import Model, ModelCost

__all__ = ["BUILTIN_PROVIDERS", "DEFAULT_MODEL_PER_PROVIDER", "builtin_models"]

#: Built-in providers: their API and base URL.
BUILTIN_PROVIDERS: dict[str, tuple[str, str]] = {
    "anthropic": ("anthropic-messages", "https://api.anthropic.com"),
    "openai": ("openai-completions", "https://api.openai.com/v1"),
}

#: The model chosen for a provider when none is named (pi's ``defaultModelPerProvider``).
DEFAULT_MODEL_PER_PROVIDER: dict[str, str] = {
    "anthropic": "claude-opus-4-7",
    "openai": "gpt-5.4",
}

_Row = tuple[str, str, bool, bool, int, int, tuple[float, float, float, float], dict[str, Any] | None]

# id, name, reasoning, image input, context window, max output tokens, prices, thinking level map
_ANTHROPIC: tuple[_Row, ...] = (
    ("claude-3-5-haiku-20241022", "Claude Haiku 3.5", False, True, 200_000, 8_192, (0.8, 4, 0.08, 1), None),
    (
        "claude-3-5-haiku-latest",
        "Claude Haiku 3.5 (latest)",
        False,
        True,
        200_000,
        8_192,
        (0.8, 4, 0.08, 1),
        None,
    ),
    (
        "claude-3-5-sonnet-20240620",
        "Claude Sonnet 3.5",
        False,
        True,
        200_000,
        8_192,
        (3, 15, 0.3, 3.75),
        None,
    ),
    (
        "claude-3-5-sonnet-20241022",
        "Claude Sonnet 3.5 v2",
        False,
        True,
        200_000,
        8_192,
        (3, 15, 0.3, 3.75),
        None,
    ),
    (
        "claude-3-7-sonnet-20250219",
        "Claude Sonnet 3.7",
        True,
        True,
        200_000,
        64_000,
        (3, 15, 0.3, 3.75),
        None,
    ),
    ("claude-3-haiku-20240307", "Claude Haiku 3", False, True, 200_000, 4_096, (0.25, 1.25, 0.03, 0.3), None),
    ("claude-3-opus-20240229", "Claude Opus 3", False, True, 200_000, 4_096, (15, 75, 1.5, 18.75), None),
    ("claude-3-sonnet-20240229", "Claude Sonnet 3", False, True, 200_000, 4_096, (3, 15, 0.3, 0.3), None),
    ("claude-haiku-4-5", "Claude Haiku 4.5 (latest)", True, True, 200_000, 64_000, (1, 5, 0.1, 1.25), None),
    ("claude-haiku-4-5-20251001", "Claude Haiku 4.5", True, True, 200_000, 64_000, (1, 5, 0.1, 1.25), None),
    ("claude-opus-4-0", "Claude Opus 4 (latest)", True, True, 200_000, 32_000, (15, 75, 1.5, 18.75), None),
    ("claude-opus-4-1", "Claude Opus 4.1 (latest)", True, True, 200_000, 32_000, (15, 75, 1.5, 18.75), None),
    ("claude-opus-4-1-20250805", "Claude Opus 4.1", True, True, 200_000, 32_000, (15, 75, 1.5, 18.75), None),
    ("claude-opus-4-20250514", "Claude Opus 4", True, True, 200_000, 32_000, (15, 75, 1.5, 18.75), None),
    ("claude-opus-4-5", "Claude Opus 4.5 (latest)", True, True, 200_000, 64_000, (5, 25, 0.5, 6.25), None),
    ("claude-opus-4-5-20251101", "Claude Opus 4.5", True, True, 200_000, 64_000, (5, 25, 0.5, 6.25), None),
    (
        "claude-opus-4-6",
        "Claude Opus 4.6",
        True,
        True,
        1_000_000,
        128_000,
        (5, 25, 0.5, 6.25),
        {"xhigh": "max"},
    ),
    (
        "claude-opus-4-7",
        "Claude Opus 4.7",
        True,
        True,
        1_000_000,
        128_000,
        (5, 25, 0.5, 6.25),
        {"xhigh": "xhigh"},
    ),
    ("claude-sonnet-4-0", "Claude Sonnet 4 (latest)", True, True, 200_000, 64_000, (3, 15, 0.3, 3.75), None),
    ("claude-sonnet-4-20250514", "Claude Sonnet 4", True, True, 200_000, 64_000, (3, 15, 0.3, 3.75), None),
    (
        "claude-sonnet-4-5",
        "Claude Sonnet 4.5 (latest)",
        True,
        True,
        200_000,
        64_000,
        (3, 15, 0.3, 3.75),
        None,
    ),
    (
        "claude-sonnet-4-5-20250929",
        "Claude Sonnet 4.5",
        True,
        True,
        200_000,
        64_000,
        (3, 15, 0.3, 3.75),
        None,
    ),
    ("claude-sonnet-4-6", "Claude Sonnet 4.6", True, True, 1_000_000, 64_000, (3, 15, 0.3, 3.75), None),
)

_OPENAI: tuple[_Row, ...] = (
    ("gpt-4", "GPT-4", False, False, 8_192, 8_192, (30, 60, 0, 0), None),
    ("gpt-4-turbo", "GPT-4 Turbo", False, True, 128_000, 4_096, (10, 30, 0, 0), None),
    ("gpt-4.1", "GPT-4.1", False, True, 1_047_576, 32_768, (2, 8, 0.5, 0), None),
    ("gpt-4.1-mini", "GPT-4.1 mini", False, True, 1_047_576, 32_768, (0.4, 1.6, 0.1, 0), None),
    ("gpt-4.1-nano", "GPT-4.1 nano", False, True, 1_047_576, 32_768, (0.1, 0.4, 0.03, 0), None),
    ("gpt-4o", "GPT-4o", False, True, 128_000, 16_384, (2.5, 10, 1.25, 0), None),
    ("gpt-4o-2024-05-13", "GPT-4o (2024-05-13)", False, True, 128_000, 4_096, (5, 15, 0, 0), None),
    ("gpt-4o-2024-08-06", "GPT-4o (2024-08-06)", False, True, 128_000, 16_384, (2.5, 10, 1.25, 0), None),
    ("gpt-4o-2024-11-20", "GPT-4o (2024-11-20)", False, True, 128_000, 16_384, (2.5, 10, 1.25, 0), None),
    ("gpt-4o-mini", "GPT-4o mini", False, True, 128_000, 16_384, (0.15, 0.6, 0.08, 0), None),
    ("gpt-5", "GPT-5", True, True, 400_000, 128_000, (1.25, 10, 0.125, 0), {"off": None}),
    (
        "gpt-5-chat-latest",
        "GPT-5 Chat Latest",
        False,
        True,
        128_000,
        16_384,
        (1.25, 10, 0.125, 0),
        {"off": None},
    ),
    ("gpt-5-mini", "GPT-5 Mini", True, True, 400_000, 128_000, (0.25, 2, 0.025, 0), {"off": None}),
    ("gpt-5-nano", "GPT-5 Nano", True, True, 400_000, 128_000, (0.05, 0.4, 0.005, 0), {"off": None}),
    ("gpt-5.1", "GPT-5.1", True, True, 400_000, 128_000, (1.25, 10, 0.13, 0), {"off": None}),
    ("gpt-5.1-chat-latest", "GPT-5.1 Chat", True, True, 128_000, 16_384, (1.25, 10, 0.125, 0), {"off": None}),
    (
        "gpt-5.2",
        "GPT-5.2",
        True,
        True,
        400_000,
        128_000,
        (1.75, 14, 0.175, 0),
        {"off": None, "xhigh": "xhigh"},
    ),
    (
        "gpt-5.2-chat-latest",
        "GPT-5.2 Chat",
        True,
        True,
        128_000,
        16_384,
        (1.75, 14, 0.175, 0),
        {"off": None, "xhigh": "xhigh"},
    ),
    (
        "gpt-5.3-chat-latest",
        "GPT-5.3 Chat (latest)",
        False,
        True,
        128_000,
        16_384,
        (1.75, 14, 0.175, 0),
        {"off": None, "xhigh": "xhigh"},
    ),
    ("gpt-5.4", "GPT-5.4", True, True, 272_000, 128_000, (2.5, 15, 0.25, 0), {"off": None, "xhigh": "xhigh"}),
    (
        "gpt-5.4-mini",
        "GPT-5.4 mini",
        True,
        True,
        400_000,
        128_000,
        (0.75, 4.5, 0.075, 0),
        {"off": None, "xhigh": "xhigh"},
    ),
    (
        "gpt-5.4-nano",
        "GPT-5.4 nano",
        True,
        True,
        400_000,
        128_000,
        (0.2, 1.25, 0.02, 0),
        {"off": None, "xhigh": "xhigh"},
    ),
    ("gpt-5.5", "GPT-5.5", True, True, 272_000, 128_000, (5, 30, 0.5, 0), {"off": None, "xhigh": "xhigh"}),
    ("o1", "o1", True, True, 200_000, 100_000, (15, 60, 7.5, 0), None),
    ("o3", "o3", True, True, 200_000, 100_000, (2, 8, 0.5, 0), None),
    ("o3-mini", "o3-mini", True, False, 200_000, 100_000, (1.1, 4.4, 0.55, 0), None),
    ("o4-mini", "o4-mini", True, True, 200_000, 100_000, (1.1, 4.4, 0.28, 0), None),
)


@cache
def builtin_models() -> tuple[Model, ...]:
    """Every built-in model, Anthropic's first, in pi's order."""
    models: list[Model] = []
    for provider, rows in (("anthropic", _ANTHROPIC), ("openai", _OPENAI)):
        api, base_url = BUILTIN_PROVIDERS[provider]
        for model_id, name, reasoning, images, context_window, max_tokens, prices, level_map in rows:
            models.append(
                Model(
                    id=model_id,
                    name=name,
                    api=api,
                    provider=provider,
                    base_url=base_url,
                    reasoning=reasoning,
                    input=["text", "image"] if images else ["text"],
                    cost=ModelCost(
                        input=prices[0], output=prices[1], cache_read=prices[2], cache_write=prices[3]
                    ),
                    context_window=context_window,
                    max_tokens=max_tokens,
                    thinking_level_map=dict(level_map) if level_map is not None else None,
                )
            )
    return tuple(models)
