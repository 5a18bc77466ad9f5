"""Finding models by name: ``provider/id``, fuzzy patterns, ``:thinking`` suffixes, globs, listings.

These are pi's rules (``model-resolver`` and ``--list-models``), over any list of models:

- an exact ``provider/id`` or a bare id (unique across providers) wins;
- otherwise a case-insensitive substring of id or name; among several matches an alias
  (no ``-YYYYMMDD`` suffix, or ``-latest``) beats a dated id, the highest id sorting last wins;
- ``pattern:level`` selects a thinking level (``off``, ``minimal`` … ``xhigh``); ids that contain
  colons themselves (OpenRouter's ``:exacto``) still match, because the whole pattern is tried
  first;
- ``--provider p --model x`` with an unknown ``x`` falls back to the provider's default model
  under the custom id ``x``, with a warning.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, TypeGuard

from ._catalog import DEFAULT_MODEL_PER_PROVIDER
from ._types import THINKING_LEVELS, Model, ThinkingLevel

__all__ = [
    "ModelResolution",
    "ScopedModel",
    "find_exact_model_reference",
    "format_model_list",
    "format_token_count",
    "fuzzy_filter",
    "is_thinking_level",
    "parse_model_pattern",
    "pick_default_model",
    "resolve_cli_model",
    "resolve_model_scope",
]

_DATED = re.compile(r"-\d{8}$")
_WORD_BOUNDARY = frozenset(" \t\n-_./:")


def is_thinking_level(value: str) -> TypeGuard[ThinkingLevel]:
    """Whether ``value`` names a thinking level."""
    return value in THINKING_LEVELS


@dataclass(frozen=True)
class ModelResolution:
    """The outcome of resolving a model reference: a model, or an error; maybe a warning."""

    model: Model | None = None
    thinking_level: ThinkingLevel | None = None
    warning: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class ScopedModel:
    """One entry of a model scope (``--models``): a model and its thinking level, if the pattern set one."""

    model: Model
    thinking_level: ThinkingLevel | None = None


class _PatternMatch(NamedTuple):
    model: Model | None
    thinking_level: ThinkingLevel | None = None
    warning: str | None = None


def _is_alias(model_id: str) -> bool:
    return model_id.endswith("-latest") or not _DATED.search(model_id)


def find_exact_model_reference(reference: str, models: Sequence[Model]) -> Model | None:
    """The model named exactly by ``provider/id`` or by a bare id that only one provider has."""
    trimmed = reference.strip()
    if not trimmed:
        return None
    lowered = trimmed.lower()
    canonical = [m for m in models if f"{m.provider}/{m.id}".lower() == lowered]
    if len(canonical) == 1:
        return canonical[0]
    if canonical:
        return None
    provider, slash, model_id = trimmed.partition("/")
    if slash and provider.strip() and model_id.strip():
        by_provider = [
            m
            for m in models
            if m.provider.lower() == provider.strip().lower() and m.id.lower() == model_id.strip().lower()
        ]
        if len(by_provider) == 1:
            return by_provider[0]
        if by_provider:
            return None
    by_id = [m for m in models if m.id.lower() == lowered]
    return by_id[0] if len(by_id) == 1 else None


def _match(pattern: str, models: Sequence[Model]) -> Model | None:
    exact = find_exact_model_reference(pattern, models)
    if exact is not None:
        return exact
    needle = pattern.lower()
    matches = [m for m in models if needle in m.id.lower() or (m.name and needle in m.name.lower())]
    if not matches:
        return None
    aliases = [m for m in matches if _is_alias(m.id)]
    pool = aliases or matches
    return max(pool, key=lambda m: m.id)


def parse_model_pattern(
    pattern: str, models: Sequence[Model], *, allow_invalid_thinking_level_fallback: bool = True
) -> _PatternMatch:
    """Match ``pattern`` (maybe ending in ``:level``) against ``models``.

    With ``allow_invalid_thinking_level_fallback`` (model scopes), an unknown suffix is dropped
    with a warning; without it (``--model``), the suffix is part of the id and the match fails.
    """
    exact = _match(pattern, models)
    if exact is not None:
        return _PatternMatch(exact)
    prefix, colon, suffix = pattern.rpartition(":")
    if not colon:
        return _PatternMatch(None)
    if is_thinking_level(suffix):
        inner = parse_model_pattern(
            prefix, models, allow_invalid_thinking_level_fallback=allow_invalid_thinking_level_fallback
        )
        if inner.model is not None:
            return _PatternMatch(inner.model, None if inner.warning else suffix, inner.warning)
        return inner
    if not allow_invalid_thinking_level_fallback:
        return _PatternMatch(None)
    inner = parse_model_pattern(prefix, models, allow_invalid_thinking_level_fallback=True)
    if inner.model is not None:
        return _PatternMatch(
            inner.model,
            None,
            f'Invalid thinking level "{suffix}" in pattern "{pattern}". Using default instead.',
        )
    return inner


def _fallback_model(provider: str, model_id: str, models: Sequence[Model]) -> Model | None:
    candidates = [m for m in models if m.provider == provider]
    if not candidates:
        return None
    default_id = DEFAULT_MODEL_PER_PROVIDER.get(provider)
    base = next((m for m in candidates if m.id == default_id), candidates[0])
    return base.model_copy(update={"id": model_id, "name": model_id})


def resolve_cli_model(
    models: Sequence[Model], model: str | None, provider: str | None = None
) -> ModelResolution:
    """Resolve ``--model`` (and ``--provider``) the way pi's command line does.

    ``models`` should be every known model, not only those with credentials, so that
    ``--api-key`` works for a first run.
    """
    if not model:
        return ModelResolution()
    if not models:
        return ModelResolution(
            error="No models available. Check your installation or add models to models.json."
        )
    providers = {m.provider.lower(): m.provider for m in models}
    chosen = providers.get(provider.lower()) if provider else None
    if provider and chosen is None:
        return ModelResolution(
            error=f'Unknown provider "{provider}". Use --list-models to see available providers/models.'
        )
    pattern = model
    inferred = False
    if chosen is None:
        maybe, slash, rest = model.partition("/")
        if slash and maybe.lower() in providers:
            chosen = providers[maybe.lower()]
            pattern = rest
            inferred = True
    lowered = model.lower()

    def exact_anywhere() -> Model | None:
        return next(
            (m for m in models if m.id.lower() == lowered or f"{m.provider}/{m.id}".lower() == lowered), None
        )

    if chosen is None:
        found = exact_anywhere()
        if found is not None:
            return ModelResolution(model=found)
    if provider and chosen is not None and model.lower().startswith(f"{chosen}/".lower()):
        pattern = model[len(chosen) + 1 :]
    candidates = [m for m in models if m.provider == chosen] if chosen else list(models)
    match = parse_model_pattern(pattern, candidates, allow_invalid_thinking_level_fallback=False)
    if match.model is not None:
        return ModelResolution(match.model, match.thinking_level, match.warning)
    if inferred:
        found = exact_anywhere()
        if found is not None:
            return ModelResolution(model=found)
        fallback = parse_model_pattern(model, models, allow_invalid_thinking_level_fallback=False)
        if fallback.model is not None:
            return ModelResolution(fallback.model, fallback.thinking_level, fallback.warning)
    if chosen:
        custom = _fallback_model(chosen, pattern, models)
        if custom is not None:
            note = f'Model "{pattern}" not found for provider "{chosen}". Using custom model id.'
            return ModelResolution(model=custom, warning=f"{match.warning} {note}" if match.warning else note)
    display = f"{chosen}/{pattern}" if chosen else model
    return ModelResolution(
        warning=match.warning,
        error=f'Model "{display}" not found. Use --list-models to see available models.',
    )


def _glob_regex(pattern: str) -> re.Pattern[str]:
    # minimatch semantics for the cases that matter: "*" and "?" do not cross "/", "**" does.
    out: list[str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "*":
            if pattern.startswith("**", index):
                while index + 1 < len(pattern) and pattern[index + 1] == "*":
                    index += 1
                out.append(".*")  # globstar: any number of path segments
            else:
                out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = pattern.find("]", index + 1)
            if end == -1:
                out.append(re.escape(char))
            else:
                body = pattern[index + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                index = end
        else:
            out.append(re.escape(char))
        index += 1
    return re.compile("".join(out), re.IGNORECASE)


@dataclass
class _ScopeResult:
    models: list[ScopedModel] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def resolve_model_scope(
    patterns: Sequence[str], models: Sequence[Model]
) -> tuple[list[ScopedModel], list[str]]:
    """Resolve ``--models`` patterns (globs allowed, ``:level`` suffixes) against available models.

    :returns: the scoped models, without duplicates, and the warnings to show.
    """
    result = _ScopeResult()

    def add(model: Model, level: ThinkingLevel | None) -> None:
        if not any(s.model.provider == model.provider and s.model.id == model.id for s in result.models):
            result.models.append(ScopedModel(model, level))

    for pattern in patterns:
        if any(char in pattern for char in "*?["):
            glob = pattern
            level: ThinkingLevel | None = None
            prefix, colon, suffix = pattern.rpartition(":")
            if colon and is_thinking_level(suffix):
                glob, level = prefix, suffix
            regex = _glob_regex(glob)
            matching = [m for m in models if regex.fullmatch(f"{m.provider}/{m.id}") or regex.fullmatch(m.id)]
            if not matching:
                result.warnings.append(f'No models match pattern "{pattern}"')
            for model in matching:
                add(model, level)
            continue
        match = parse_model_pattern(pattern, models)
        if match.warning:
            result.warnings.append(match.warning)
        if match.model is None:
            result.warnings.append(f'No models match pattern "{pattern}"')
            continue
        add(match.model, match.thinking_level)
    return result.models, result.warnings


def pick_default_model(available: Sequence[Model]) -> Model | None:
    """The first provider default (in pi's provider order) among ``available``, else the first model."""
    for provider, model_id in DEFAULT_MODEL_PER_PROVIDER.items():
        found = next((m for m in available if m.provider == provider and m.id == model_id), None)
        if found is not None:
            return found
    return available[0] if available else None


# -- fuzzy search and --list-models ---------------------------------------------------------


def _fuzzy_score(query: str, text: str) -> float | None:
    if not query:
        return 0.0
    if len(query) > len(text):
        return None
    query_index = 0
    score = 0.0
    last = -1
    consecutive = 0
    for position, char in enumerate(text):
        if query_index >= len(query):
            break
        if char != query[query_index]:
            continue
        if last == position - 1:
            consecutive += 1
            score -= consecutive * 5
        else:
            consecutive = 0
            if last >= 0:
                score += (position - last - 1) * 2
        if position == 0 or text[position - 1] in _WORD_BOUNDARY:
            score -= 10
        score += position * 0.1
        last = position
        query_index += 1
    if query_index < len(query):
        return None
    if query == text:
        score -= 100
    return score


def _fuzzy_match(query: str, text: str) -> float | None:
    query, text = query.lower(), text.lower()
    primary = _fuzzy_score(query, text)
    if primary is not None:
        return primary
    # "gpt5" also finds "5gpt"-shaped names and the other way round (pi-tui's swap).
    swapped = re.fullmatch(r"([a-z]+)([0-9]+)", query) or re.fullmatch(r"([0-9]+)([a-z]+)", query)
    if swapped is None:
        return None
    alternative = _fuzzy_score(swapped.group(2) + swapped.group(1), text)
    return None if alternative is None else alternative + 5


def fuzzy_filter(models: Sequence[Model], query: str) -> list[Model]:
    """Models whose ``provider id`` fuzzily contains every space-separated token, best first."""
    tokens = query.split()
    if not tokens:
        return list(models)
    scored: list[tuple[float, int, Model]] = []
    for order, model in enumerate(models):
        text = f"{model.provider} {model.id}"
        total = 0.0
        for token in tokens:
            score = _fuzzy_match(token, text)
            if score is None:
                break
            total += score
        else:
            scored.append((total, order, model))
    scored.sort(key=lambda item: (item[0], item[1]))
    return [model for _, _, model in scored]


def format_token_count(count: int) -> str:
    """``200000`` → ``200K``, ``1000000`` → ``1M``, ``1500`` → ``1.5K`` (pi's table style)."""
    if count >= 1_000_000:
        millions = count / 1_000_000
        return f"{int(millions)}M" if millions.is_integer() else f"{millions:.1f}M"
    if count >= 1_000:
        thousands = count / 1_000
        return f"{int(thousands)}K" if thousands.is_integer() else f"{thousands:.1f}K"
    return str(count)


def format_model_list(models: Sequence[Model], search: str | None = None) -> str | None:
    """The ``--list-models [search]`` table, or ``No models matching "x"``; ``None`` with no models.

    ``models`` are the available ones (with credentials). Rows sort by provider, then id; the
    columns are provider, model, context, max-out, thinking and images, two spaces apart.
    """
    if not models:
        return None
    chosen = fuzzy_filter(models, search) if search else list(models)
    if not chosen:
        return f'No models matching "{search}"'
    chosen.sort(key=lambda m: (m.provider.casefold(), m.id.casefold()))
    header = ("provider", "model", "context", "max-out", "thinking", "images")
    rows = [
        (
            m.provider,
            m.id,
            format_token_count(m.context_window),
            format_token_count(m.max_tokens),
            "yes" if m.reasoning else "no",
            "yes" if "image" in m.input else "no",
        )
        for m in chosen
    ]
    widths = [max(len(header[i]), *(len(row[i]) for row in rows)) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(line)) for line in (header, *rows)]
    return "\n".join(lines)
