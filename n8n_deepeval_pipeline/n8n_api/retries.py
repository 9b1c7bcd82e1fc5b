"""One HTTP request to n8n, retried on a dropped connection or a 429/5xx answer.

The wait honours ``Retry-After`` when n8n sends it, else backs off exponentially. A
transport error of the last attempt (a timeout included) propagates; the caller turns
it into its own, secret-free error.
"""

from __future__ import annotations

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
            time.sleep(min(2.0**attempt, 10.0))
            continue
        if response.status_code in RETRYABLE_STATUS and attempt < attempts:
            delay = parse_retry_after(response.headers.get("retry-after"))
            time.sleep(min(delay if delay is not None else 2.0**attempt, 30.0))
            continue
        return response
    raise ValueError("attempts must be at least 1")
