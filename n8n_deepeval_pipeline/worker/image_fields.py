"""Images of a test case as DeepEval's ``MLLMImage``, under the names the text gives them.

A text marks an image with DeepEval's ``[DEEPEVAL:IMAGE:<id>]``; DeepEval looks the id up
in its registry of images, which an ``MLLMImage`` joins when it is made. The pipeline's
id is the image's SHA-256, so the same image is one registered image in every test case a
worker builds (and the judge's prompts, which hold the markers, are the same each time,
so its cache finds them).

Only a DeepEval metric that asks a judge sees images: DeepEval refuses a test case with
images for a metric without one (a judge-free check), and this project's own metrics
judge text. For them an image is the text ``[image sha256:<hex>]`` where it stood; a
head-to-head metric reads both runs so too (the other run's images are not carried).
"""

from __future__ import annotations

from deepeval.test_case import MLLMImage

from n8n_deepeval_pipeline.evaluation import EvaluationItem
from n8n_deepeval_pipeline.metrics.entry import MetricEntry
from n8n_deepeval_pipeline.n8n_data.images import MARKER, ImageData, markers_in


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


def reads_images(entry: MetricEntry) -> bool:
    """Whether the metric is shown images: a DeepEval metric that asks a judge, one run."""
    return entry.implementation is not None and entry.needs_judge and not entry.head_to_head


def _as_text(text: str | None) -> str | None:
    return None if text is None else MARKER.sub(r"[image sha256:\1]", text)


def text_only(item: EvaluationItem) -> EvaluationItem:
    """The item with each image written as ``[image sha256:<hex>]``, and no image data."""
    if not item.images:
        return item
    sides = item.head_to_head
    return item.model_copy(
        update={
            "input": _as_text(item.input) if isinstance(item.input, str) else item.input,
            "actual_output": _as_text(item.actual_output),
            "images": None,
            "head_to_head": sides.model_copy(
                update={"opponent_output": _as_text(sides.opponent_output)}
            )
            if sides is not None
            else None,
        }
    )
