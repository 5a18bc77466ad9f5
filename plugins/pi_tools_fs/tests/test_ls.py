"""``ls``: pi's scenario, its collation order, limits and errors."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from pi_tools_fs import ls_tool

if TYPE_CHECKING:
    from conftest import Caller


async def test_lists_dotfiles_and_directories(call: Caller, tmp_path: Path) -> None:
    (tmp_path / ".hidden-file").write_text("secret")
    (tmp_path / ".hidden-dir").mkdir()
    assert await call.text(ls_tool, {"path": str(tmp_path)}) == ".hidden-dir/\n.hidden-file"


async def test_sorts_like_locale_compare(call: Caller, tmp_path: Path) -> None:
    # The order Node gives with a.toLowerCase().localeCompare(b.toLowerCase()).
    expected = [
        "_a",
        "10",
        "1a",
        "9",
        "a",
        "ä",
        "a_b",
        "a-b",
        "a.b",
        "ab",
        "b",
        "e",
        "é",
        "f",
        "foo",
        "foo_bar",
        "foo-bar",
        "foo.txt",
        "fooBar",
        "z",
    ]
    for name in reversed(expected):
        (tmp_path / name).write_text("")
    (tmp_path / "foo_bar").unlink()
    (tmp_path / "foo_bar").mkdir()
    output = await call.text(ls_tool, {})
    assert output.split("\n") == [name + ("/" if name == "foo_bar" else "") for name in expected]


async def test_limit_notice(call: Caller, tmp_path: Path) -> None:
    for name in "abcde":
        (tmp_path / name).write_text("")
    result = await call(ls_tool, {"limit": 2})
    assert call.text_of(result) == "a\nb\n\n[2 entries limit reached. Use limit=4 for more]"
    assert result.details == {"entryLimitReached": 2}


async def test_empty_and_dangling_links(call: Caller, tmp_path: Path) -> None:
    assert await call.text(ls_tool, {}) == "(empty directory)"
    os.symlink(tmp_path / "missing", tmp_path / "dangling")
    (tmp_path / "dir").mkdir()
    os.symlink(tmp_path / "dir", tmp_path / "link-to-dir")
    assert await call.text(ls_tool, {}) == "dir/\nlink-to-dir/"


async def test_errors(call: Caller, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(Exception, match=f"^Path not found: {tmp_path}/missing$"):
        await call(ls_tool, {"path": "missing"})
    with pytest.raises(Exception, match=f"^Not a directory: {tmp_path}/file$"):
        await call(ls_tool, {"path": "file"})


async def test_byte_cap(call: Caller, tmp_path: Path) -> None:
    for index in range(400):
        (tmp_path / f"{index:03d}-{'n' * 200}").write_text("")
    result = await call(ls_tool, {})
    assert call.text_of(result).endswith("\n\n[50.0KB limit reached]")
    assert result.details["truncation"]["maxLines"] == 2**53 - 1
