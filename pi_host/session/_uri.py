"""Which built-in store a URI names."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ._backend import SessionStore, SessionStoreError
from ._paths import sessions_root

__all__ = ["DEFAULT_STORE_URI", "builtin_store", "uri_scheme"]

DEFAULT_STORE_URI = "jsonl:"
"""pi's session files under the agent directory (``<agent dir>/sessions``)."""


def uri_scheme(uri: str) -> str:
    """The scheme of a store URI (``""`` for a plain path)."""
    scheme = urlsplit(uri).scheme
    return "" if len(scheme) <= 1 else scheme.lower()  # "C:\\..." is a path


def builtin_store(uri: str) -> SessionStore | None:
    """The built-in store ``uri`` names; None for a scheme pi-host does not ship.

    :raises SessionStoreError: for a malformed URI of a built-in scheme.
    """
    scheme = uri_scheme(uri)
    if scheme == "sqlite":
        from ._sqlite_store import SqliteStore, sqlite_path

        return SqliteStore(sqlite_path(uri), uri=uri)
    if scheme in ("", "jsonl", "file"):
        from ._jsonl_store import JsonlStore

        return JsonlStore(_jsonl_root(uri, scheme))
    return None


def _jsonl_root(uri: str, scheme: str) -> Path:
    if scheme == "":
        text = uri
    elif scheme == "file":
        parts = urlsplit(uri)
        if parts.netloc not in ("", "localhost"):
            raise SessionStoreError(f"{uri!r}: a file: URI must name a local directory (file:///path)")
        text = unquote(parts.path)
    else:
        text = uri[len("jsonl:") :]
        if text.startswith("//"):
            text = unquote(urlsplit(uri).path)
    if not text:
        return sessions_root()
    return Path(os.path.abspath(os.path.expanduser(text)))
