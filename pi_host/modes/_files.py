"""``@file`` command-line arguments: text files inlined into the first message, images attached."""

from __future__ import annotations

import base64
import os

from pi_host.messages import ImageContent

__all__ = ["FileArgumentError", "read_file_arguments"]

_IMAGE_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


class FileArgumentError(Exception):
    """An ``@file`` argument names a file that is missing or unreadable."""


def _image_type(head: bytes) -> str | None:
    for magic, mime in _IMAGE_MAGIC:
        if head.startswith(magic):
            return mime
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def read_file_arguments(paths: list[str], cwd: str) -> tuple[str, list[ImageContent]]:
    """Read ``@file`` arguments the way pi does: ``<file name="...">`` blocks plus image attachments.

    Empty files are skipped. Images are detected by their first bytes, not their names.

    :raises FileArgumentError: naming the file and what is wrong with it.
    """
    text = ""
    images: list[ImageContent] = []
    for argument in paths:
        path = os.path.abspath(os.path.join(cwd, os.path.expanduser(argument)))
        if not os.path.exists(path):
            raise FileArgumentError(f"File not found: {path}")
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError as exc:
            raise FileArgumentError(f"Could not read file {path}: {exc.strerror or exc}") from None
        if not data:
            continue
        mime = _image_type(data[:16])
        if mime is not None:
            images.append(ImageContent(data=base64.b64encode(data).decode("ascii"), mime_type=mime))
            text += f'<file name="{path}"></file>\n'
            continue
        content = data.decode("utf-8", errors="replace")
        text += f'<file name="{path}">\n{content}\n</file>\n'
    return text, images
