"""``read``: pi's tools.test.ts read scenarios, the streaming window against pi's algorithm,
images, and the memory bound on huge files."""

from __future__ import annotations

import base64
import os
import struct
import subprocess
import sys
import tempfile
import textwrap
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pi_tools_fs import create_read_tool, read_tool, truncate_head
from pi_tools_fs._text import utf8_length

from pi_host import AbortSignal, ImageContent, TextContent, ToolCallContext, format_size

if TYPE_CHECKING:
    from conftest import Caller

PNG_1X1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAX+XDSwAAAABJRU5ErkJggg=="
)


def lines(count: int, fmt: str = "Line {}") -> str:
    return "\n".join(fmt.format(i + 1) for i in range(count))


async def test_reads_file_within_limits(call: Caller, tmp_path: Path) -> None:
    (tmp_path / "test.txt").write_text("Hello, world!\nLine 2\nLine 3")
    result = await call(read_tool, {"path": str(tmp_path / "test.txt")})
    assert call.text_of(result) == "Hello, world!\nLine 2\nLine 3"
    assert result.details is None


async def test_missing_file_reports_enoent(call: Caller, tmp_path: Path) -> None:
    with pytest.raises(Exception, match=r"ENOENT: no such file or directory, access '.*nonexistent.txt'"):
        await call(read_tool, {"path": str(tmp_path / "nonexistent.txt")})


async def test_truncates_at_line_limit(call: Caller, tmp_path: Path) -> None:
    (tmp_path / "large.txt").write_text(lines(2500))
    result = await call(read_tool, {"path": "large.txt"})
    output = call.text_of(result)
    assert "Line 2000\n" in output and "Line 2001" not in output
    assert output.endswith("\n\n[Showing lines 1-2000 of 2500. Use offset=2001 to continue.]")
    truncation = result.details["truncation"]
    assert truncation["truncated"] is True
    assert truncation["truncatedBy"] == "lines"
    assert truncation["totalLines"] == 2500
    assert truncation["outputLines"] == 2000


async def test_truncates_at_byte_limit(call: Caller, tmp_path: Path) -> None:
    (tmp_path / "large-bytes.txt").write_text(lines(500, "Line {}: " + "x" * 200))
    output = await call.text(read_tool, {"path": "large-bytes.txt"})
    assert output.startswith("Line 1:")
    # 50 KB holds 243 of these lines: 9..11 + 200 bytes each plus newlines.
    assert output.endswith("[Showing lines 1-243 of 500 (50.0KB limit). Use offset=244 to continue.]")


async def test_offset(call: Caller, tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text(lines(100))
    output = await call.text(read_tool, {"path": "f.txt", "offset": 51})
    assert output == lines(100).split("\n", 50)[50]
    assert "Use offset=" not in output


async def test_limit(call: Caller, tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text(lines(100))
    output = await call.text(read_tool, {"path": "f.txt", "limit": 10})
    assert output == lines(10) + "\n\n[90 more lines in file. Use offset=11 to continue.]"


async def test_offset_and_limit(call: Caller, tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text(lines(100))
    output = await call.text(read_tool, {"path": "f.txt", "offset": 41, "limit": 20})
    assert output.startswith("Line 41\n") and "Line 60\n\n" in output and "Line 61" not in output
    assert output.endswith("[40 more lines in file. Use offset=61 to continue.]")


async def test_offset_beyond_end(call: Caller, tmp_path: Path) -> None:
    (tmp_path / "short.txt").write_text("Line 1\nLine 2\nLine 3")
    with pytest.raises(Exception, match=r"^Offset 100 is beyond end of file \(3 lines total\)$"):
        await call(read_tool, {"path": "short.txt", "offset": 100})


async def test_single_line_over_byte_limit(call: Caller, tmp_path: Path) -> None:
    (tmp_path / "wide.txt").write_text("short\n" + "y" * 60_000 + "\nafter")
    result = await call(read_tool, {"path": "wide.txt", "offset": 2})
    assert call.text_of(result) == (
        "[Line 2 is 58.6KB, exceeds 50.0KB limit. Use bash: sed -n '2p' wide.txt | head -c 51200]"
    )
    assert result.details["truncation"]["firstLineExceedsLimit"] is True


async def test_path_forms(call: Caller, tmp_path: Path) -> None:
    (tmp_path / "my file.txt").write_text("content")
    assert await call.text(read_tool, {"path": "@my file.txt"}) == "content"
    assert await call.text(read_tool, {"path": "my\u00a0file.txt"}) == "content"


async def test_tilde_expansion(call: Caller, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "notes.md").write_text("home notes")
    assert await call.text(read_tool, {"path": "~/notes.md"}, cwd=tmp_path / "..") == "home notes"


async def test_macos_screenshot_name_variants(call: Caller, tmp_path: Path) -> None:
    (tmp_path / "Screenshot 2024 at 10.00.00\u202fAM.txt").write_text("narrow space")
    assert await call.text(read_tool, {"path": "Screenshot 2024 at 10.00.00 AM.txt"}) == "narrow space"
    (tmp_path / "Capture d\u2019e\u0301cran.txt").write_text("nfd curly")
    assert await call.text(read_tool, {"path": "Capture d'écran.txt"}) == "nfd curly"


async def test_directory_is_an_error(call: Caller, tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    with pytest.raises(Exception, match="EISDIR: illegal operation on a directory, read"):
        await call(read_tool, {"path": "sub"})


async def test_aborted_before_start(call: Caller, tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("x")
    signal = AbortSignal()
    signal.abort()
    with pytest.raises(Exception, match=r"^Operation aborted$"):
        await call(read_tool, {"path": "f.txt"}, signal=signal)


# -- the streaming window agrees with pi's whole-file algorithm -----------------------------


def pi_read(text: str, offset: int | None, limit: int | None, path: str = "f.txt") -> str:
    """pi 0.73's read logic on the whole decoded text, as the reference."""
    all_lines = text.split("\n")
    start = max(0, offset - 1) if offset else 0
    if start >= len(all_lines):
        return f"ERROR Offset {offset} is beyond end of file ({len(all_lines)} lines total)"
    if limit is not None:
        end = min(start + limit, len(all_lines))
        selected = "\n".join(all_lines[start:end])
        user_limited = end - start
    else:
        selected = "\n".join(all_lines[start:])
        user_limited = None
    t = truncate_head(selected)
    if t.first_line_exceeds_limit:
        size = format_size(utf8_length(all_lines[start]))
        first = start + 1
        hint = f"sed -n '{first}p' {path} | head -c 51200"
        return f"[Line {first} is {size}, exceeds 50.0KB limit. Use bash: {hint}]"
    if t.truncated:
        last = start + t.output_lines
        note = "" if t.truncated_by == "lines" else " (50.0KB limit)"
        shown = f"{start + 1}-{last} of {len(all_lines)}{note}"
        return f"{t.content}\n\n[Showing lines {shown}. Use offset={last + 1} to continue.]"
    if user_limited is not None and start + user_limited < len(all_lines):
        remaining = len(all_lines) - (start + user_limited)
        next_offset = start + user_limited + 1
        return f"{t.content}\n\n[{remaining} more lines in file. Use offset={next_offset} to continue.]"
    return t.content


line_text = st.one_of(
    st.text(alphabet="ab \t\r\u00e9\U0001f600", max_size=8),
    st.integers(min_value=0, max_value=70_000).map(lambda n: "w" * n),
    st.integers(min_value=1, max_value=30).map(lambda n: "v" * (n * 1000)),
)


@settings(max_examples=60, deadline=None)
@given(
    file_lines=st.lists(line_text, min_size=0, max_size=40).map(lambda ls: ls * 60 if len(ls) < 3 else ls),
    offset=st.one_of(st.none(), st.integers(min_value=-2, max_value=2500)),
    limit=st.one_of(st.none(), st.integers(min_value=0, max_value=3000)),
    trailing_newline=st.booleans(),
)
def test_window_matches_pi(
    file_lines: list[str], offset: int | None, limit: int | None, trailing_newline: bool
) -> None:
    text = "\n".join(file_lines) + ("\n" if trailing_newline else "")
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "f.txt"
        path.write_bytes(text.encode())
        expected = pi_read(text, offset, limit, path=str(path))
        assert anyio.run(read_via_tool, path, offset, limit) == expected


async def read_via_tool(path: Path, offset: int | None, limit: int | None) -> str:
    args: dict[str, object] = {"path": str(path)}
    if offset is not None:
        args["offset"] = offset
    if limit is not None:
        args["limit"] = limit
    params = read_tool.validate_arguments(args)
    ctx = ToolCallContext(tool_call_id="x", signal=AbortSignal(), cwd=str(path.parent))
    try:
        result = await read_tool.execute(params, ctx)
    except Exception as exc:
        return f"ERROR {exc}"
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


NOT_UTF8_NOTE = (
    "\n\n[The file is not valid UTF-8 (another encoding, or binary): bytes that are not "
    "UTF-8 are shown as \ufffd. edit keeps those bytes as they are.]"
)


async def test_invalid_utf8_is_replaced_and_measured_like_node(call: Caller, tmp_path: Path) -> None:
    # pi shows the replacement characters with no word; the note says what they are.
    (tmp_path / "bad.txt").write_bytes(b"ok\n\xff\xfe\xe2\x82\nend")
    assert await call.text(read_tool, {"path": "bad.txt"}) == "ok\n\ufffd\ufffd\ufffd\nend" + NOT_UTF8_NOTE


async def test_a_real_replacement_character_gets_no_note(call: Caller, tmp_path: Path) -> None:
    (tmp_path / "ok.txt").write_text("fine \ufffd here\n", encoding="utf-8")
    assert await call.text(read_tool, {"path": "ok.txt"}) == "fine \ufffd here\n"


async def test_binary_file_gets_a_note(call: Caller, tmp_path: Path) -> None:
    (tmp_path / "bin.dat").write_bytes(b"ELF\x00\x01\xff")
    assert await call.text(read_tool, {"path": "bin.dat"}) == (
        "ELF\x00\x01\ufffd\n\n[This looks like a binary file: NUL bytes are shown as they are "
        "and bytes that are not UTF-8 as \ufffd.]"
    )


# -- files that are not regular: never opened in a way that blocks --------------------------


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (lambda p: os.mkfifo(p), "a FIFO (named pipe)"),
        (lambda p: os.symlink("/dev/zero", p), "a character device"),
    ],
    ids=["fifo", "dev-zero"],
)
async def test_read_refuses_what_is_not_a_regular_file(
    call: Caller, tmp_path: Path, make: Any, kind: str
) -> None:
    # A FIFO with no writer blocked read forever (no abort helped); /dev/zero never ended.
    make(tmp_path / "special")
    with pytest.raises(Exception, match=r"^Cannot read special: ") as info:
        await call(read_tool, {"path": "special"})
    assert str(info.value) == (
        f"Cannot read special: it is {kind}, not a regular file. Only regular files can be used "
        "here; use bash with a bound (e.g. head -c 4096) to look at a device or pipe."
    )


@pytest.mark.timeout(20)
async def test_edit_and_write_refuse_a_fifo(call: Caller, tmp_path: Path) -> None:
    from pi_tools_fs import edit_tool, write_tool

    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(Exception, match=r"^Cannot edit fifo: it is a FIFO"):
        await call(edit_tool, {"path": "fifo", "edits": [{"oldText": "a", "newText": "b"}]})
    with pytest.raises(Exception, match=r"^Cannot write .*fifo: it is a FIFO"):
        await call(write_tool, {"path": "fifo", "content": "x"})


# -- images ---------------------------------------------------------------------------------


def png(width: int, height: int) -> bytes:
    raw = b"".join(b"\0" + b"\0\0\0" * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


async def test_image_detected_by_magic_not_extension(call: Caller, tmp_path: Path) -> None:
    (tmp_path / "image.txt").write_bytes(PNG_1X1)
    result = await call(read_tool, {"path": "image.txt"})
    assert result.content[0].type == "text"
    assert call.text_of(result) == "Read image file [image/png]"
    image = result.content[1]
    assert image.type == "image" and image.mime_type == "image/png"
    assert base64.b64decode(image.data) == PNG_1X1


async def test_image_extension_with_text_content_is_text(call: Caller, tmp_path: Path) -> None:
    (tmp_path / "not-an-image.png").write_text("definitely not a png")
    result = await call(read_tool, {"path": "not-an-image.png"})
    assert call.text_of(result) == "definitely not a png"
    assert all(block.type == "text" for block in result.content)


@pytest.mark.parametrize(
    ("data", "mime"),
    [
        (
            b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
            b"\xff\xc0\x00\x11\x08\x00\x20\x00\x40\x03\x01\x22\x00\x02\x11\x01\x03\x11\x01\xff\xd9",
            "image/jpeg",
        ),
        (
            b"GIF89a\x10\x00\x08\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00!\xf9\x04\x00\x00\x00\x00\x00;",
            "image/gif",
        ),
        (
            b"RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00\x2f\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00",
            "image/webp",
        ),
    ],
)
async def test_other_image_types(call: Caller, tmp_path: Path, data: bytes, mime: str) -> None:
    (tmp_path / "pic.bin").write_bytes(data)
    result = await call(read_tool, {"path": "pic.bin"})
    assert call.text_of(result) == f"Read image file [{mime}]"
    image = result.content[1]
    assert isinstance(image, ImageContent) and image.mime_type == mime


async def test_oversized_image_is_omitted_with_pi_note(call: Caller, tmp_path: Path) -> None:
    (tmp_path / "big.png").write_bytes(png(2001, 10))
    result = await call(read_tool, {"path": "big.png"})
    assert call.text_of(result) == (
        "Read image file [image/png]\n"
        "[Image omitted: could not be resized below the inline image size limit.]"
    )
    assert len(result.content) == 1


async def test_oversized_image_sent_when_auto_resize_is_off(call: Caller, tmp_path: Path) -> None:
    (tmp_path / "big.png").write_bytes(png(2001, 10))
    result = await call(create_read_tool(auto_resize_images=False), {"path": "big.png"})
    assert [block.type for block in result.content] == ["text", "image"]


async def test_image_at_dimension_limit_is_sent(call: Caller, tmp_path: Path) -> None:
    (tmp_path / "edge.png").write_bytes(png(2000, 3))
    result = await call(read_tool, {"path": "edge.png"})
    assert [block.type for block in result.content] == ["text", "image"]


# -- memory ---------------------------------------------------------------------------------

MEMORY_SCRIPT = textwrap.dedent(
    """
    import resource, sys, anyio
    from pi_host import AbortSignal, ImageContent, TextContent, ToolCallContext
    from pi_tools_fs import read_tool

    async def main():
        ctx = ToolCallContext(tool_call_id="m", signal=AbortSignal(), cwd=".")
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        out = []
        for args in ({"path": sys.argv[1]}, {"path": sys.argv[1], "offset": 1_500_000, "limit": 5},
                     {"path": sys.argv[2]}):
            result = await read_tool.execute(read_tool.validate_arguments(args), ctx)
            text = result.content[0].text
            out.append(text[-120:] if len(out) < 2 else text[:100])
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print((after - before) // 1024)
        for line in out:
            print(repr(line))

    anyio.run(main)
    """
)


def test_reading_100_mb_stays_under_100_mb(tmp_path: Path) -> None:
    many = tmp_path / "many-lines.txt"
    line = b"x" * 63 + b"\n"
    with open(many, "wb") as handle:
        block = line * 16384  # 1 MiB
        for _ in range(100):
            handle.write(block)
    one = tmp_path / "one-line.txt"
    with open(one, "wb") as handle:
        for _ in range(100):
            handle.write(b"y" * (1 << 20))
    proc = subprocess.run(
        [sys.executable, "-c", MEMORY_SCRIPT, str(many), str(one)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    extra_mb, *outputs = proc.stdout.splitlines()
    assert int(extra_mb) < 100, proc.stdout
    assert outputs[0].endswith(
        "[Showing lines 1-800 of 1638401 (50.0KB limit). Use offset=801 to continue.]'"
    )
    assert outputs[1].endswith("[138397 more lines in file. Use offset=1500005 to continue.]'")
    assert "[Line 1 is 100.0MB, exceeds 50.0KB limit. Use bash: sed -n '1p' " in outputs[2]
    os.unlink(many)
    os.unlink(one)
