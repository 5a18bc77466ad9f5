"""A request body encoded piece by piece is byte for byte pydantic-core's encoding of it whole."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_core import to_json

from pi_host._frozen import deep_freeze
from pi_host.messages import TextContent, UserMessage
from pi_host.providers._json_body import JsonBody

_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)
_bodies = st.dictionaries(st.text(max_size=8), _values, max_size=6) | _values


@settings(max_examples=300, deadline=None)
@given(_bodies, st.integers(min_value=1, max_value=64))
def test_the_pieces_join_to_the_whole_encoding(value: Any, size: int) -> None:
    body = JsonBody(value)
    whole = to_json(value)
    assert body.length == len(whole)
    assert b"".join(body.chunks(size)) == whole
    assert body.to_bytes() == whole  # and again: each call encodes anew


def test_frozen_values_models_and_non_string_keys_encode_as_whole() -> None:
    for value in (
        deep_freeze({"messages": [{"role": "user", "content": [{"type": "text", "text": "é"}]}]}),
        {"messages": [UserMessage(content="hi", timestamp=1), TextContent(text="t")]},
        {1: "one", "two": 2},
        {},
        [],
        "text",
    ):
        assert JsonBody(value).to_bytes() == to_json(value)


def test_chunks_gather_small_pieces_and_keep_a_large_one_whole() -> None:
    messages = [{"role": "user", "content": f"message {n}"} for n in range(1_000)]
    body = JsonBody({"model": "m", "messages": messages})
    chunks = list(body.chunks(4096))
    assert len(chunks) < 20 and all(len(chunk) < 4096 + 64 for chunk in chunks)
    large = "x" * 10_000
    assert max(len(chunk) for chunk in JsonBody({"messages": [large]}).chunks(4096)) == len(large) + 2
