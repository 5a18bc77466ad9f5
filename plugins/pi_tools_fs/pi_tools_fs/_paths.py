"""Turning a model-supplied path into a file system path, as pi does.

Models write ``@src/x.py`` (the mention syntax), ``~/notes.md``, and paths copied from text
that holds non-breaking spaces; all of them resolve relative to the session's working
directory.
"""

from __future__ import annotations

import os
import re
import unicodedata

from ._errors import ToolError

__all__ = ["expand_path", "resolve_read_path", "resolve_search_path", "resolve_to_cwd"]

_UNICODE_SPACES = re.compile("[\u00a0\u2000-\u200a\u202f\u205f\u3000]")
_AM_PM = re.compile(r" (AM|PM)\.", re.IGNORECASE)


def expand_path(path: str) -> str:
    """Strip a leading ``@``, turn unicode spaces into plain spaces and expand ``~``."""
    if path.startswith("@"):
        path = path[1:]
    path = _UNICODE_SPACES.sub(" ", path)
    if path == "~":
        return os.path.expanduser("~")
    if path.startswith("~/"):
        return os.path.expanduser("~") + path[1:]
    return path


def resolve_to_cwd(path: str, cwd: str) -> str:
    """The absolute path ``path`` names, relative paths taken from ``cwd``.

    Absolute paths are returned as given (not normalised), as pi does.
    """
    expanded = expand_path(path)
    if os.path.isabs(expanded):
        return expanded
    return os.path.abspath(os.path.join(cwd, expanded))


def resolve_search_path(path: str | None, cwd: str) -> tuple[str, int]:
    """The path a search (``grep``, ``find``) starts from, ``path`` or else ``cwd`` itself
    (see :func:`resolve_to_cwd`), and its ``st_mode``.

    :raises ToolError: ``Path not found: …`` (pi's text) when nothing is there.
    """
    search_path = resolve_to_cwd(path or ".", cwd)
    try:
        return search_path, os.stat(search_path).st_mode
    except (OSError, ValueError):
        raise ToolError(f"Path not found: {search_path}") from None


def _exists(path: str) -> bool:
    try:
        os.stat(path)
    except (OSError, ValueError):
        return False
    return True


def resolve_read_path(path: str, cwd: str) -> str:
    """:func:`resolve_to_cwd`, then the spellings macOS uses when that path does not exist.

    macOS screenshot names hold a narrow no-break space before ``AM``/``PM`` and a curly
    apostrophe, and the file system stores names decomposed (NFD); a model types none of these.
    """
    resolved = resolve_to_cwd(path, cwd)
    if _exists(resolved):
        return resolved
    am_pm = _AM_PM.sub(lambda m: f"\u202f{m.group(1)}.", resolved)
    if am_pm != resolved and _exists(am_pm):
        return am_pm
    nfd = unicodedata.normalize("NFD", resolved)
    if nfd != resolved and _exists(nfd):
        return nfd
    curly = resolved.replace("'", "\u2019")
    if curly != resolved and _exists(curly):
        return curly
    nfd_curly = nfd.replace("'", "\u2019")
    if nfd_curly != resolved and _exists(nfd_curly):
        return nfd_curly
    return resolved
