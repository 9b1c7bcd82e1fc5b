"""Which judge writes the goldens, and which embedding model serves ``--from-docs``.

The judge is the one a run would use: the benchmark's ``judge`` (when the source is a
benchmark file) over the default the ``N8N_DEEPEVAL_JUDGE_*`` variables name, with the
pipeline's cache, pacing and retries in the same state folder. The embedder is served by
the judge's provider (OpenAI, Azure OpenAI or an OpenAI-compatible server, with the
judge's endpoint and key) unless ``N8N_DEEPEVAL_EMBEDDER_*`` name another.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, get_args

from n8n_deepeval_pipeline import settings
from n8n_deepeval_pipeline.environment_variables import value
from n8n_deepeval_pipeline.judging.retry_policy import RetryPolicy
from n8n_deepeval_pipeline.judging.spec import (
    JudgeChoice,
    JudgeConfigError,
    JudgeSpec,
    choose_judge,
)
from n8n_deepeval_pipeline.synthesis.request import EmbedderProvider, EmbedderSpec

JUDGE_ENV = "N8N_DEEPEVAL_JUDGE_"
EMBEDDER_ENV = "N8N_DEEPEVAL_EMBEDDER_"
EMBEDDER_PROVIDERS: tuple[str, ...] = get_args(EmbedderProvider)


def _number(environ: Mapping[str, str], name: str, kind: type[int] | type[float]) -> Any:
    value = environ.get(JUDGE_ENV + name, "").strip()
    if not value:
        return None
    try:
        return kind(value)
    except ValueError:
        raise JudgeConfigError(f"{JUDGE_ENV}{name}={value!r} is not a number") from None


def _flag(environ: Mapping[str, str], name: str) -> bool | None:
    value = environ.get(JUDGE_ENV + name, "").strip().lower()
    return None if not value else value in ("1", "true", "yes")


def default_judge(environ: Mapping[str, str], cache: bool = True) -> dict[str, Any]:
    """The default judge's settings from ``N8N_DEEPEVAL_JUDGE_*``, as a run reads them."""
    settings_: dict[str, Any] = {
        "provider": environ.get(JUDGE_ENV + "PROVIDER") or "dry-run",
        "model": environ.get(JUDGE_ENV + "MODEL") or "dry-run",
        "base_url": environ.get(JUDGE_ENV + "BASE_URL") or None,
        "api_key": environ.get(JUDGE_ENV + "API_KEY") or None,
        "api_version": environ.get(JUDGE_ENV + "API_VERSION") or None,
        "deployment": environ.get(JUDGE_ENV + "DEPLOYMENT") or None,
        "region": environ.get(JUDGE_ENV + "REGION") or None,
        "aws_access_key_id": environ.get(JUDGE_ENV + "AWS_ACCESS_KEY_ID") or None,
        "aws_session_token": environ.get(JUDGE_ENV + "AWS_SESSION_TOKEN") or None,
        "structured_outputs": environ.get(JUDGE_ENV + "STRUCTURED_OUTPUTS") or "strict",
        "logprobs": _flag(environ, "LOGPROBS"),
        "retry": RetryPolicy(max_attempts=_number(environ, "MAX_ATTEMPTS", int) or 6),
        "cache": cache and environ.get(JUDGE_ENV + "CACHE", "1") != "0",
        "cache_scope": "shared",
        "state_dir": str(settings.judge_state_dir()),
    }
    optional = {
        "timeout_s": _number(environ, "TIMEOUT_S", float),
        "max_in_flight": _number(environ, "MAX_IN_FLIGHT", int),
        "requests_per_minute": _number(environ, "RPM", int),
        "tokens_per_minute": _number(environ, "TPM", int),
        "breaker_threshold": _number(environ, "BREAKER_THRESHOLD", int),
    }
    settings_.update({name: value for name, value in optional.items() if value is not None})
    return settings_


def synthesis_judge(
    environ: Mapping[str, str], choice: JudgeChoice | None = None, cache: bool = True
) -> JudgeSpec:
    """The judge that writes the goldens: ``choice`` (a benchmark's) over the default.

    The dry-run judge is refused: its placeholders would become the dataset.
    """
    spec = choose_judge(default_judge(environ, cache), choice, environ)
    if spec.is_dry_run:
        raise JudgeConfigError(
            "synthesis needs a real judge (the dry-run judge writes placeholders): set "
            f"{JUDGE_ENV}PROVIDER, {JUDGE_ENV}MODEL and {JUDGE_ENV}API_KEY, or name a judge "
            "in the benchmark file"
        )
    return spec


def synthesis_embedder(
    environ: Mapping[str, str], judge: JudgeSpec, model: str | None
) -> EmbedderSpec:
    """The embedding model of ``--from-docs``: ``model``, served as the judge is.

    Unless ``N8N_DEEPEVAL_EMBEDDER_PROVIDER`` / ``_BASE_URL`` / ``_API_KEY`` / ``_API_VERSION`` say.
    """
    model = model or value("N8N_DEEPEVAL_EMBEDDER_MODEL", environ)
    if not model:
        raise JudgeConfigError(
            "--from-docs needs an embedding model: --embedder MODEL (e.g. "
            f"text-embedding-3-small) or {EMBEDDER_ENV}MODEL"
        )
    provider = value("N8N_DEEPEVAL_EMBEDDER_PROVIDER", environ) or judge.provider
    if provider not in EMBEDDER_PROVIDERS:
        raise JudgeConfigError(
            f"the {provider} judge serves no embeddings: set {EMBEDDER_ENV}PROVIDER to one of "
            f"{', '.join(EMBEDDER_PROVIDERS)} (with {EMBEDDER_ENV}BASE_URL and _API_KEY)"
        )
    same = provider == judge.provider  # the judge's endpoint and key go to its own vendor only
    key = judge.api_key.get_secret_value() if same and judge.api_key else None
    spec = EmbedderSpec(
        provider=provider,
        model=model,
        base_url=value("N8N_DEEPEVAL_EMBEDDER_BASE_URL", environ)
        or (judge.base_url if same else None),
        api_key=value("N8N_DEEPEVAL_EMBEDDER_API_KEY", environ) or key,
        api_version=value("N8N_DEEPEVAL_EMBEDDER_API_VERSION", environ)
        or (judge.api_version if same else None),
    )
    if provider != "openai" and not spec.base_url:
        raise JudgeConfigError(f"the {provider} embedder needs {EMBEDDER_ENV}BASE_URL")
    if provider == "azure-openai" and not spec.api_version:
        raise JudgeConfigError(f"the azure-openai embedder needs {EMBEDDER_ENV}API_VERSION")
    return spec
