"""The edit details' diff and patch against pi 0.73's output on 150 random changes.

The expectations were produced by pi's ``generateDiffString`` and the ``diff`` package's
``createTwoFilesPatch`` (context 4, file headers only) in node.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pi_tools_fs._diff import display_diff, unified_patch

CASES: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "data" / "pi-0.73-diffs.json").read_text(encoding="utf-8")
)


@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_matches_pi(case: dict[str, Any]) -> None:
    assert display_diff(case["old"], case["new"]) == (case["diff"], case["firstChangedLine"])
    assert unified_patch("f.txt", case["old"], case["new"]) == case["patch"]
