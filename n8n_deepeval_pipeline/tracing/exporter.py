"""Where traces go: an OTLP/HTTP endpoint, and the SDK's tracer that sends them there.

Off unless an endpoint is named: ``N8N_DEEPEVAL_OTLP_ENDPOINT`` (a base URL, to which
``/v1/traces`` is added, as OpenTelemetry does for ``OTEL_EXPORTER_OTLP_ENDPOINT``), else
OpenTelemetry's own ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_ENDPOINT``.
The OTLP exporter reads its other standard variables itself (``OTEL_EXPORTER_OTLP_HEADERS``,
``OTEL_EXPORTER_OTLP_TRACES_HEADERS``, timeouts, compression). The exporter is the ``otel``
extra's, imported only when a trace is sent.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from n8n_deepeval_pipeline.environment_variables import setting, value
from n8n_deepeval_pipeline.redaction import url_secrets

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

_TRACES_PATH = "/v1/traces"
_INSTRUMENTATION = "n8n_deepeval_pipeline"


class TracesNotInstalled(RuntimeError):
    """The OTLP exporter is missing: the ``otel`` extra is not installed."""


def traces_endpoint(environ: Mapping[str, str] = os.environ) -> str | None:
    """The URL traces are sent to, or None: no trace is exported (and none is kept)."""
    own = value("N8N_DEEPEVAL_OTLP_ENDPOINT", environ)
    if own:
        return _with_traces_path(own)
    full = value("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", environ)
    if full:
        return full
    base = value("OTEL_EXPORTER_OTLP_ENDPOINT", environ)
    return _with_traces_path(base) if base else None


def _with_traces_path(base: str) -> str:
    """``base`` + ``/v1/traces``, unless it already ends so."""
    stripped = base.rstrip("/")
    return stripped if stripped.endswith(_TRACES_PATH) else f"{stripped}{_TRACES_PATH}"


def content_on(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether spans carry what was said (the GenAI conventions' opt-in content)."""
    flag = value("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", environ) or ""
    return flag.strip().lower() in ("true", "1", "yes")


def shown(endpoint: str) -> str:
    """The endpoint as it may be said: scheme, host, port and path, no credentials."""
    parts = urlsplit(endpoint)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    said = f"{parts.scheme}://{host}{port}{parts.path}"
    for secret in url_secrets(endpoint):
        said = said.replace(secret, "[redacted]")
    return said


class Delivery:
    """What reached the endpoint: spans sent, and spans it refused or never received."""

    def __init__(self) -> None:
        self.sent = 0
        self.lost = 0


@contextmanager
def otlp_tracer(
    endpoint: str, delivery: Delivery, environ: Mapping[str, str] = os.environ
) -> Iterator[Tracer]:
    """A tracer whose spans go to ``endpoint``, all of them sent when the block ends.

    Its own provider (never the process's global one: DeepEval and Dagster may set theirs),
    a batch processor, and a flush and shutdown at the end, so a trace is sent whole;
    ``delivery`` counts what arrived.
    """
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as missing:
        raise TracesNotInstalled(
            f"exporting traces needs the otel extra: pip install 'n8n-deepeval-pipeline[otel]' "
            f"({missing.name} is missing)"
        ) from None
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class Counted(SpanExporter):
        """The OTLP exporter, counting the spans each export delivered or lost."""

        def __init__(self) -> None:
            self.otlp = OTLPSpanExporter(endpoint=endpoint)

        def export(self, spans: Any) -> SpanExportResult:
            result = self.otlp.export(spans)
            if result is SpanExportResult.SUCCESS:
                delivery.sent += len(spans)
            else:
                delivery.lost += len(spans)
            return result

        def shutdown(self) -> None:
            self.otlp.shutdown()  # type: ignore[no-untyped-call]

    service = setting("OTEL_SERVICE_NAME", environ)
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: service}))
    provider.add_span_processor(BatchSpanProcessor(Counted()))
    try:
        yield provider.get_tracer(_INSTRUMENTATION)
    finally:
        provider.force_flush()
        provider.shutdown()
