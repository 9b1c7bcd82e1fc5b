"""The synthesizer process asked for its goldens and read back (the CLI's side; no DeepEval).

It is started by ``worker.launcher``: a scratch working folder (DeepEval and ChromaDB write
beside themselves), the workers' environment, which holds no credential (the judge's and
the embedder's keys travel in the request over its private connection), a deadline, and
its log kept in the home when it fails. It sends its progress as ``update`` lines, passed
on to ``on_line``, and its result as ``done``; a synthesizer that fails, dies or overruns
is a failed result quoting its exit code and last log lines.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from n8n_deepeval_pipeline.synthesis.request import SynthesisRequest, SynthesisResult
from n8n_deepeval_pipeline.worker.launcher import ChildFailed, ChildSpec, launched

MODULE = "n8n_deepeval_pipeline.synthesis.synthesizer_run"
LineSink = Callable[[str], None]
_START_S = 120.0  # DeepEval's import (and ChromaDB's, from documents), with room
# The judge calls one golden takes in turn at most: the input, its evolutions, the
# filter's checks and rewrites, the styling and the expected output.
_FIXED_CALLS_PER_GOLDEN = 4


def secrets_of(request: SynthesisRequest) -> list[str]:
    """What no line passed on may show: the judge's and the embedder's keys."""
    found = list(request.judge.secrets)
    if request.embedder is not None and request.embedder.api_key is not None:
        found.append(request.embedder.api_key.get_secret_value())
    return [secret for secret in found if secret]


def time_limit_s(request: SynthesisRequest) -> float:
    """Long enough for every golden's judge calls, each within the request's call limit."""
    pieces = max(len(request.contexts), len(request.seeds), len(request.documents), 1)
    goldens = request.count * pieces
    calls = _FIXED_CALLS_PER_GOLDEN + request.num_evolutions + 2 * request.quality_retries
    rounds = math.ceil(goldens / request.max_concurrent)
    return _START_S + rounds * calls * request.judge_call_limit_s


def run_synthesis(request: SynthesisRequest, on_line: LineSink | None = None) -> SynthesisResult:
    """The synthesizer process's result for ``request``; ``on_line`` gets its progress lines."""
    spec = ChildSpec(name="the synthesizer", module=MODULE, deadline_s=time_limit_s(request))
    try:
        with launched(spec, secrets_of(request)) as child:
            child.send("ask", request)
            while (message := child.receive()).kind == "update":
                if on_line is not None:
                    on_line(str(message.body))
            if message.kind != "done":
                raise child.failure(f"sent {message.kind} instead of its goldens")
            result = message.of(SynthesisResult)
            child.finish()
    except ChildFailed as failed:
        return SynthesisResult(error=failed.message, error_kind="failed")
    return result
