"""Shared truncation and size formatting, as pi computes them."""

from __future__ import annotations

import pytest
from pi_tools_fs import truncate_head, truncate_line, truncate_tail
from pi_tools_fs._text import format_size, js_length


@pytest.mark.parametrize(
    ("size", "text"),
    [(0, "0B"), (1023, "1023B"), (1024, "1.0KB"), (1280, "1.3KB"), (51200, "50.0KB"), (1536 * 1024, "1.5MB")],
)
def test_format_size(size: int, text: str) -> None:
    # 1280 / 1024 = 1.25 exactly: JavaScript's toFixed rounds it up, Python's format would not.
    assert format_size(size) == text


def test_head_within_limits() -> None:
    result = truncate_head("a\nb")
    assert (result.truncated, result.total_lines, result.content) == (False, 2, "a\nb")
    assert result.to_details()["truncatedBy"] is None


def test_head_by_lines_and_bytes() -> None:
    by_lines = truncate_head("\n".join("x" for _ in range(10)), max_lines=3)
    assert (by_lines.content, by_lines.truncated_by, by_lines.output_lines) == ("x\nx\nx", "lines", 3)
    by_bytes = truncate_head("aaaa\nbbbb\ncccc", max_bytes=9)
    assert (by_bytes.content, by_bytes.truncated_by) == ("aaaa\nbbbb", "bytes")
    first = truncate_head("é" * 10 + "\nx", max_bytes=10)
    assert (first.content, first.first_line_exceeds_limit) == ("", True)


def test_tail_keeps_the_end_and_a_partial_last_line() -> None:
    assert truncate_tail("1\n2\n3\n4", max_lines=2).content == "3\n4"
    partial = truncate_tail("short\n" + "€" * 10, max_bytes=7)
    assert partial.content == "€€" and partial.last_line_partial is True


def test_line_truncation_counts_utf16_units() -> None:
    assert truncate_line("abc", 3) == ("abc", False)
    assert truncate_line("abcd", 3) == ("abc... [truncated]", True)
    assert js_length("😀") == 2
    assert truncate_line("😀😀", 3) == ("😀... [truncated]", True)
