"""The truncation names the package re-exports, and its own text measures.

The truncation functions themselves are pi_host's and tested in the host's tests/test_truncate.py.
"""

from __future__ import annotations

import pi_tools_fs
from pi_tools_fs._text import js_length, utf8_length

import pi_host


def test_truncation_names_are_the_hosts() -> None:
    names = (
        "DEFAULT_MAX_BYTES",
        "DEFAULT_MAX_LINES",
        "TruncationResult",
        "truncate_head",
        "truncate_line",
        "truncate_tail",
    )
    for name in names:
        assert getattr(pi_tools_fs, name) is getattr(pi_host, name)


def test_text_measures_count_as_javascript_and_node_do() -> None:
    assert js_length("😀") == 2
    assert utf8_length("a\ud800") == 4  # a lone surrogate is written as U+FFFD
