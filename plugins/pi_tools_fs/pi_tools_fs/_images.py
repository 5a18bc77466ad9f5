"""Image files for ``read``: type by magic bytes (not extension), and pixel size from headers."""

from __future__ import annotations

import struct

__all__ = ["SNIFF_BYTES", "detect_image_mime_type", "image_size"]

SNIFF_BYTES = 4100
"""How much of a file the type detection looks at (what pi's detector reads)."""


def detect_image_mime_type(head: bytes) -> str | None:
    """``image/jpeg``, ``image/png``, ``image/gif`` or ``image/webp`` from a file's first bytes."""
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"GIF"):
        return "image/gif"
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    index = 2
    while index + 9 < len(data):
        if data[index] != 0xFF:
            index += 1
            continue
        marker = data[index + 1]
        if marker == 0xFF:
            index += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            index += 2
            continue
        (length,) = struct.unpack(">H", data[index + 2 : index + 4])
        # Start-of-frame markers (not DHT C4, JPG C8, DAC CC) carry the frame size.
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[index + 5 : index + 9])
            return width, height
        index += 2 + length
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8X" and len(data) >= 30:
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return width, height
    if chunk == b"VP8L" and len(data) >= 25:
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8 " and len(data) >= 30:
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    return None


def image_size(data: bytes, mime_type: str) -> tuple[int, int] | None:
    """(width, height) read from the image header, or ``None`` when the header is damaged."""
    try:
        if mime_type == "image/png" and len(data) >= 24 and data[12:16] == b"IHDR":
            width, height = struct.unpack(">II", data[16:24])
            return width, height
        if mime_type == "image/gif" and len(data) >= 10:
            width, height = struct.unpack("<HH", data[6:10])
            return width, height
        if mime_type == "image/jpeg":
            return _jpeg_size(data)
        if mime_type == "image/webp":
            return _webp_size(data)
    except struct.error:
        return None
    return None
