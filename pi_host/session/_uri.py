"""Which built-in store a URI names."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ._backend import SessionStore, SessionStoreError
from ._paths import SESSION_ID_PATTERN, sessions_root

__all__ = ["DEFAULT_STORE_URI", "builtin_store", "session_reference", "split_session_reference", "uri_scheme"]

DEFAULT_STORE_URI = "jsonl:"
"""pi's session files under the agent directory (``<agent dir>/sessions``)."""


def uri_scheme(uri: str) -> str:
    """The scheme of a store URI (``""`` for a plain path)."""
    scheme = urlsplit(uri).scheme
    return "" if len(scheme) <= 1 else scheme.lower()  # "C:\\..." is a path


def session_reference(store_uri: str, session_id: str) -> str:
    """How a header's ``parentSession`` names a session kept in a store: ``<store URI>#<id>``
    (the store's ``uri``, without a password; session ids never contain ``#``)."""
    return f"{store_uri}#{session_id}"


def split_session_reference(text: str) -> tuple[str, str] | None:
    """A ``<store URI>#<session id>`` reference's URI and id; None for anything else (a
    session file's path, an id prefix)."""
    uri, hash_, session_id = text.rpartition("#")
    if not hash_ or not uri or not SESSION_ID_PATTERN.match(session_id) or not uri_scheme(uri):
        return None
    return uri, session_id


def builtin_store(uri: str) -> SessionStore | None:
    """The built-in store ``uri`` names; None for a scheme pi-host does not ship.

    :raises SessionStoreError: for a malformed URI of a built-in scheme.
    """
    scheme = uri_scheme(uri)
    if scheme == "sqlite":
        from ._sqlite_store import SqliteStore, sqlite_path

        # The absolute form (sqlite:////abs/path.db): a child session's header names its parent
        # by this URI, which must mean the same file from any working directory.
        return SqliteStore(sqlite_path(uri))
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
