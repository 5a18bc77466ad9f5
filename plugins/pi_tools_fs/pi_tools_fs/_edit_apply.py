"""Applying a list of exact-text replacements to a file's text, as pi's ``edit`` tool does.

Every ``oldText`` is matched against the original text (not after earlier edits), must be
found, unique and disjoint from the others, and either all edits apply or none does. Matching
is exact first; when some edit only matches after normalisation (NFKC, trailing whitespace,
smart quotes, unicode dashes and spaces: what models get wrong when they retype code), the
edits are matched in the normalised text and only the lines they touch are rewritten, so the
rest of the file keeps its bytes.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from ._text import JS_WHITESPACE, js_length

__all__ = [
    "EditError",
    "Replacement",
    "apply_edits",
    "detect_line_ending",
    "normalize_for_fuzzy_match",
    "normalize_to_lf",
    "restore_line_endings",
    "strip_bom",
]


class EditError(ValueError):
    """An edit list that cannot be applied; the text (pi's wording) is shown to the model."""


@dataclass(frozen=True, slots=True)
class Replacement:
    """One ``{oldText, newText}`` pair."""

    old_text: str
    new_text: str


def detect_line_ending(text: str) -> str:
    """``\\r\\n`` when the first line break is CRLF, else ``\\n``."""
    lf = text.find("\n")
    if lf == -1:
        return "\n"
    crlf = text.find("\r\n")
    if crlf == -1:
        return "\n"
    return "\r\n" if crlf < lf else "\n"


def normalize_to_lf(text: str) -> str:
    """CRLF and lone CR become LF."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def restore_line_endings(text: str, ending: str) -> str:
    """Undo :func:`normalize_to_lf` for a CRLF file."""
    return text.replace("\n", "\r\n") if ending == "\r\n" else text


def strip_bom(text: str) -> tuple[str, str]:
    """Split off a leading byte order mark: ``(bom, rest)``."""
    if text.startswith("\ufeff"):
        return "\ufeff", text[1:]
    return "", text


_SINGLE_QUOTES = re.compile("[\u2018\u2019\u201a\u201b]")
_DOUBLE_QUOTES = re.compile("[\u201c\u201d\u201e\u201f]")
_DASHES = re.compile("[\u2010\u2011\u2012\u2013\u2014\u2015\u2212]")
_SPACES = re.compile("[\u00a0\u2002-\u200a\u202f\u205f\u3000]")


def normalize_for_fuzzy_match(text: str) -> str:
    """The forgiving form both sides are compared in when an exact match fails.

    NFKC, trailing whitespace stripped from each line, smart quotes to ASCII quotes, unicode
    dashes to ``-``, special spaces to a plain space. Line count is preserved.
    """
    text = unicodedata.normalize("NFKC", text)
    text = "\n".join(line.rstrip(JS_WHITESPACE) for line in text.split("\n"))
    text = _SINGLE_QUOTES.sub("'", text)
    text = _DOUBLE_QUOTES.sub('"', text)
    text = _DASHES.sub("-", text)
    return _SPACES.sub(" ", text)


@dataclass(frozen=True, slots=True)
class _Match:
    edit_index: int
    start: int
    length: int
    new_text: str


def _find(content: str, old_text: str) -> tuple[int, int, bool]:
    """(index, length, fuzzy) of ``old_text`` in ``content``; index -1 when absent."""
    index = content.find(old_text)
    if index != -1:
        return index, len(old_text), False
    fuzzy_old = normalize_for_fuzzy_match(old_text)
    index = normalize_for_fuzzy_match(content).find(fuzzy_old)
    if index == -1:
        return -1, 0, False
    return index, len(fuzzy_old), True


def _count_occurrences(content: str, old_text: str) -> int:
    needle = normalize_for_fuzzy_match(old_text)
    haystack = normalize_for_fuzzy_match(content)
    if not needle:
        # pi counts with ``split(needle).length - 1``; splitting on "" yields one piece per
        # UTF-16 unit, not len + 1 pieces as str.count("") suggests.
        return js_length(haystack) - 1
    return haystack.count(needle)


def _not_found(path: str, index: int, total: int) -> EditError:
    if total == 1:
        return EditError(
            f"Could not find the exact text in {path}. "
            "The old text must match exactly including all whitespace and newlines."
        )
    return EditError(
        f"Could not find edits[{index}] in {path}. "
        "The oldText must match exactly including all whitespace and newlines."
    )


def _duplicate(path: str, index: int, total: int, occurrences: int) -> EditError:
    if total == 1:
        return EditError(
            f"Found {occurrences} occurrences of the text in {path}. "
            "The text must be unique. Please provide more context to make it unique."
        )
    return EditError(
        f"Found {occurrences} occurrences of edits[{index}] in {path}. "
        "Each oldText must be unique. Please provide more context to make it unique."
    )


def _empty(path: str, index: int, total: int) -> EditError:
    if total == 1:
        return EditError(f"oldText must not be empty in {path}.")
    return EditError(f"edits[{index}].oldText must not be empty in {path}.")


def _no_change(path: str, total: int) -> EditError:
    if total == 1:
        return EditError(
            f"No changes made to {path}. The replacement produced identical content. "
            "This might indicate an issue with special characters or the text not existing as expected."
        )
    return EditError(f"No changes made to {path}. The replacements produced identical content.")


def _replace(content: str, matches: Sequence[_Match], offset: int = 0) -> str:
    pieces: list[str] = []
    cursor = 0
    for match in matches:
        start = match.start - offset
        pieces.append(content[cursor:start])
        pieces.append(match.new_text)
        cursor = start + match.length
    pieces.append(content[cursor:])
    return "".join(pieces)


def _line_starts(text: str) -> list[int]:
    starts = [0]
    index = text.find("\n")
    while index != -1:
        starts.append(index + 1)
        index = text.find("\n", index + 1)
    return starts


def _overlay(original: str, base: str, matches: Sequence[_Match]) -> str:
    """Apply ``matches`` (offsets in ``base``, the normalised text) line-wise onto ``original``.

    Each replacement is widened to the whole lines it touches; those lines come from ``base``
    with the replacement applied, every other line is copied from ``original``. Normalisation
    keeps the line count, so line ``i`` of one is line ``i`` of the other.
    """
    original_lines = original.split("\n")
    base_starts = _line_starts(base)
    line_count = len(base_starts)
    assert len(original_lines) == line_count, "fuzzy normalisation changed the line count"

    def line_of(offset: int) -> int:
        # Index of the line containing ``offset`` (binary search over line starts).
        low, high = 0, line_count - 1
        while low < high:
            mid = (low + high + 1) // 2
            if base_starts[mid] <= offset:
                low = mid
            else:
                high = mid - 1
        return low

    groups: list[tuple[int, int, list[_Match]]] = []
    for match in matches:
        first = line_of(match.start)
        # A match ending right after a newline ends on the previous line.
        last = line_of(match.start + match.length - 1) if match.length else first
        if groups and first <= groups[-1][1]:
            start, end, members = groups[-1]
            groups[-1] = (start, max(end, last), [*members, match])
        else:
            groups.append((first, last, [match]))

    pieces: list[str] = []
    next_line = 0
    for first, last, members in groups:
        if first > next_line:
            pieces.append("\n".join(original_lines[next_line:first]) + "\n")
        start = base_starts[first]
        end = base_starts[last + 1] if last + 1 < line_count else len(base)
        pieces.append(_replace(base[start:end], members, offset=start))
        next_line = last + 1
    if next_line < line_count:
        pieces.append("\n".join(original_lines[next_line:]))
    return "".join(pieces)


def apply_edits(content: str, edits: Sequence[Replacement], path: str) -> tuple[str, str]:
    """Apply ``edits`` to LF-normalised ``content``.

    :returns: ``(base, new)``: the text the edits were matched against and the result.
    :raises EditError: with pi's message when an edit is empty, missing, ambiguous or
        overlapping, or when nothing changes; ``content`` is then left as it was.
    """
    normalized = [Replacement(normalize_to_lf(e.old_text), normalize_to_lf(e.new_text)) for e in edits]
    total = len(normalized)
    for index, edit in enumerate(normalized):
        if not edit.old_text:
            raise _empty(path, index, total)

    fuzzy = any(_find(content, edit.old_text)[2] for edit in normalized)
    base = normalize_for_fuzzy_match(content) if fuzzy else content

    matches: list[_Match] = []
    for index, edit in enumerate(normalized):
        start, length, _ = _find(base, edit.old_text)
        if start == -1:
            raise _not_found(path, index, total)
        occurrences = _count_occurrences(base, edit.old_text)
        if occurrences > 1:
            raise _duplicate(path, index, total, occurrences)
        matches.append(_Match(index, start, length, edit.new_text))

    matches.sort(key=lambda m: m.start)
    for previous, current in pairwise(matches):
        if previous.start + previous.length > current.start:
            raise EditError(
                f"edits[{previous.edit_index}] and edits[{current.edit_index}] overlap in {path}. "
                "Merge them into one edit or target disjoint regions."
            )

    new = _overlay(content, base, matches) if fuzzy else _replace(base, matches)
    if new == content:
        raise _no_change(path, total)
    return content, new
