"""One HTTP request to n8n, retried on a dropped connection or a 429/5xx answer.

The wait honours ``Retry-After`` when n8n sends it, else backs off exponentially. A
transport error of the last attempt (a timeout included) propagates; the caller turns
it into its own, secret-free error.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx2

from n8n_deepeval_pipeline.judging.retry_policy import RETRYABLE_STATUS, parse_retry_after


def send(
    http: httpx2.Client,
    method: str,
    url: str,
    attempts: int,
    retry_connect: bool = True,
    **request: Any,
) -> httpx2.Response:
    """The answer of the last attempt (attempts ≥ 1).

    ``retry_connect=False``: a connection that could not be made ends the attempts.
    """
    for attempt in range(1, attempts + 1):
        try:
            response = http.request(method, url, **request)
        except httpx2.TransportError as error:
            unmade = isinstance(error, httpx2.ConnectError | httpx2.ConnectTimeout)
            if attempt == attempts or (unmade and not retry_connect):
                raise
            time.sleep(_backoff(attempt, None))
            continue
        if response.status_code in RETRYABLE_STATUS and attempt < attempts:
            time.sleep(_backoff(attempt, response))
            continue
        return response
    raise ValueError("attempts must be at least 1")


async def a_send(
    http: httpx2.AsyncClient, method: str, url: str, attempts: int, **request: Any
) -> httpx2.Response:
    """``send`` on an event loop: the answer of the last attempt (attempts ≥ 1)."""
    for attempt in range(1, attempts + 1):
        try:
            response = await http.request(method, url, **request)
        except httpx2.TransportError:
            if attempt == attempts:
                raise
            await asyncio.sleep(_backoff(attempt, None))
            continue
        if response.status_code in RETRYABLE_STATUS and attempt < attempts:
            await asyncio.sleep(_backoff(attempt, response))
            continue
        return response
    raise ValueError("attempts must be at least 1")


def _backoff(attempt: int, response: httpx2.Response | None) -> float:
    """The wait before the next attempt: Retry-After when given, else exponential."""
    if response is None:
        return min(2.0**attempt, 10.0)
    delay = parse_retry_after(response.headers.get("retry-after"))
    return min(delay if delay is not None else 2.0**attempt, 30.0)
