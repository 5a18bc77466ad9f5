"""What ``/changelog`` shows: pi-host's own CHANGELOG.md, its releases oldest first.

The file ships inside the package (the wheel maps the repository's CHANGELOG.md to
``pi_host/CHANGELOG.md``); a source checkout run without building reads the repository's copy.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

__all__ = ["NO_ENTRIES", "changelog_markdown", "changelog_sections", "read_changelog"]

_FILE_NAME = "CHANGELOG.md"
_RELEASE_HEADING = re.compile(r"^## ", re.MULTILINE)
NO_ENTRIES = "No changelog entries found."


def read_changelog() -> str | None:
    """The changelog's text, or ``None`` when this installation carries none."""
    try:
        packaged = resources.files("pi_host").joinpath(_FILE_NAME)
        if packaged.is_file():
            return packaged.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ModuleNotFoundError):
        pass
    # An editable install or a source checkout: the file sits beside the package.
    source = Path(__file__).resolve().parents[3] / _FILE_NAME
    try:
        return source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def changelog_sections(text: str) -> list[str]:
    """The release sections (``## [1.2.0] …`` up to the next one), in the file's order.

    The title and the preamble before the first release are not a release and are left out.
    """
    starts = [match.start() for match in _RELEASE_HEADING.finditer(text)]
    ends = [*starts[1:], len(text)]
    return [text[start:end].strip() for start, end in zip(starts, ends, strict=False)]


def changelog_markdown(text: str | None = None) -> str:
    """The markdown ``/changelog`` renders: every release, the oldest first, as pi shows its own
    (so the newest ends up next to the editor).

    :param text: the changelog; read from the installation by default.
    """
    if text is None:
        text = read_changelog() or ""
    sections = changelog_sections(text)
    return "\n\n".join(reversed(sections)) if sections else NO_ENTRIES
