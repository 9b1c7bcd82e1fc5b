"""The ``output_images`` table, and each run's output with its images marked and listed.

Images in an answer's text (data URIs, markdown images) leave it: the text keeps
DeepEval's marker ``[DEEPEVAL:IMAGE:<sha256>]`` where the image stood, and the image goes to
``output_images``, once per version however many runs show it. A row's input images
(``columnMapping.inputImages``: data URIs, http(s) URLs, or files beside the dataset) are
read the same way and listed on each of its runs with the role ``input``.
"""

from __future__ import annotations

import mimetypes
from collections.abc import Iterable
from pathlib import Path

from n8n_deepeval_pipeline.n8n_data.images import (
    ImageData,
    ImageError,
    image_from_bytes,
    image_from_reference,
    images_in_text,
    markers_in,
)
from n8n_deepeval_pipeline.tables.rows import AgentOutput, DatasetRow, ExpandedRun, OutputImage


class InputImageError(ValueError):
    """An input image of a dataset row that cannot be read; names the row and the image."""


def read_image(reference: str, base_dir: Path | None) -> ImageData:
    """An image written as a data URI, an http(s) URL, or a file path (relative to ``base_dir``)."""
    image = image_from_reference(reference)
    if image is not None:
        return image
    path = Path(reference)
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ImageError(f"{reference}: {error.strerror or error}") from None
    mime = _image_mime(path)
    if mime is None:
        raise ImageError(f"{reference}: not an image file ({', '.join(_IMAGE_SUFFIXES)})")
    return image_from_bytes(data, mime)


_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")
"""The image files a row or recording may name: the formats multimodal judges take."""

# Python 3.11's own table lacks .webp: mimetypes knows it only where the system has a
# mime.types that lists it (Debian's does; a slim container may not).
_WEBP = "image/webp"


def _image_mime(path: Path) -> str | None:
    """The file's MIME type, as mimetypes says, if it is one of _IMAGE_SUFFIXES; else None."""
    suffix = path.suffix.lower()
    if suffix not in _IMAGE_SUFFIXES:
        return None
    guessed, _ = mimetypes.guess_type(f"image{suffix}")
    return guessed or (_WEBP if suffix == ".webp" else None)


def input_images(row: DatasetRow, base_dir: Path | None) -> list[ImageData]:
    """The row's input images; InputImageError names the row."""
    found = []
    for reference in row.input_images or []:
        try:
            found.append(read_image(reference, base_dir))
        except ImageError as error:
            raise InputImageError(f"dataset row {row.row_id!r}: inputImages: {error}") from None
    return found


def _reference(image: ImageData, role: str) -> dict[str, str | None]:
    return {"sha256": image.sha256, "mimeType": image.mime_type, "role": role}


def with_images(
    outputs: list[AgentOutput],
    runs: list[ExpandedRun],
    rows: list[DatasetRow],
    base_dir: Path | None,
) -> tuple[list[AgentOutput], list[OutputImage]]:
    """The outputs with their images marked and listed, and the version's images.

    ``base_dir``: where a row's input image files are (the dataset's folder).
    """
    row_of = {run.run_id: run.row_id for run in runs}
    by_row = {row.row_id: input_images(row, base_dir) for row in rows if row.input_images}
    kept: dict[str, ImageData] = {}
    marked = []
    for output in outputs:
        text, found = images_in_text(output.actual_output) if output.actual_output else (None, [])
        given = by_row.get(row_of.get(output.run_id, ""), [])
        kept.update({image.sha256: image for image in [*given, *found]})
        references = [_reference(image, "input") for image in given]
        references += [
            _reference(kept[sha256], "output") for sha256 in markers_in(text) if sha256 in kept
        ]
        if not references:
            marked.append(output)
            continue
        marked.append(
            output.model_copy(
                update={"actual_output": text, "images": [*(output.images or []), *references]}
            )
        )
    return marked, _rows(outputs, kept.values())


def _rows(outputs: list[AgentOutput], images: Iterable[ImageData]) -> list[OutputImage]:
    if not outputs:
        return []
    version = outputs[0].workflow_hash
    return [
        OutputImage(
            workflow_hash=version,
            sha256=image.sha256,
            mime_type=image.mime_type,
            byte_size=image.byte_size,
            data_base64=image.data_base64,
            url=image.url,
        )
        for image in images
    ]


def image_data(row: OutputImage) -> ImageData:
    """A stored image as the worker's test case builder reads it."""
    return ImageData(
        sha256=row.sha256, mime_type=row.mime_type, data_base64=row.data_base64, url=row.url
    )


def image_by_hash(images: Iterable[OutputImage], sha256: str) -> OutputImage | None:
    """The stored image whose content hash is ``sha256`` (or whose hash starts so), or None."""
    return next((image for image in images if image.sha256.startswith(sha256)), None)
