"""Session entry models and the JavaScript-compatible JSON they serialise to."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_host.messages import AssistantMessage, CustomMessage, TextContent, UserMessage
from pi_host.session import (
    BranchSummaryEntry,
    CompactionEntry,
    CustomEntry,
    CustomMessageEntry,
    LabelEntry,
    ModelChangeEntry,
    SessionHeader,
    SessionInfoEntry,
    SessionMessageEntry,
    ThinkingLevelChangeEntry,
    UnknownEntry,
    parse_entry,
    parse_header,
)
from pi_host.session._entries import iso_now, iso_to_ms
from pi_host.session._jsjson import _slow_dumps, js_dumps, js_number

DATA = Path(__file__).parent / "data" / "session"
T = "2025-01-02T03:04:05.678Z"


def test_root_entry_writes_parent_id_null_and_omits_other_unset_fields() -> None:
    entry = CompactionEntry(id="abcd1234", timestamp=T, summary="s", first_kept_entry_id="x", tokens_before=5)
    assert entry.to_json() == (
        '{"type":"compaction","id":"abcd1234","parentId":null,"timestamp":"2025-01-02T03:04:05.678Z",'
        '"summary":"s","firstKeptEntryId":"x","tokensBefore":5}'
    )


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (
            ModelChangeEntry(id="a", parent_id="p", timestamp=T, provider="openai", model_id="gpt-4o"),
            '{"type":"model_change","id":"a","parentId":"p","timestamp":"T","provider":"openai","modelId":"gpt-4o"}',
        ),
        (
            ThinkingLevelChangeEntry(id="a", parent_id="p", timestamp=T, thinking_level="high"),
            '{"type":"thinking_level_change","id":"a","parentId":"p","timestamp":"T","thinkingLevel":"high"}',
        ),
        (
            BranchSummaryEntry(
                id="a", parent_id=None, timestamp=T, from_id="root", summary="s", from_hook=True
            ),
            '{"type":"branch_summary","id":"a","parentId":null,"timestamp":"T","fromId":"root","summary":"s",'
            '"fromHook":true}',
        ),
        (
            CustomEntry(id="a", parent_id="p", timestamp=T, custom_type="x", data={"n": None}),
            '{"type":"custom","customType":"x","data":{"n":null},"id":"a","parentId":"p","timestamp":"T"}',
        ),
        (
            CustomEntry(id="a", parent_id=None, timestamp=T, custom_type="x"),
            '{"type":"custom","customType":"x","id":"a","parentId":null,"timestamp":"T"}',
        ),
        (
            CustomMessageEntry(
                id="a", parent_id="p", timestamp=T, custom_type="x", content="hi", display=False
            ),
            '{"type":"custom_message","customType":"x","content":"hi","display":false,"id":"a","parentId":"p",'
            '"timestamp":"T"}',
        ),
        (
            LabelEntry(id="a", parent_id="p", timestamp=T, target_id="t", label=None),
            '{"type":"label","id":"a","parentId":"p","timestamp":"T","targetId":"t"}',
        ),
        (
            SessionInfoEntry(id="a", parent_id="p", timestamp=T, name="n"),
            '{"type":"session_info","id":"a","parentId":"p","timestamp":"T","name":"n"}',
        ),
        (
            SessionHeader(id="s", timestamp=T, cwd="/w", parent_session="/p.jsonl"),
            '{"type":"session","version":3,"id":"s","timestamp":"T","cwd":"/w","parentSession":"/p.jsonl"}',
        ),
    ],
)
def test_field_order_matches_pi(entry: SessionHeader | SessionMessageEntry, expected: str) -> None:
    assert entry.to_json() == expected.replace('"T"', f'"{T}"')


def test_every_line_pi_wrote_reserialises_from_the_model_fields() -> None:
    """The fixture was written by pi 0.73's SessionManager (tests/data/session/make_pi_fixtures.mjs)."""
    lines = (DATA / "pi073_session.jsonl").read_text("utf-8").split("\n")[:-1]
    header = parse_header(lines[0])
    assert js_dumps(header.to_json_dict()) == lines[0]
    kinds = set()
    for line in lines[1:]:
        entry = parse_entry(line)
        kinds.add(entry.type)
        assert not isinstance(entry, UnknownEntry)
        assert js_dumps(entry.to_json_dict()) == line  # from the fields, not the remembered line
        assert entry.to_json() == line
    assert kinds == {
        "message",
        "thinking_level_change",
        "model_change",
        "compaction",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "session_info",
    }


def test_an_entry_read_from_a_line_serialises_to_that_line_until_changed() -> None:
    # pi's anthropic provider adds responseId after timestamp; the model orders fields its own way.
    line = (
        '{"type":"message","id":"3132a605","parentId":"a844816b","timestamp":"2026-01-01T00:00:00.668Z",'
        '"message":{"role":"assistant","content":[],"api":"anthropic-messages","provider":"fake",'
        '"model":"m","usage":{"input":12,"output":20,"cacheRead":0,"cacheWrite":0,"totalTokens":32,'
        '"cost":{"input":0.000036,"output":0.0003,"cacheRead":0,"cacheWrite":0,"total":0.000336}},'
        '"stopReason":"toolUse","timestamp":1796026130621,"responseId":"msg_1"}}'
    )
    entry = parse_entry(line)
    assert entry.to_json() == line
    assert parse_entry(line.encode()).to_json() == line
    changed = entry.model_copy(update={"parent_id": None})
    assert '"parentId":null' in changed.to_json()
    assert json.loads(changed.to_json())["message"] == json.loads(line)["message"]


def test_unknown_entry_types_are_kept_with_all_their_fields() -> None:
    line = '{"type":"future_thing","id":"f1","parentId":"p","timestamp":"t","payload":{"a":[1,2]}}'
    entry = parse_entry(line)
    assert isinstance(entry, UnknownEntry)
    assert (entry.type, entry.id, entry.parent_id, entry.reason) == ("future_thing", "f1", "p", None)
    assert entry.to_json() == line
    assert json.loads(js_dumps(entry.to_json_dict())) == json.loads(line)


def test_a_known_type_with_bad_fields_becomes_unknown_with_a_reason() -> None:
    entry = parse_entry(
        '{"type":"message","id":"m1","parentId":null,"timestamp":"t","message":{"role":"alien"}}'
    )
    assert isinstance(entry, UnknownEntry)
    assert entry.type == "message"
    assert entry.reason is not None and "message" in entry.reason


@pytest.mark.parametrize(
    "line", ["not json", "[1,2]", '{"type":"message"}', '{"id":"x"}', '{"type":"label","id":5}', ""]
)
def test_lines_that_are_not_entries_are_rejected(line: str) -> None:
    with pytest.raises(ValueError, match=r"not a session entry|Expecting|Extra data"):
        parse_entry(line)


def test_hook_message_role_of_old_files_reads_as_custom() -> None:
    entry = parse_entry(
        '{"type":"message","id":"m","parentId":null,"timestamp":"t",'
        '"message":{"role":"hookMessage","customType":"h","content":"x","display":true,"timestamp":1}}'
    )
    assert isinstance(entry, SessionMessageEntry)
    assert isinstance(entry.message, CustomMessage)
    assert '"role":"custom"' in entry.to_json()


def test_lone_surrogates_read_and_write_like_javascript() -> None:
    line = '{"type":"session_info","id":"a","parentId":null,"timestamp":"t","name":"bad \\ud800 half"}'
    entry = parse_entry(line)
    assert isinstance(entry, SessionInfoEntry)
    assert entry.name == "bad \ud800 half"
    assert js_dumps(entry.to_json_dict()) == line


def test_message_entry_accepts_every_agent_message() -> None:
    user = SessionMessageEntry(id="a", timestamp=T, message=UserMessage(content="hi", timestamp=1))
    assistant = SessionMessageEntry(
        id="b",
        parent_id="a",
        timestamp=T,
        message=AssistantMessage(content=[TextContent(text="yo")], timestamp=2),
    )
    assert parse_entry(user.to_json()) == user
    assert parse_entry(assistant.to_json()) == assistant


def test_headers_are_validated() -> None:
    header = parse_header('{"type":"session","id":"x","timestamp":"t","cwd":"/"}')
    assert header.version is None  # a version 1 header
    assert header.to_json() == '{"type":"session","id":"x","timestamp":"t","cwd":"/"}'
    for bad in ('{"type":"message","id":"x"}', '{"type":"session"}', "[]"):
        with pytest.raises(ValueError):
            parse_header(bad)


def test_timestamps_look_like_javascript_to_iso_string() -> None:
    stamp = iso_now()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", stamp)
    moment = datetime.fromisoformat(stamp)
    assert abs((datetime.now(UTC) - moment).total_seconds()) < 5
    assert iso_to_ms("2026-11-30T08:08:50.669Z") == 1796026130669
    assert iso_to_ms("1970-01-01T00:00:00.001Z") == 1
    assert iso_to_ms("garbage") == 0


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.000036, "0.000036"),
        (0.00030000000000000003, "0.00030000000000000003"),
        (1e-7, "1e-7"),
        (1e-6, "0.000001"),
        (1.5e-5, "0.000015"),
        (1.0, "1"),
        (-0.0, "0"),
        (1e21, "1e+21"),
        (1e16, "10000000000000000"),
        (9007199254740994.0, "9007199254740994"),
        (123.456, "123.456"),
        (-0.0001, "-0.0001"),
        (123456789012345680000.0, "123456789012345680000"),
        (2.0**60, "1152921504606847000"),
        (0.1 + 0.2, "0.30000000000000004"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (float("nan"), "null"),
        (float("inf"), "null"),
    ],
)
def test_numbers_format_like_javascript(value: float, text: str) -> None:
    assert js_number(value) == text


def test_strings_and_keys_serialise_like_javascript() -> None:
    assert js_dumps({"b": 1, "2": 2, "1": 3, "01": 4, "4294967295": 5}) == (
        '{"1":3,"2":2,"b":1,"01":4,"4294967295":5}'
    )
    assert js_dumps('a"b\\c\n\x00\x1f\x7f\u2028é😀') == '"a\\"b\\\\c\\n\\u0000\\u001f\x7f\u2028é😀"'
    assert js_dumps([None, True, False, 3, [], {}]) == "[null,true,false,3,[],{}]"
    with pytest.raises(TypeError, match="not JSON serializable"):
        js_dumps({"x": object()})


def test_floats_nested_anywhere_are_written_like_javascript() -> None:
    value = {"cost": {"input": 1.5e-5, "total": 0.0, "n": 3}, "list": [1e21, (2.5, -0.0)], "f": 1e-7}
    expected = '{"cost":{"input":0.000015,"total":0,"n":3},"list":[1e+21,[2.5,0]],"f":1e-7}'
    assert js_dumps(value) == expected
    assert js_dumps(0.1) == "0.1"
    assert js_dumps([float("nan"), float("inf")]) == "[null,null]"


@pytest.mark.parametrize(
    "value",
    [
        # Strings that encode like the fast path's float placeholders ("\u0000 and digits).
        ["\x000", 1.5],
        {"a": "\x001", "b": 2.5, "c": 'x"\x000'},
        ['"\x000"', 0.5, "\x00"],
        # Keys JavaScript writes first, or as text, and values of other types.
        {"b": 1.5, "1": 2},
        {1: 0.5, 2.0: "x", None: 1, False: 2},
        {"s": "lone \ud800 surrogate", "f": 1e-9},
        [True, 1, 1.0, "1"],
    ],
)
def test_fast_and_token_by_token_writers_agree(value: object) -> None:
    assert js_dumps(value) == _slow_dumps(value)


def test_subclasses_of_plain_types_are_written_as_their_base_type() -> None:
    class Text(str):
        pass

    class Number(float):
        pass

    class Mapping(dict[str, object]):
        pass

    value = Mapping(a=Text("x"), b=Number(1e-7), c=[Number(2.0)])
    assert js_dumps(value) == '{"a":"x","b":1e-7,"c":[2]}'


_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@settings(max_examples=1, deadline=None)
@given(st.lists(_json_values, min_size=300, max_size=300))
def test_js_dumps_equals_json_stringify(values: list[object]) -> None:
    text = json.dumps(values)
    script = (
        "let s='';process.stdin.on('data',d=>s+=d)"
        ".on('end',()=>{for(const v of JSON.parse(s))console.log(JSON.stringify(v))})"
    )
    done = subprocess.run(["node", "-e", script], input=text, capture_output=True, text=True, check=True)
    expected = done.stdout.split("\n")[:-1]
    assert [js_dumps(value) for value in json.loads(text)] == expected


_awkward_text = st.text(alphabet=st.sampled_from('\x00"\\0123456789u\ud800\udc00aé'), max_size=6)
_awkward_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats()
    | _awkward_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_awkward_text, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(_awkward_values)
def test_fast_writer_equals_the_token_by_token_one(value: object) -> None:
    # Strings made of the characters the fast path's placeholders and key checks look at.
    assert js_dumps(value) == _slow_dumps(value)
