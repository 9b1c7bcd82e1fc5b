"""Images found in answers: taken out of the text, named by content hash, marked in place."""

import base64
import hashlib

from n8n_deepeval_pipeline.n8n_data.images import (
    image_from_reference,
    images_in_items,
    images_in_text,
    markers_in,
    with_markers,
)
from n8n_deepeval_pipeline.n8n_data.responses import image_answer, normalise_response
from tests.png_images import BLUE_SQUARE, RED_SQUARE

RED = base64.b64encode(RED_SQUARE).decode()
RED_SHA = hashlib.sha256(RED_SQUARE).hexdigest()


def test_data_uris_and_markdown_images_become_markers_where_they_stood():
    text = (
        f"Here it is:\n![a red square](data:image/png;base64,{RED})\n"
        f"and again data:image/png;base64,{RED} then ![chart](https://img.example/c.png)."
    )
    marked, images = images_in_text(text)
    url_sha = hashlib.sha256(b"https://img.example/c.png").hexdigest()
    assert marked == (
        f"Here it is:\n[DEEPEVAL:IMAGE:{RED_SHA}]\nand again [DEEPEVAL:IMAGE:{RED_SHA}] then "
        f"[DEEPEVAL:IMAGE:{url_sha}]."
    )
    assert [image.sha256 for image in images] == [RED_SHA, RED_SHA, url_sha]
    assert images[0].data_base64 == RED and images[0].byte_size == len(RED_SQUARE)
    assert (images[2].url, images[2].mime_type, images[2].data_base64) == (
        "https://img.example/c.png",
        "image/png",
        None,
    )
    assert markers_in(marked) == [RED_SHA, url_sha]


def test_text_that_only_looks_like_an_image_stays_as_it_is():
    text = "data:image/png;base64,!!!notbase64 and a [link](https://example.com)"
    assert images_in_text(text) == (text, [])


def test_n8n_binary_data_and_openais_b64_json_are_found_outside_the_text():
    blue = base64.b64encode(BLUE_SQUARE).decode()
    answer = [
        {
            "json": {"output": "done"},
            "binary": {
                "data": {"mimeType": "image/png", "data": RED, "fileName": "red.png"},
                "doc": {"mimeType": "application/pdf", "data": RED},  # not an image
                "stored": {"mimeType": "image/png", "id": "filesystem-v2:abc"},  # not here
            },
        },
        {"json": {"data": [{"b64_json": blue}]}},
    ]
    found = images_in_items(answer)
    assert [(image.sha256, image.mime_type) for image in found] == [
        (RED_SHA, "image/png"),
        (hashlib.sha256(BLUE_SQUARE).hexdigest(), "image/png"),
    ]


def test_an_answers_images_follow_its_output_and_an_image_answer_is_the_output():
    body = {"output": "A red square.", "binary": {"data": {"mimeType": "image/png", "data": RED}}}
    answer = normalise_response(body)
    assert answer.output == f"A red square.\n![image](data:image/png;base64,{RED})"
    marked, images = images_in_text(answer.output)
    assert marked == f"A red square.\n[DEEPEVAL:IMAGE:{RED_SHA}]" and len(images) == 1
    assert image_answer(RED_SQUARE, "image/png") == f"![image](data:image/png;base64,{RED})"


def test_references_and_markers():
    assert image_from_reference(f"data:image/png;base64,{RED}").sha256 == RED_SHA
    assert image_from_reference("https://x.example/a.jpg").mime_type == "image/jpeg"
    assert image_from_reference("pictures/a.png") is None  # a file: read by the caller
    (image,) = images_in_text(f"data:image/png;base64,{RED}")[1]
    assert with_markers("Make it blue.", [image]) == f"Make it blue.\n{image.marker}"
    assert with_markers(image.marker, [image]) == image.marker  # already there
