"""Small real PNG images for tests, written without an imaging library."""

from __future__ import annotations

import struct
import zlib


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png(width: int, height: int, pixel: tuple[int, int, int], dot: tuple[int, int, int]) -> bytes:
    """A ``width`` × ``height`` RGB image of ``pixel``, with a square of ``dot`` in its middle."""
    rows = []
    for y in range(height):
        row = bytearray([0])  # filter: none
        for x in range(width):
            inside = width // 4 <= x < 3 * width // 4 and height // 4 <= y < 3 * height // 4
            row += bytes(dot if inside else pixel)
        rows.append(bytes(row))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(b"".join(rows)))
        + _chunk(b"IEND", b"")
    )


RED_SQUARE = png(16, 16, (255, 255, 255), (220, 20, 20))
BLUE_SQUARE = png(16, 16, (255, 255, 255), (20, 20, 220))
CHART = png(24, 16, (250, 250, 250), (30, 160, 60))
