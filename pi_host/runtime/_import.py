"""``/import``: check a session file from elsewhere and copy it into the session directory.

pi copies the file into the current session directory under its own name and continues it
there, so the original stays as it was. pi-host does the same, with two differences that keep
data safe: the file is checked (it must exist and start with a session header) before anything
is written, and a different file already holding that name in the session directory is never
overwritten (the copy takes a free name beside it).
"""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ._session import SessionError

__all__ = [
    "ImportedSession",
    "SessionImportError",
    "check_session_file",
    "copy_into_session_dir",
    "import_destination",
]


class SessionImportError(SessionError):
    """The file cannot be imported; the message names it and says why."""


@dataclass(frozen=True)
class ImportedSession:
    """A session file that passed the checks.

    :ivar source: the file, as an absolute path.
    :ivar cwd: the working directory recorded in its header ("" when it records none).
    """

    source: Path
    cwd: str

    @property
    def cwd_missing(self) -> bool:
        """The recorded working directory no longer exists (pi asks before continuing)."""
        return bool(self.cwd) and not os.path.isdir(self.cwd)


def check_session_file(path: str | os.PathLike[str]) -> ImportedSession:
    """Check that *path* is a readable pi session file.

    :raises SessionImportError: the file is missing, a directory, unreadable, or has no session
        header on its first line.
    """
    from pi_host.session._index import read_header

    source = Path(os.path.abspath(os.path.expanduser(os.fspath(path))))
    if not source.exists():
        raise SessionImportError(f"File not found: {source}")
    if source.is_dir():
        raise SessionImportError(f"{source} is a directory; /import takes a session file (.jsonl)")
    try:
        with open(source, "rb") as f:
            found = read_header(f, lambda message, offset: None)
    except OSError as exc:
        raise SessionImportError(f"Cannot read {source}: {exc.strerror or exc}") from exc
    if found is None:
        raise SessionImportError(
            f"{source} is not a pi session file: it does not start with a session header "
            '(a JSON line with "type": "session")'
        )
    header, _ = found
    return ImportedSession(source=source, cwd=header.cwd or "")


def import_destination(source: Path, session_dir: Path) -> Path:
    """Where pi would put the copy: the session directory, under the file's own name."""
    return session_dir / source.name


def copy_into_session_dir(source: Path, session_dir: Path) -> Path:
    """Copy *source* into *session_dir* and return the copy (or *source*, already there).

    A file of the same name with the same content is reused; one with other content is kept
    and the copy gets the next free name (``name-2.jsonl`` …).
    """
    session_dir.mkdir(parents=True, exist_ok=True)
    first = import_destination(source, session_dir)
    for destination in _candidates(first):
        if not destination.exists():
            break
        if os.path.samefile(destination, source) or _same_content(destination, source):
            return destination
    # "x": never replace a file that appeared meanwhile.
    with open(source, "rb") as src, open(destination, "xb") as dst:
        shutil.copyfileobj(src, dst)
    return destination


def _candidates(path: Path) -> Iterator[Path]:
    yield path
    for number in itertools.count(2):
        yield path.with_name(f"{path.stem}-{number}{path.suffix}")


def _same_content(a: Path, b: Path) -> bool:
    if a.stat().st_size != b.stat().st_size:
        return False
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            block_a, block_b = fa.read(1 << 16), fb.read(1 << 16)
            if block_a != block_b:
                return False
            if not block_a:
                return True
