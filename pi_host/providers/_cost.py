"""Token usage and its dollar cost, from a model's prices per million tokens."""

from __future__ import annotations

from pi_host.messages import Cost, Usage

from ._types import Model

__all__ = ["calculate_cost", "make_usage"]


def calculate_cost(model: Model, usage: Usage) -> Cost:
    """The cost of ``usage`` at ``model``'s prices (pi's ``calculateCost``)."""
    return _cost(model, usage.input, usage.output, usage.cache_read, usage.cache_write)


def make_usage(model: Model, *, input: int, output: int, cache_read: int = 0, cache_write: int = 0) -> Usage:
    """A :class:`Usage` with ``total_tokens`` summed and the cost at ``model``'s prices filled in."""
    return Usage.model_construct(
        input=input,
        output=output,
        cache_read=cache_read,
        cache_write=cache_write,
        total_tokens=input + output + cache_read + cache_write,
        cost=_cost(model, input, output, cache_read, cache_write),
    )


def _cost(model: Model, input: int, output: int, cache_read: int, cache_write: int) -> Cost:
    prices = model.cost
    input_cost = prices.input / 1_000_000 * input
    output_cost = prices.output / 1_000_000 * output
    cache_read_cost = prices.cache_read / 1_000_000 * cache_read
    cache_write_cost = prices.cache_write / 1_000_000 * cache_write
    return Cost.model_construct(
        input=_js_number(input_cost),
        output=_js_number(output_cost),
        cache_read=_js_number(cache_read_cost),
        cache_write=_js_number(cache_write_cost),
        total=_js_number(input_cost + output_cost + cache_read_cost + cache_write_cost),
    )


def _js_number(value: float) -> int | float:
    # JavaScript prints 0 and 3 where Python prints 0.0 and 3.0; whole numbers stay ints so the
    # JSON we write matches pi's byte for byte.
    return int(value) if value.is_integer() else value
