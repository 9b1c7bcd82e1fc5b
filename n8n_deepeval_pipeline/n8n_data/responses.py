"""What an n8n workflow answered, normalised: the output text, tool calls, session, error.

Accepted answers: an object with
``output``, ``response``, ``message.content``, ``text`` or ``actualOutput``; n8n's item
lists (``[{json: {...}}]``, the first item counts); plain text. ``responsePath`` (a
JMESPath query over the whole answer) picks the output from any other shape. Tool calls come from
``intermediateSteps``, ``tool_calls`` or ``actions``. A non-empty ``error`` field is a
failure even in a 2xx answer. Images the answer carries outside its text (n8n binary
data with its base64, OpenAI's ``b64_json``) follow the output as markdown images of data
URIs, which the ``output_images`` step takes out into its table.
"""

from __future__ import annotations

import json
from typing import Any

import jmespath
from jmespath.exceptions import JMESPathError
from pydantic import BaseModel

from n8n_deepeval_pipeline.data_limits import DataLimitError, loads_json
from n8n_deepeval_pipeline.n8n_data.images import ImageData, image_from_bytes, images_in_items
from n8n_deepeval_pipeline.n8n_data.json_fields import as_text

_OUTPUT_KEYS = ("output", "response", "text", "actualOutput", "answer")
_STEP_KEYS = ("intermediateSteps", "tool_calls", "toolCalls", "actions")


class ResponseShapeError(ValueError):
    """The answer cannot be read as a workflow output."""


class NormalisedResponse(BaseModel):
    """One answer of the workflow, in the fields the pipeline stores."""

    output: str | None = None
    intermediate_steps: list[Any] | None = None
    session_id: str | None = None
    error: str | None = None


def parse_body(text: str) -> Any:
    """The answer as JSON, or the text itself when it is not JSON (n8n may answer text).

    An answer nested deeper than ``data_limits.MAX_DEPTH`` levels fails its run alone.
    """
    stripped = text.strip()
    if not stripped:
        return None
    try:
        return loads_json(stripped)
    except DataLimitError as error:
        raise ResponseShapeError(f"the answer is {error}") from None
    except json.JSONDecodeError:
        if stripped[:1] in ("{", "["):
            raise ResponseShapeError(f"unparsable JSON body: {stripped[:80]!r}") from None
        return text


def search(path: str, value: Any) -> Any:
    """A JMESPath query (a path language, never code) over the answer."""
    try:
        return jmespath.search(path, value)
    except JMESPathError as error:
        raise ResponseShapeError(f"responsePath {path!r}: {error}") from None


def _first_item(body: Any) -> Any:
    if isinstance(body, list):
        if not body:
            return None
        first = body[0]
        return first["json"] if isinstance(first, dict) and "json" in first else first
    return body


def _output_of(item: dict[str, Any]) -> Any:
    for key in _OUTPUT_KEYS:
        if item.get(key) is not None:
            return item[key]
    message = item.get("message")
    if isinstance(message, dict) and message.get("content") is not None:
        return message["content"]
    return item


def _steps_of(item: dict[str, Any]) -> list[Any] | None:
    for key in _STEP_KEYS:
        steps = item.get(key)
        if isinstance(steps, list):
            return steps
    return None


def normalise_response(
    body: Any, response_path: str | None = None, session_path: str | None = None
) -> NormalisedResponse:
    """The output, tool calls, session id and error of one answer."""
    item = _first_item(body)
    session = search(session_path, body) if session_path else None
    session_id = None if session is None else str(session)
    if isinstance(item, dict) and item.get("error"):
        return NormalisedResponse(error=str(as_text(item["error"]))[:300], session_id=session_id)
    steps = _steps_of(item) if isinstance(item, dict) else None
    if response_path:
        output = search(response_path, body)
        if output is None:
            raise ResponseShapeError(f"responsePath {response_path!r} found nothing")
    else:
        output = _output_of(item) if isinstance(item, dict) else item
    text = with_images(as_text(output), images_in_items(body))
    return NormalisedResponse(output=text, intermediate_steps=steps, session_id=session_id)


def _inline(image: ImageData) -> str:
    if image.url is not None:
        return f"![image]({image.url})"
    return f"![image](data:{image.mime_type};base64,{image.data_base64})"


def with_images(text: str | None, images: list[ImageData]) -> str | None:
    """The output with the images found outside it after it, as markdown data URIs."""
    if not images:
        return text
    return "\n".join(part for part in (text, *map(_inline, images)) if part)


def image_answer(data: bytes, mime_type: str) -> str:
    """An answer that is an image's bytes, as an output."""
    return _inline(image_from_bytes(data, mime_type))
