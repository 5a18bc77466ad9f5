"""The content-addressed blob store under the agent directory, its ids and its pruning.

A blob's id is the id git gives the same content (``sha1("blob <size>\\0" + bytes)``, or
sha256 in a sha256 repository), so a pre-image kept here and a file in a git snapshot
compare by id alone.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from pathlib import Path

__all__ = ["BlobStore", "blob_id", "file_state", "norm_path", "prune", "recorded_path"]


def blob_id(data: bytes, algo: str = "sha1") -> str:
    """The git object id of a blob holding ``data`` (``algo``: ``sha1`` or ``sha256``)."""
    digest = hashlib.new(algo)
    digest.update(b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()


def norm_path(path: str) -> str:
    """``path`` absolute, with its directories' symlinks resolved but not the file's own."""
    path = os.path.abspath(path)
    head, tail = os.path.split(path)
    return os.path.join(os.path.realpath(head), tail)


def recorded_path(path: object) -> str:
    """A path named by a checkpoint, as it was recorded (absolute, its directories resolved
    then): not resolved again, so a directory replaced by a symlink since is seen as one,
    rather than followed to wherever it leads now."""
    return os.path.abspath(str(path))


def file_state(path: str, algo: str = "sha1") -> tuple[str, int, bytes] | None:
    """``(id, mode, content)`` of the regular file or symlink at ``path``; ``None`` when absent.

    ``mode`` is git's: ``0o100644``, ``0o100755`` or ``0o120000`` (a symlink, whose content is
    its target). A directory where a file was counts as absent.
    """
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if os.path.islink(path):
        data = os.readlink(path).encode()
        return blob_id(data, algo), 0o120000, data
    if not os.path.isfile(path):
        return None
    with open(path, "rb") as f:
        data = f.read()
    mode = 0o100755 if st.st_mode & 0o111 else 0o100644
    return blob_id(data, algo), mode, data


class BlobStore:
    """Blobs by id under ``root`` (``root/ab/cdef…``), written atomically, read back whole."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, blob: str) -> Path:
        return self.root / blob[:2] / blob[2:]

    def put(self, blob: str, data: bytes) -> None:
        """Keep ``data`` under ``blob``; an existing blob is only touched (pruning is by age)."""
        path = self._path(blob)
        if path.exists():
            os.utime(path)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def get(self, blob: str) -> bytes | None:
        """The blob's content, ``None`` when it was never kept or has been pruned."""
        try:
            return self._path(blob).read_bytes()
        except FileNotFoundError:
            return None

    def has(self, blob: str) -> bool:
        return self._path(blob).exists()


def prune(
    roots: list[Path], *, max_bytes: int, max_age_days: float, now: float | None = None
) -> tuple[int, int, set[Path]]:
    """Delete blobs and git objects older than ``max_age_days``, then the oldest until the
    rest (of all ``roots`` together) fit in ``max_bytes``; returns the files and bytes
    removed, and the roots that lost some.

    A checkpoint whose content was pruned still lists and diffs; restoring that file says
    its content is gone.
    """
    now = time.time() if now is None else now
    files: list[tuple[float, int, Path, Path]] = []
    for root in roots:
        if not root.is_dir():
            continue
        for dirpath, _, names in os.walk(root):
            for name in names:
                if name.startswith(".tmp-"):
                    continue
                path = Path(dirpath, name)
                try:
                    st = path.stat()
                except FileNotFoundError:
                    continue
                files.append((st.st_mtime, st.st_size, path, root))
    files.sort()
    total = sum(size for _, size, _, _ in files)
    cutoff = now - max_age_days * 86400
    removed = removed_bytes = 0
    touched: set[Path] = set()
    for mtime, size, path, root in files:
        if mtime >= cutoff and total <= max_bytes:
            break
        path.unlink(missing_ok=True)
        total -= size
        removed += 1
        removed_bytes += size
        touched.add(root)
    return removed, removed_bytes, touched
