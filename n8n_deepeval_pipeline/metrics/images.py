"""Image metrics: images a workflow made or edited, and answers that mix text and images.

DeepEval's multimodal metrics send the images to the judge with the prompt: the judge
must be a model that reads images (DeepEval refuses others before any call).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from n8n_deepeval_pipeline.metrics.entry import MetricEntry
from n8n_deepeval_pipeline.metrics.options import ItemField, MetricConfig


class _ImageConfig(MetricConfig):
    """Options of DeepEval's image metrics (they give no reason of the judge's own)."""

    async_mode: bool = Field(
        default=True, description="Let DeepEval make the metric's judge calls concurrently."
    )


class _InContextConfig(_ImageConfig):
    """Metrics that judge each image of the answer with the text around it."""

    max_context_size: int | None = Field(
        default=None,
        ge=1,
        description="At most this many characters of text above and below each image "
        "(default: all of it).",
    )


class TextToImageConfig(_ImageConfig):
    """Text to Image: the image made follows the prompt, and looks natural (one image)."""

    metric: Literal["text_to_image"] = "text_to_image"


class ImageEditingConfig(_ImageConfig):
    """Image Editing: the edited image follows the instruction and the image given."""

    metric: Literal["image_editing"] = "image_editing"


class ImageCoherenceConfig(_InContextConfig):
    """Image Coherence: each image of the answer fits the text around it."""

    metric: Literal["image_coherence"] = "image_coherence"


class ImageHelpfulnessConfig(_InContextConfig):
    """Image Helpfulness: each image of the answer helps the reader understand the text."""

    metric: Literal["image_helpfulness"] = "image_helpfulness"


class ImageReferenceConfig(_InContextConfig):
    """Image Reference: the text of the answer refers to each of its images aptly."""

    metric: Literal["image_reference"] = "image_reference"


def _image_metric(
    name: str, implementation: str, config: type[MetricConfig], *fields: ItemField
) -> MetricEntry:
    return MetricEntry(
        name=name,
        category="images",
        implementation=f"deepeval.metrics.{implementation}",
        needs_judge=True,
        required_fields=("input", "actual_output", *fields),
        config_model=config,
    )


ENTRIES = (
    _image_metric("Text to Image", "TextToImageMetric", TextToImageConfig, "output_images"),
    _image_metric(
        "Image Editing", "ImageEditingMetric", ImageEditingConfig, "input_images", "output_images"
    ),
    _image_metric("Image Coherence", "ImageCoherenceMetric", ImageCoherenceConfig, "output_images"),
    _image_metric(
        "Image Helpfulness", "ImageHelpfulnessMetric", ImageHelpfulnessConfig, "output_images"
    ),
    _image_metric("Image Reference", "ImageReferenceMetric", ImageReferenceConfig, "output_images"),
)
