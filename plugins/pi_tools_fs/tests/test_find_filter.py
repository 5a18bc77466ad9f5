"""``find`` through ripgrep with a name filter: ripgrep leaves out the files whose name cannot
match, and the result is exactly what matching ripgrep's whole listing gives."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from pi_tools_fs import create_find_tool
from pi_tools_fs._external import find_rg
from pi_tools_fs._find import _Listing, _match_listed, _name_filter, _rg_files
from pi_tools_fs._glob import _WIDE_CASE, compile_glob, name_superset

if TYPE_CHECKING:
    from conftest import Caller

RG = find_rg()
pytestmark = pytest.mark.skipif(RG is None, reason="ripgrep not installed")

FILES: dict[str, str] = {
    ".git/HEAD": "ref: x\n",
    ".gitignore": "*.log\n!keep.log\n/build/\nign.md/\ndocs/**/*.tmp\n",
    ".ignore": "by_dotignore.md\n",
    "README.MD": "",
    "readme.md": "",
    "notes.md": "",
    "by_dotignore.md": "",
    "debug.log": "",
    "keep.log": "",
    "build/out.md": "",
    "src/build/inner.md": "",
    "pkg.md/readme.txt": "",
    "pkg.md/deeper/x.py": "",
    "ign.md/y.txt": "",
    "docs/a.tmp": "",
    "docs/x/b.tmp": "",
    "docs/guide.md": "",
    "\u212aelvin.txt": "",  # KELVIN SIGN: 'k' under re.IGNORECASE
    "\u017fort.txt": "",  # LONG S: 's'
    "\u0130dx.txt": "",  # I WITH DOT: 'i'
    "sk.txt": "",
    "SK.TXT": "",
    "ünï code.txt": "",
    "#hash.md": "",
    "!bang.md": "",
    "with space.md": "",
    "a-b_c+d=e@f%g~h.txt": "",
    "star*name.txt": "",
    "q?.txt": "",
    "brace{x}.txt": "",
    "sub/.gitignore": "!debug2.log\n",
    "sub/debug2.log": "",
    "sub/deep/f5.py": "",
    "d10/f55.py": "",
    "d10/F56.PY": "",
}

PATTERNS = [
    "*.md",
    "*.MD",
    "*.log",
    "readme*",
    "README*",
    "pkg.md",
    "*.md/**",
    "ign.md",
    "*.tmp",
    "kelvin.txt",
    "sort.txt",
    "idx.txt",
    "sk.txt",
    "SK.TXT",
    "ünï*",
    "*code.txt",
    "#hash.md",
    "\\#hash.md",
    "!bang.md",
    "with space.md",
    "a-b_c+d=e@f%g~h.txt",
    "star\\*name.txt",
    "q\\?.txt",
    "brace\\{x\\}.txt",
    "{readme,notes}.md",
    "[a-n]*.md",
    "[!r]*.md",
    "?otes.md",
    "d1*/f5*.py",
    "**/deep/*.py",
    "sub/*",
    "*.py",
    "nothing-matches-*",
]


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    config = tmp_path / "config"
    (config / "fd").mkdir(parents=True)
    (config / "fd" / "ignore").write_text("notes.md\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    root = tmp_path / "repo"
    for name, content in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return root


@pytest.fixture
def odd_names(tree: Path) -> Path:
    """Names that are not UTF-8, or hold the byte the fast path stands "/" in with."""
    for name in (b"bad\xff.md", b"odd\x01.md", b"sub/\xe9t\xe9.md"):
        (tree / os.fsdecode(name)).write_text("")
    return tree


async def unfiltered(root: Path, pattern: str) -> list[str]:
    """What matching ripgrep's whole listing gives (the tool's result before the filter)."""
    assert RG is not None
    full_path = "/" in pattern
    if full_path and not pattern.startswith(("/", "**/")):
        pattern = "**/" + pattern
    case_insensitive = not any(ch.isupper() for ch in pattern)
    listing = bytearray()
    await _rg_files(RG, str(root), None, listing.extend)
    return _match_listed(bytes(listing), str(root), pattern, full_path, case_insensitive, 10**6)


@pytest.mark.parametrize("pattern", PATTERNS)
async def test_filtered_find_equals_the_whole_listing_matched(call: Caller, tree: Path, pattern: str) -> None:
    expected = await unfiltered(tree, pattern)
    args = {"pattern": pattern, "limit": 10**6}
    output = await call.text(create_find_tool(backend="ripgrep"), args, cwd=tree)
    assert output.split("\n") == (expected or ["No files found matching pattern"])


async def test_the_filter_keeps_the_ignore_rules(call: Caller, tree: Path) -> None:
    output = await call.text(create_find_tool(backend="ripgrep"), {"pattern": "*.md"}, cwd=tree)
    listed = output.split("\n")
    # .gitignore, .ignore and fd's global ignore file still decide; a name filter never
    # lets an ignored file through.
    for ignored in ("build/out.md", "by_dotignore.md", "ign.md/", "notes.md"):
        assert ignored not in listed
    assert "pkg.md/" in listed  # a directory found through the files it holds
    assert "src/build/inner.md" in listed
    logs = await call.text(create_find_tool(backend="ripgrep"), {"pattern": "*.log"}, cwd=tree)
    assert logs.split("\n") == ["keep.log", "sub/debug2.log"]


@pytest.mark.parametrize("pattern", ["*.md", "*", "sub/*", "bad*"])
async def test_odd_names_sort_in_walk_order(call: Caller, odd_names: Path, pattern: str) -> None:
    expected = await unfiltered(odd_names, pattern)
    output = await call.text(create_find_tool(backend="ripgrep"), {"pattern": pattern}, cwd=odd_names)
    assert output.split("\n") == expected
    assert expected == sorted(
        expected, key=lambda p: p.rstrip("/").encode("utf-8", "surrogateescape").split(b"/")
    )


@pytest.mark.parametrize("size", [1, 7, 4096])
async def test_a_listing_fed_in_chunks_matches_it_whole(tree: Path, size: int) -> None:
    assert RG is not None
    listing = bytearray()
    await _rg_files(RG, str(tree), None, listing.extend)
    whole = _match_listed(bytes(listing), str(tree), "*", False, True, 10**6)
    chunked = _Listing(str(tree), "*", False, True)
    for start in range(0, len(listing), size):
        chunked.feed(bytes(listing[start : start + size]))
    assert chunked.finish(10**6) == whole and len(whole) > 30


def test_filters_are_plain_names() -> None:
    assert _name_filter("*.md", False, True) == "*.[mM][dD]"
    assert _name_filter("**/d1*/f5*.py", True, True) == "[fF]5*.[pP][yY]"
    assert _name_filter("**/src/**", True, True) is None
    assert _name_filter("{a,b/c}.py", True, True) is None
    assert _name_filter("*", False, True) is None


NAMES = [name.rpartition("/")[2] for name in FILES] + ["x.Md", "X.mD", "K.txt", "\u212a.txt", "\u017f", "s"]


@pytest.mark.parametrize("glob", [p for p in PATTERNS if "/" not in p] + ["k*", "*S*", "i", "[k]", "{k,s}"])
def test_name_superset_matches_every_name_the_glob_does(glob: str) -> None:
    for case_insensitive in (False, True):
        superset = name_superset(glob, case_insensitive=case_insensitive)
        exact = compile_glob(glob, case_insensitive=case_insensitive)
        for name in NAMES:
            if exact.match(name):
                assert superset is None or compile_glob(superset).match(name), (glob, name)


def test_the_letters_ignorecase_widens_are_known() -> None:
    # Python's re.IGNORECASE equates a few non-ASCII characters with ASCII letters; those
    # letters cannot become a byte class in the filter.
    letter = re.compile("[a-z]", re.IGNORECASE)
    wide = {chr(code) for code in range(128, 0x110000) if letter.fullmatch(chr(code))}
    letters = "abcdefghijklmnopqrstuvwxyz"
    partners = {ch for ch in letters if any(re.fullmatch(ch, w, re.IGNORECASE) for w in wide)}
    assert partners | {p.upper() for p in partners} == set(_WIDE_CASE)


@pytest.mark.parametrize("names", ["plain", "odd"])
async def test_the_first_results_are_the_whole_listings_first(
    tree: Path, names: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The listing is matched a sorted stretch at a time until `limit` results are certain;
    # from stretches of one name up, every limit gives the front of the whole result.
    assert RG is not None
    if names == "odd":
        for name in (b"bad\xff.md", b"odd\x01.md", b"pkg.md/\xe9t\xe9.md"):
            (tree / os.fsdecode(name)).write_text("")
    listing = bytearray()
    await _rg_files(RG, str(tree), None, listing.extend)
    monkeypatch.setattr(_Listing, "MIN_STRETCH", 1)
    for pattern in PATTERNS:
        full_path = "/" in pattern
        glob = pattern if not full_path or pattern.startswith(("/", "**/")) else "**/" + pattern
        case_insensitive = not any(ch.isupper() for ch in glob)
        whole = _match_listed(bytes(listing), str(tree), glob, full_path, case_insensitive, 10**6)
        for limit in range(1, len(whole) + 2):
            front = _match_listed(bytes(listing), str(tree), glob, full_path, case_insensitive, limit)
            assert front == whole[:limit], (pattern, limit)
