"""Images of a test case as DeepEval's ``MLLMImage``, under the names the text gives them.

A text marks an image with DeepEval's ``[DEEPEVAL:IMAGE:<id>]``; DeepEval looks the id up
in its registry of images, which an ``MLLMImage`` joins when it is made. The pipeline's
id is the image's SHA-256, so the same image is one registered image in every test case a
worker builds (and the judge's prompts, which hold the markers, are the same each time,
so its cache finds them).
"""

from __future__ import annotations

from deepeval.test_case import MLLMImage

from n8n_deepeval_pipeline.n8n_data.images import ImageData, markers_in


class MissingImageError(ValueError):
    """A text names an image the item does not carry."""


def register_images(images: list[ImageData], *texts: str | None) -> None:
    """Make every image the texts name known to DeepEval (raises if one is not given)."""
    by_hash = {image.sha256: image for image in images}
    for text in texts:
        for sha256 in markers_in(text):
            image = by_hash.get(sha256)
            if image is None:
                raise MissingImageError(
                    f"image {sha256[:12]} is named in the text but not in the results store"
                )
            _register(image)


def _register(image: ImageData) -> None:
    if image.url is not None:
        MLLMImage(url=image.url, _id=image.sha256)
    else:
        MLLMImage(dataBase64=image.data_base64, mimeType=image.mime_type, _id=image.sha256)
