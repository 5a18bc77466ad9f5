"""Output truncation and size formatting for tool authors, against pi's rules and texts."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_host import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_LINES,
    format_size,
    truncate_head,
    truncate_line,
    truncate_tail,
)


def test_limits_are_pis() -> None:
    assert (DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES) == (2000, 50 * 1024)


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (0, "0B"),
        (1023, "1023B"),
        (1024, "1.0KB"),
        (1280, "1.3KB"),  # 1.25 rounds half up, as JavaScript's toFixed does
        (50 * 1024, "50.0KB"),
        (200_000, "195.3KB"),
        (1024 * 1024, "1.0MB"),
        (1536 * 1024, "1.5MB"),
        (int(9.55 * 1024 * 1024), "9.5MB"),
    ],
)
def test_format_size(size: int, text: str) -> None:
    assert format_size(size) == text


def test_head_within_limits() -> None:
    result = truncate_head("a\nb")
    assert (result.truncated, result.total_lines, result.content) == (False, 2, "a\nb")
    assert result.to_json_dict()["truncatedBy"] is None


def test_head_by_lines_and_bytes() -> None:
    by_lines = truncate_head("\n".join("x" for _ in range(10)), max_lines=3)
    assert (by_lines.content, by_lines.truncated_by, by_lines.output_lines) == ("x\nx\nx", "lines", 3)
    by_bytes = truncate_head("aaaa\nbbbb\ncccc", max_bytes=9)
    assert (by_bytes.content, by_bytes.truncated_by) == ("aaaa\nbbbb", "bytes")
    first = truncate_head("é" * 10 + "\nx", max_bytes=10)
    assert (first.content, first.first_line_exceeds_limit) == ("", True)


def test_tail_within_limits_is_untouched() -> None:
    result = truncate_tail("a\nb\n")
    assert result.content == "a\nb\n"
    assert not result.truncated
    assert result.truncated_by is None
    # pi counts the empty string after a final newline as a line.
    assert (result.total_lines, result.output_lines) == (3, 3)
    assert result.total_bytes == result.output_bytes == 4


def test_tail_line_limit_keeps_the_last_lines() -> None:
    text = "\n".join(f"line {i}" for i in range(1, 11))
    result = truncate_tail(text, max_lines=3)
    assert result.content == "line 8\nline 9\nline 10"
    assert result.truncated and result.truncated_by == "lines"
    assert (result.total_lines, result.output_lines) == (10, 3)


def test_tail_byte_limit_keeps_whole_lines() -> None:
    text = "\n".join(["x" * 10] * 10)
    result = truncate_tail(text, max_bytes=25)
    # Two lines of 10 bytes plus one newline fit in 25; a third would need 32.
    assert result.content == "x" * 10 + "\n" + "x" * 10
    assert result.truncated_by == "bytes"
    assert not result.last_line_partial
    assert result.output_bytes == 21


def test_tail_an_oversized_last_line_keeps_its_end_on_a_character_boundary() -> None:
    text = "start\n" + "é" * 20  # two bytes per character
    result = truncate_tail(text, max_bytes=9)
    assert result.last_line_partial
    assert result.truncated_by == "bytes"
    assert result.content == "é" * 4
    assert result.output_lines == 1
    partial = truncate_tail("short\n" + "€" * 10, max_bytes=7)
    assert partial.content == "€€" and partial.last_line_partial is True


def test_lone_surrogates_count_as_a_replacement_character() -> None:
    # Node measures a lone surrogate (JSON input, an undecodable file name) as U+FFFD: 3 bytes.
    text = "a\udcff\nb"
    assert truncate_head(text).total_bytes == truncate_tail(text).total_bytes == 6
    head = truncate_head(text, max_bytes=4)
    assert (head.content, head.output_bytes) == ("a\udcff", 4)
    tail = truncate_tail("\ud800" * 4, max_bytes=7)
    assert (tail.content, tail.output_bytes, tail.last_line_partial) == ("\ufffd\ufffd", 6, True)


def test_result_serialises_with_pis_field_names() -> None:
    assert set(truncate_tail("a").to_json_dict()) == {
        "content",
        "truncated",
        "truncatedBy",
        "totalLines",
        "totalBytes",
        "outputLines",
        "outputBytes",
        "lastLinePartial",
        "firstLineExceedsLimit",
        "maxLines",
        "maxBytes",
    }


def test_line_truncation_counts_utf16_units() -> None:
    assert truncate_line("abc", 3) == ("abc", False)
    assert truncate_line("abcd", 3) == ("abc... [truncated]", True)
    assert truncate_line("😀", 2) == ("😀", False)
    assert truncate_line("😀😀", 3) == ("😀... [truncated]", True)
    assert truncate_line("x" * 500) == ("x" * 500, False)
    assert truncate_line("x" * 501) == ("x" * 500 + "... [truncated]", True)


def _reference_truncate_tail(
    content: str, max_lines: int, max_bytes: int
) -> tuple[str, str | None, int, bool]:
    """The rule spelled out the simple way: split everything, keep lines from the end."""
    lines = content.split("\n")
    if len(lines) <= max_lines and len(content.encode()) <= max_bytes:
        return content, None, len(lines), False
    kept: list[str] = []
    size = 0
    by = "lines"
    partial = False
    for line in reversed(lines):
        if len(kept) >= max_lines:
            break
        cost = len(line.encode()) + (1 if kept else 0)
        if size + cost > max_bytes:
            by = "bytes"
            if not kept:
                data = line.encode()[-max_bytes:] if max_bytes else b""
                kept.append(data.decode("utf-8", "ignore"))
                partial = True
            break
        kept.append(line)
        size += cost
    if len(kept) >= max_lines and size <= max_bytes:
        by = "lines"
    return "\n".join(reversed(kept)), by, len(kept), partial


@settings(max_examples=400, deadline=None)
@given(
    content=st.text(alphabet=st.sampled_from(["a", "é", "€", "😀", "\n", " "]), max_size=80),
    max_lines=st.integers(min_value=1, max_value=12),
    max_bytes=st.integers(min_value=1, max_value=40),
)
def test_truncate_tail_agrees_with_the_simple_rule(content: str, max_lines: int, max_bytes: int) -> None:
    result = truncate_tail(content, max_lines=max_lines, max_bytes=max_bytes)
    expected, by, lines, partial = _reference_truncate_tail(content, max_lines, max_bytes)
    assert (result.content, result.truncated_by, result.output_lines, result.last_line_partial) == (
        expected,
        by,
        lines,
        partial,
    )
    assert result.output_bytes == len(result.content.encode())
    assert result.total_lines == content.count("\n") + 1
    assert result.total_bytes == len(content.encode())


def test_the_packages_limits_are_the_truncation_defaults() -> None:
    import pi_host
    import pi_host.agent
    from pi_host.agent import _limits, _truncate

    assert (_truncate.DEFAULT_MAX_BYTES, _truncate.DEFAULT_MAX_LINES) == (
        _limits.DEFAULT_MAX_BYTES,
        _limits.DEFAULT_MAX_LINES,
    )
    assert pi_host.DEFAULT_MAX_BYTES == pi_host.agent.DEFAULT_MAX_BYTES == 50 * 1024
    # The lazy names resolve to the truncation module's objects.
    assert pi_host.agent.truncate_head is _truncate.truncate_head
    assert pi_host.truncate_tail is _truncate.truncate_tail
    assert pi_host.agent.TruncationResult is _truncate.TruncationResult
