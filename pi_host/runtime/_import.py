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

from ._session_types import SessionError

__all__ = [
    "ImportedSession",
    "SessionImportError",
    "check_session_file",
    "copy_into_session_dir",
    "import_destination",
    "same_directory",
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
    """Where the copy of *source* goes in *session_dir*: its own name, as pi does, or the same
    name numbered (``name-2.jsonl`` …) when a different file holds it. A file there with the
    same content (or *source* itself) is the destination as it is.
    """
    for destination in _candidates(session_dir / source.name):
        if not destination.exists():
            return destination
        if os.path.samefile(destination, source) or _same_content(destination, source):
            return destination
    raise AssertionError("unreachable: the candidates never end")


def copy_into_session_dir(source: Path, destination: Path) -> None:
    """Copy *source* to *destination* (see :func:`import_destination`), unless it is there."""
    if destination.exists():
        return  # the same file, or the same content
    destination.parent.mkdir(parents=True, exist_ok=True)
    # "x": never replace a file that appeared meanwhile.
    with open(source, "rb") as src, open(destination, "xb") as dst:
        shutil.copyfileobj(src, dst)


def same_directory(a: str, b: str) -> bool:
    """Whether *a* and *b* name the same directory (by path when either is gone)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


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
