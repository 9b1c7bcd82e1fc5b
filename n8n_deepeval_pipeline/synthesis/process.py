"""The synthesizer process started, fed and read back (the CLI's side; no DeepEval here).

It runs in a scratch folder (DeepEval and ChromaDB write beside themselves) with a
worker's environment, which holds no credential: the judge's key travels in the request on
its standard input. Its standard error (progress, and a crash's last words) is passed on
line by line, redacted.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO

from pydantic import ValidationError

from n8n_deepeval_pipeline.redaction import redact
from n8n_deepeval_pipeline.synthesis.request import SynthesisRequest, SynthesisResult
from n8n_deepeval_pipeline.worker.environment import worker_environment

MODULE = "n8n_deepeval_pipeline.synthesis.synthesizer_run"
LineSink = Callable[[str], None]


def secrets_of(request: SynthesisRequest) -> list[str]:
    """What no line passed on may show: the judge's and the embedder's keys."""
    found = list(request.judge.secrets)
    if request.embedder is not None and request.embedder.api_key is not None:
        found.append(request.embedder.api_key.get_secret_value())
    return [secret for secret in found if secret]


def run_synthesis(request: SynthesisRequest, on_line: LineSink | None = None) -> SynthesisResult:
    """The synthesizer process's result for ``request``; ``on_line`` gets its stderr lines."""
    secrets = secrets_of(request)
    said: list[str] = []

    def forward(stream: IO[str]) -> None:
        for line in stream:
            text = redact(line.rstrip("\n"), secrets)
            said.append(text)
            if on_line is not None:
                on_line(text)

    with tempfile.TemporaryDirectory(prefix="n8n-deepeval-synthesis-") as scratch:
        result = Path(scratch) / "result.json"
        process = subprocess.Popen(
            [sys.executable, "-m", MODULE, str(result)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,  # DeepEval's own progress bars and notices
            stderr=subprocess.PIPE,
            env=worker_environment(secrets),
            cwd=scratch,
            text=True,
            encoding="utf-8",
        )
        assert process.stdin and process.stderr
        reader = threading.Thread(target=forward, args=(process.stderr,), daemon=True)
        reader.start()
        try:
            with process.stdin:
                process.stdin.write(request.to_wire())
            process.wait()
        finally:
            if process.poll() is None:  # interrupted: the process goes with the command
                process.kill()
                process.wait()
        reader.join()
        answer = result.read_text(encoding="utf-8") if result.exists() else ""
    try:
        if process.returncode == 0:
            return SynthesisResult.model_validate_json(answer)
    except ValidationError:
        pass
    last = next((line for line in reversed(said) if line.strip()), "no message")
    return SynthesisResult(
        error=f"the synthesizer process failed (exit {process.returncode}): {last}",
        error_kind="failed",
    )
