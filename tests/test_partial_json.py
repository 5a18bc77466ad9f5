"""Best-effort parsing of tool-call arguments while their JSON streams in, and repair of sloppy JSON."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_host.providers._partial_json import (
    StreamingJson,
    parse_json_with_repair,
    parse_streaming_json,
    parse_tool_arguments,
    repair_json,
)


def fed(text: str, step: int = 1) -> StreamingJson:
    parser = StreamingJson()
    for index in range(0, len(text), step):
        parser.feed(text[index : index + step])
    return parser


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"path": "/tm', {"path": "/tm"}),
        ('{"a": 1, "b', {"a": 1}),
        ('{"a": 1, "b": ', {"a": 1}),
        ('{"a": 1,', {"a": 1}),
        ('{"a": 12', {"a": 12}),
        ('{"a": 1.', {}),
        ('{"a": tr', {}),
        ('{"a": true', {"a": True}),
        ('{"a": null', {"a": None}),
        ('{"a": [1, 2,', {"a": [1, 2]}),
        ('{"a": [1, {"b": "x', {"a": [1, {"b": "x"}]}),
        ('{"a": "x\\', {"a": "x"}),
        ('{"a": "\\u00', {"a": ""}),
        ('{"a": "\\u00e9', {"a": "é"}),
        ('{"a": "say \\"hi', {"a": 'say "hi'}),
        ("{", {}),
        ('{"', {}),
        ('{"k"', {}),
        ('{"k":', {}),
        ("", None),
        ('"str', "str"),
        ("[1, [2, [3", [1, [2, [3]]]),
    ],
)
def test_partial_values(text: str, expected: Any) -> None:
    assert fed(text).value() == expected
    assert fed(text, step=3).value() == expected


def test_complete_text_parses_exactly() -> None:
    text = '{"path": "a.txt", "edits": [{"old": "x", "new": "y\\n"}], "n": -1.5e3, "ok": false}'
    assert fed(text).value() == json.loads(text)


def test_trailing_garbage_keeps_the_valid_prefix() -> None:
    assert fed('{"a": 1}}').value() == {"a": 1}
    assert fed('{"a": 1} extra').value() == {"a": 1}


def test_raw_control_characters_and_invalid_escapes_are_repaired() -> None:
    assert fed('{"a": "line\nbreak"}').value() == {"a": "line\nbreak"}
    assert fed('{"a": "C:\\dir"}').value() == {"a": "C:\\dir"}
    assert fed('{"a": "C:\\dir\\sub').value() == {"a": "C:\\dir\\sub"}


def test_repair_json() -> None:
    assert repair_json('{"a": "x\\qy"}') == '{"a": "x\\\\qy"}'
    assert repair_json('{"a": "tab\there"}') == '{"a": "tab\\there"}'
    assert repair_json('{"a": "\x01"}') == '{"a": "\\u0001"}'
    assert repair_json('{"a": "\\u12G4"}') == '{"a": "\\\\u12G4"}'
    assert repair_json('{"ok": "\\n\\"\\u00e9"}') == '{"ok": "\\n\\"\\u00e9"}'
    assert repair_json('{"k": 1}\n') == '{"k": 1}\n'  # control characters outside strings stay


def test_parse_json_with_repair() -> None:
    assert parse_json_with_repair('{"a": "x\\qy"}') == {"a": "x\\qy"}
    with pytest.raises(ValueError):
        parse_json_with_repair("{nope")


def test_parse_streaming_json_and_tool_arguments() -> None:
    assert parse_streaming_json("") == {}
    assert parse_streaming_json("   ") == {}
    assert parse_streaming_json("garbage") == {}
    assert parse_streaming_json('{"a": [1') == {"a": [1]}
    assert parse_tool_arguments("[1, 2]") == {}
    assert parse_tool_arguments('"text"') == {}
    assert parse_tool_arguments('{"a": 1') == {"a": 1}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)


def _is_prefix_of(partial: Any, full: Any) -> bool:
    """Whether a best-effort value could have been read from a prefix of ``full``."""
    if isinstance(full, dict):
        return isinstance(partial, dict) and all(
            key in full and _is_prefix_of(value, full[key]) for key, value in partial.items()
        )
    if isinstance(full, list):
        return (
            isinstance(partial, list)
            and len(partial) <= len(full)
            and all(_is_prefix_of(p, f) for p, f in zip(partial, full, strict=False))
        )
    if isinstance(full, str):
        return isinstance(partial, str) and full.startswith(partial)
    if isinstance(full, float | int) and not isinstance(full, bool):
        return isinstance(partial, int | float) and not isinstance(partial, bool)
    return partial == full


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(max_size=8), json_values, max_size=5), st.sampled_from([True, False]))
def test_every_prefix_gives_a_consistent_value(value: dict[str, Any], ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    parser = StreamingJson()
    for char in text:
        parser.feed(char)
        partial = parser.value()
        assert partial is None or _is_prefix_of(partial, value), (parser.text, partial)
    assert parser.value() == value
    assert parse_streaming_json(text) == value


def test_feeding_is_linear_not_quadratic() -> None:
    # A 200 KB "write" call in 4000 fragments: each fragment costs its own length in Python,
    # the whole-text work happens in C. pi re-parses everything in JavaScript on every fragment.
    content = "x" * 200_000
    text = json.dumps({"path": "big.txt", "content": content})
    parser = StreamingJson()
    started = time.perf_counter()
    for index in range(0, len(text), 50):
        parser.feed(text[index : index + 50])
        parser.value()
    elapsed = time.perf_counter() - started
    assert parser.value() == {"path": "big.txt", "content": content}
    # Well under a second here; re-parsing the whole text per fragment takes minutes, so a
    # generous bound tells the two apart on a loaded machine.
    assert elapsed < 30, f"{elapsed:.2f} s"


# parse_json_with_repair tries pydantic-core's parser first; it must never disagree with the
# json module on a text it accepts (what it refuses falls back to the json module).
_TRICKY_TEXTS = [
    '{"a":1,"a":2}',
    "-0",
    "1E2",
    "1e400",
    "-1e400",
    "5e-324",
    "1e-400",
    "0.1e1",
    "2.2250738585072014e-308",
    "1.7976931348623157e308",
    "123456789012345678901234567890",
    '"\\ud83d\\ude00"',
    '"\\ud800"',
    '"\\/\\b\\f\\n\\r\\t\\u00e9"',
    "NaN",
    "[Infinity,-Infinity]",
    '"a\tb"',
    ' {"x": [1, 2.50, true, null]} \n',
    "\ufeff{}",
    '{"k": 1}x',
    "[1,]",
    "01",
    "1.",
    '"\\x"',
]
_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=20,
)


def _outcome(parse: Any, text: str) -> tuple[str, Any]:
    try:
        return "ok", repr(parse(text))
    except ValueError as exc:
        return "error", str(exc)


def _json_module_only(text: str) -> Any:
    """parse_json_with_repair as it was before the fast parser."""
    decode = json.JSONDecoder(strict=False).decode
    try:
        return decode(text)
    except ValueError:
        repaired = repair_json(text)
        if repaired == text:
            raise
        return decode(repaired)


@pytest.mark.parametrize("text", _TRICKY_TEXTS)
def test_the_fast_parser_agrees_with_the_json_module(text: str) -> None:
    from pydantic_core import from_json

    fast = _outcome(from_json, text)
    if fast[0] == "ok":
        assert fast == _outcome(json.JSONDecoder(strict=False).decode, text)
    # Values and error messages alike.
    assert _outcome(parse_json_with_repair, text) == _outcome(_json_module_only, text)


@settings(max_examples=300)
@given(_json_values, st.booleans())
def test_the_fast_parser_agrees_on_any_json(value: Any, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert repr(parse_json_with_repair(text)) == repr(json.loads(text))
