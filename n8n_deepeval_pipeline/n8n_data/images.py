"""Images in what a workflow answers or is asked: found, named by content hash, put in text.

An answer may carry images as n8n binary data (an item's ``binary`` entries of an image
type, with their base64 ``data``), as data URIs or markdown images in its text
(``![chart](data:image/png;base64,…)``, ``![chart](https://…/chart.png)``), or as the
``b64_json`` OpenAI's image API answers with. Each becomes an ``ImageData`` named by the
SHA-256 of its bytes (a remote image, whose bytes the pipeline never fetches, by the SHA-256
of its URL), and its place in the text becomes DeepEval's own marker of an image,
``[DEEPEVAL:IMAGE:<sha256>]``: the stored output is what DeepEval reads, with the image's
bytes kept once, by hash, beside it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import mimetypes
import re
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict

MARKER = re.compile(r"\[DEEPEVAL:IMAGE:([0-9a-f]{64})\]")
_DATA_URI = r"data:(image/[a-zA-Z0-9.+-]+);base64,([A-Za-z0-9+/=\s]+)"
# Outside a markdown image nothing bounds it: base64 without whitespace.
_BARE_DATA_URI = r"data:(image/[a-zA-Z0-9.+-]+);base64,([A-Za-z0-9+/]+={0,2})"
# ![alt](data URI or http(s) URL) first, then a bare data URI anywhere.
_IMAGE_IN_TEXT = re.compile(
    rf"!\[[^\]]*\]\(\s*(?:{_DATA_URI}|(https?://[^\s)]+))\s*\)|{_BARE_DATA_URI}"
)


class ImageError(ValueError):
    """An image whose data is not base64, or that is not an image."""


class ImageData(BaseModel):
    """One image: its bytes (base64) or, for a remote image, its URL; named by hash."""

    model_config = ConfigDict(frozen=True)

    sha256: str
    mime_type: str | None
    data_base64: str | None = None
    url: str | None = None

    @property
    def marker(self) -> str:
        """Where the image stands in a text: DeepEval's ``[DEEPEVAL:IMAGE:<id>]``."""
        return f"[DEEPEVAL:IMAGE:{self.sha256}]"

    @property
    def byte_size(self) -> int | None:
        """The image's size in bytes (None: a remote image)."""
        if self.data_base64 is None:
            return None
        return len(base64.b64decode(self.data_base64))

    @property
    def extension(self) -> str:
        """A file extension for its type (``.png``), ``.img`` when the type is unknown."""
        known = mimetypes.guess_extension(self.mime_type or "") if self.mime_type else None
        return known or ".img"


def image_from_bytes(data: bytes, mime_type: str) -> ImageData:
    """An image from its bytes."""
    if not mime_type.startswith("image/"):
        raise ImageError(f"not an image type: {mime_type!r}")
    return ImageData(
        sha256=hashlib.sha256(data).hexdigest(),
        mime_type=mime_type,
        data_base64=base64.b64encode(data).decode("ascii"),
    )


def image_from_base64(text: str, mime_type: str) -> ImageData:
    """An image from base64 text (whitespace in it is ignored)."""
    try:
        data = base64.b64decode(re.sub(r"\s+", "", text), validate=True)
    except (binascii.Error, ValueError):
        raise ImageError("its data is not base64") from None
    return image_from_bytes(data, mime_type)


def image_from_url(url: str) -> ImageData:
    """A remote image, kept as its URL (DeepEval sends a remote image's URL to the judge)."""
    guessed = mimetypes.guess_type(PurePosixPath(urlparse(url).path).name)[0]
    return ImageData(
        sha256=hashlib.sha256(url.encode("utf-8")).hexdigest(), mime_type=guessed, url=url
    )


def image_from_reference(reference: str) -> ImageData | None:
    """An image written as a data URI or an http(s) URL; None for anything else."""
    match = re.fullmatch(_DATA_URI, reference.strip())
    if match:
        return image_from_base64(match[2], match[1])
    if re.match(r"https?://", reference.strip()):
        return image_from_url(reference.strip())
    return None


def images_in_text(text: str) -> tuple[str, list[ImageData]]:
    """The text with each image it holds replaced by its marker, and the images."""
    found: list[ImageData] = []

    def marked(match: re.Match[str]) -> str:
        mime, data, url, bare_mime, bare_data = match.groups()
        try:
            image = (
                image_from_url(url)
                if url is not None
                else image_from_base64(data or bare_data, mime or bare_mime)
            )
        except ImageError:
            return match.group(0)  # not an image after all: the text keeps it
        found.append(image)
        return image.marker

    return _IMAGE_IN_TEXT.sub(marked, text), found


def images_in_items(value: Any) -> list[ImageData]:
    """Images an n8n answer carries outside its text: binary entries, ``b64_json``.

    ``value`` is the answer (an item, a list of items, or n8n's ``{json, binary}`` items).
    A binary entry kept by n8n on disk (an ``id``, no ``data``) cannot be read here.
    """
    return list(dict.fromkeys(_walk(value)))


def _walk(value: Any) -> Iterator[ImageData]:
    if isinstance(value, list):
        for item in value:
            yield from _walk(item)
    elif isinstance(value, dict):
        binary = value.get("binary")
        if isinstance(binary, dict):
            for entry in binary.values():
                image = _binary_entry(entry)
                if image is not None:
                    yield image
        image = _base64_field(value)
        if image is not None:
            yield image
        for key in ("json", "data"):  # n8n's {json, binary} items; OpenAI's {data: [...]}
            if isinstance(value.get(key), list | dict):
                yield from _walk(value[key])


def _binary_entry(entry: Any) -> ImageData | None:
    """n8n's binary data: ``{data: <base64>, mimeType, fileName, …}``."""
    if not isinstance(entry, dict):
        return None
    mime, data = entry.get("mimeType"), entry.get("data")
    if not (isinstance(mime, str) and mime.startswith("image/") and isinstance(data, str)):
        return None
    return image_from_base64(data, mime)


def _base64_field(item: dict[str, Any]) -> ImageData | None:
    """OpenAI's image answer ``{b64_json}`` (PNG unless it names its type)."""
    data = item.get("b64_json")
    if not isinstance(data, str):
        return None
    mime = item.get("mimeType") or item.get("mime_type") or "image/png"
    return image_from_base64(data, str(mime))


def markers_in(text: str | None) -> list[str]:
    """The hashes of the images a text's markers name, in order, each once."""
    return list(dict.fromkeys(MARKER.findall(text or "")))


def with_markers(text: str | None, images: list[ImageData]) -> str:
    """The text followed by the markers of the images it does not hold yet."""
    present = set(markers_in(text))
    missing = [image.marker for image in images if image.sha256 not in present]
    if not missing:
        return text or ""
    return "\n".join(part for part in (text, *missing) if part)
