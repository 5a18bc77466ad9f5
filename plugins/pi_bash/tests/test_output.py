"""OutputAccumulator: incremental decoding, the rolling tail and the spill file."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from pi_bash import OutputAccumulator, TerminalTextFilter


@pytest.fixture
def accumulator() -> Iterator[OutputAccumulator]:
    output = OutputAccumulator(max_lines=10, max_bytes=100)
    yield output
    output.close()
    if output.full_output_path:
        os.unlink(output.full_output_path)


def test_a_character_split_across_chunks_decodes_whole(accumulator: OutputAccumulator) -> None:
    data = "héllo €\n".encode()
    for i in range(len(data)):
        accumulator.append(data[i : i + 1])
    accumulator.finish()
    assert accumulator.snapshot().content == "héllo €\n"


def test_invalid_utf8_becomes_replacement_characters(accumulator: OutputAccumulator) -> None:
    accumulator.append(b"ok \xff\xfe bad \xe2\x82")
    accumulator.finish()
    assert accumulator.snapshot().content == "ok \ufffd\ufffd bad \ufffd"


def test_a_leading_bom_is_dropped(accumulator: OutputAccumulator) -> None:
    accumulator.append(b"\xef\xbb\xbfhi")
    accumulator.finish()
    assert accumulator.snapshot().content == "hi"


def test_small_output_has_no_spill_file(accumulator: OutputAccumulator) -> None:
    accumulator.append(b"a\nb\n")
    accumulator.finish()
    snapshot = accumulator.snapshot(persist_if_truncated=True)
    assert snapshot.full_output_path is None
    assert not snapshot.truncation.truncated


def test_long_output_spills_every_byte_and_keeps_a_bounded_tail(accumulator: OutputAccumulator) -> None:
    data = b"".join(f"line {i}\n".encode() for i in range(5000))
    for start in range(0, len(data), 37):
        accumulator.append(data[start : start + 37])
    accumulator.finish()
    snapshot = accumulator.snapshot(persist_if_truncated=True)
    accumulator.close()
    assert snapshot.full_output_path is not None
    assert os.path.basename(snapshot.full_output_path).startswith("pi-bash-")
    assert snapshot.full_output_path.endswith(".log")
    with open(snapshot.full_output_path, "rb") as spill:
        assert spill.read() == data
    assert os.stat(snapshot.full_output_path).st_mode & 0o777 == 0o600
    truncation = snapshot.truncation
    assert truncation.truncated
    assert truncation.total_lines == 5001
    assert truncation.total_bytes == len(data)
    assert snapshot.content.endswith("line 4999\n")
    assert len(snapshot.content.encode()) <= 100
    # The retained tail stays within four times the byte limit whatever the output size.
    assert len(accumulator._tail.encode()) <= 4 * 100


def test_a_tail_cut_mid_line_shows_only_whole_lines() -> None:
    output = OutputAccumulator(max_lines=1000, max_bytes=10)
    output.append(b"a" * 50 + b"\nlast line\n")
    output.finish()
    snapshot = output.snapshot()
    output.close()
    assert snapshot.content == "last line\n"
    assert snapshot.truncation.truncated_by == "bytes"
    assert snapshot.full_output_path is not None
    os.unlink(snapshot.full_output_path)


def test_the_spill_file_holds_filtered_text_when_there_is_a_filter() -> None:
    output = OutputAccumulator(max_lines=2, max_bytes=1000, text_filter=TerminalTextFilter())
    appended = output.append(b"\x1b[31mred\x1b[0m\r\none\ntwo\n")
    output.finish()
    snapshot = output.snapshot(persist_if_truncated=True)
    output.close()
    assert appended == "red\none\ntwo\n"
    assert snapshot.full_output_path is not None
    with open(snapshot.full_output_path, encoding="utf-8") as spill:
        assert spill.read() == "red\none\ntwo\n"
    os.unlink(snapshot.full_output_path)


def test_append_after_finish_is_an_error(accumulator: OutputAccumulator) -> None:
    accumulator.finish()
    with pytest.raises(RuntimeError, match="after finish"):
        accumulator.append(b"x")
