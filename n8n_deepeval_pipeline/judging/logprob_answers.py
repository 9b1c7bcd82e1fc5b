"""Chat completions with log-probabilities, drawn from a seed: raw answers of test judges.

G-Eval asks for its score without a schema and with ``logprobs: true``; it reads the JSON
``{score, reason}`` from the text and weights the score by the probabilities of the
tokens the model could have written in its place. These answers carry the same shape an
OpenAI model returns (``choices[0].logprobs.content``: one entry per token, each with its
``top_logprobs``), drawn from a seed, so the weighting path runs offline.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any

_TOKENS = re.compile(r"\d+|[A-Za-z]+|\s+|[^\sA-Za-z\d]")


def _unit(seed: bytes, draw: int) -> float:
    digest = hashlib.sha256(seed + draw.to_bytes(4, "big")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _entry(token: str, logprob: float, top: list[tuple[str, float]]) -> dict[str, Any]:
    return {
        "token": token,
        "logprob": logprob,
        "bytes": list(token.encode("utf-8")),
        "top_logprobs": [
            {"token": t, "logprob": lp, "bytes": list(t.encode("utf-8"))} for t, lp in top
        ],
    }


def _score_alternatives(score: int, seed: bytes, count: int) -> list[tuple[str, float]]:
    """The score token and its neighbours on 0–10, most likely first (log-probabilities)."""
    neighbours = [s for s in (score - 1, score + 1, score - 2, score + 2) if 0 <= s <= 10]
    share = 0.5 + 0.45 * _unit(seed, 1)  # the chosen score's probability
    weights = [_unit(seed, 2 + i) + 0.05 for i in range(len(neighbours))]
    total = sum(weights)
    ranked = [(str(score), share)] + [
        (str(s), (1 - share) * w / total) for s, w in zip(neighbours, weights, strict=True)
    ]
    return [(token, math.log(p)) for token, p in ranked[: max(count, 1)]]


def rubric_answer(
    seed: bytes, reason: str, top_logprobs: int, score: int | None = None
) -> tuple[str, dict[str, Any]]:
    """The text ``{"score": n, "reason": …}`` (n on 0–10) and its ``logprobs`` object.

    ``score``: the score to give (None: drawn from the seed, as the alternatives always are).
    """
    if score is None:
        score = int(_unit(seed, 0) * 11)
    text = json.dumps({"score": score, "reason": reason})
    content = []
    for token in _TOKENS.findall(text):
        if token == str(score):
            top = _score_alternatives(score, seed, top_logprobs)
            content.append(_entry(token, top[0][1], top))
        else:
            content.append(_entry(token, 0.0, [(token, 0.0)][:top_logprobs]))
    return text, {"content": content, "refusal": None}


def raw_completion(
    text: str, logprobs: dict[str, Any] | None, model: str, prompt_tokens: int = 0
) -> dict[str, Any]:
    """An OpenAI ``ChatCompletion`` (as JSON) holding ``text`` and its log-probabilities."""
    completion_tokens = max(len(text) // 4, 1)
    return {
        "id": "chatcmpl-deterministic",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
                "logprobs": logprobs,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
