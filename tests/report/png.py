"""Just enough of a PNG reader to tell a rendered page from a blank one (8-bit RGB or RGBA)."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SIGNATURE = b"\x89PNG\r\n\x1a\n"
BYTES_PER_PIXEL = {2: 3, 6: 4}  # colour type → RGB, RGBA


@dataclass(frozen=True)
class Png:
    width: int
    height: int
    bit_depth: int
    colour_type: int
    interlaced: bool
    data: bytes  # the concatenated IDAT payload, still compressed


def read_png(path: Path) -> Png:
    """The header fields and image data of a PNG file; raises ValueError if it is not one."""
    blob = path.read_bytes()
    if not blob.startswith(SIGNATURE):
        raise ValueError(f"{path} is not a PNG file")
    chunks, position = [], len(SIGNATURE)
    while position < len(blob):
        (length,) = struct.unpack(">I", blob[position : position + 4])
        kind = blob[position + 4 : position + 8]
        chunks.append((kind, blob[position + 8 : position + 8 + length]))
        position += 12 + length  # length, type, data, CRC
    if chunks[0][0] != b"IHDR" or chunks[-1][0] != b"IEND":
        raise ValueError(f"{path}: IHDR must come first and IEND last")
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    data = b"".join(payload for kind, payload in chunks if kind == b"IDAT")
    return Png(width, height, depth, colour, bool(interlace), data)


def _paeth(left: int, up: int, up_left: int) -> int:
    estimate = left + up - up_left
    distances = abs(estimate - left), abs(estimate - up), abs(estimate - up_left)
    if distances[0] <= distances[1] and distances[0] <= distances[2]:
        return left
    return up if distances[1] <= distances[2] else up_left


def _unfilter(kind: int, line: bytearray, previous: bytearray, bpp: int) -> bytearray:
    """Undo one scanline's filter (PNG spec, section 9)."""
    if kind == 2:
        return bytearray((a + b) & 255 for a, b in zip(line, previous, strict=True))
    for i in range(len(line)):
        left = line[i - bpp] if i >= bpp else 0
        up_left = previous[i - bpp] if i >= bpp else 0
        if kind == 1:
            line[i] = (line[i] + left) & 255
        elif kind == 3:
            line[i] = (line[i] + ((left + previous[i]) >> 1)) & 255
        elif kind == 4:
            line[i] = (line[i] + _paeth(left, previous[i], up_left)) & 255
    return line


def pixel_rows(png: Png) -> Iterator[bytes]:
    """The image's rows of pixels, top to bottom (8-bit, non-interlaced images only)."""
    if png.bit_depth != 8 or png.interlaced or png.colour_type not in BYTES_PER_PIXEL:
        raise ValueError("only 8-bit, non-interlaced RGB or RGBA images are read")
    bpp = BYTES_PER_PIXEL[png.colour_type]
    stride = png.width * bpp
    raw = zlib.decompress(png.data)
    previous = bytearray(stride)
    for row in range(png.height):
        start = row * (stride + 1)
        previous = _unfilter(
            raw[start], bytearray(raw[start + 1 : start + 1 + stride]), previous, bpp
        )
        yield bytes(previous)


def distinct_colours(png: Png) -> int:
    """How many different pixel values the image has."""
    bpp = BYTES_PER_PIXEL[png.colour_type]
    colours: set[bytes] = set()
    for row in pixel_rows(png):
        colours.update(row[i : i + bpp] for i in range(0, len(row), bpp))
    return len(colours)


def tallest_line(png: Png, colour: tuple[int, int, int], columns: range) -> int:
    """The most pixels of exactly ``colour`` that one pixel column in ``columns`` holds."""
    bpp = BYTES_PER_PIXEL[png.colour_type]
    wanted, counts = bytes(colour), dict.fromkeys(columns, 0)
    for row in pixel_rows(png):
        for x in columns:
            if row[x * bpp : x * bpp + 3] == wanted:
                counts[x] += 1
    return max(counts.values(), default=0)
