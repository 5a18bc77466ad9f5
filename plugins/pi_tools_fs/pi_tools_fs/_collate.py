"""A sort key close to ``String.prototype.localeCompare`` (ICU root collation), for ``ls``.

pi sorts directory entries with ``a.toLowerCase().localeCompare(b.toLowerCase())``: spaces and
punctuation before digits before letters, accents only breaking ties. The key reproduces that
order for ASCII names exactly (the table was taken from Node) and approximates it elsewhere:
other punctuation after ASCII punctuation, digits by value, other scripts after Latin.
"""

from __future__ import annotations

import unicodedata

__all__ = ["collation_key"]

# Node's order of the printable ASCII characters once lowercased (letters and digits follow).
_PUNCTUATION = " _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$"
_ASCII_RANK = {ch: index for index, ch in enumerate(_PUNCTUATION)}

_PUNCT_GROUP, _OTHER_PUNCT_GROUP, _DIGIT_GROUP, _LATIN_GROUP, _OTHER_LETTER_GROUP = range(5)


def _primary(ch: str) -> tuple[int, int]:
    rank = _ASCII_RANK.get(ch)
    if rank is not None:
        return (_PUNCT_GROUP, rank)
    if "a" <= ch <= "z":
        return (_LATIN_GROUP, ord(ch))
    category = unicodedata.category(ch)
    if category == "Nd":
        return (_DIGIT_GROUP, unicodedata.digit(ch))
    if category[0] in "LMN":
        return (_OTHER_LETTER_GROUP, ord(ch))
    return (_OTHER_PUNCT_GROUP, ord(ch))


def collation_key(name: str) -> tuple[tuple[tuple[int, int], ...], tuple[str, ...]]:
    """Primary weights (base characters), then secondary (their accents), of ``name.lower()``."""
    primary: list[tuple[int, int]] = []
    secondary: list[str] = []
    for ch in unicodedata.normalize("NFD", name.lower()):
        if unicodedata.combining(ch):
            if secondary:
                secondary[-1] += ch
            continue
        primary.append(_primary(ch))
        secondary.append("")
    return tuple(primary), tuple(secondary)
