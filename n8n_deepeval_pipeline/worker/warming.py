"""What the zygote prepares once, so that no forked worker pays it again.

A worker inherits everything the zygote built before the fork. Left lazy, each worker
built the same things on its first evaluations (per run, for the certificates, since a
run's state folder makes a new judge): ~0.1 s of CPU for the certificates, ~2 ms per
DeepEval prompt template compiled (a metric has 2-4) and ~1 ms per JSON schema of its
answers. Templates and schemas are prepared for the metrics a pool is about to run, not
the whole catalog (100 templates, 0.3 s of the zygote's start-up), and the SDKs of the
pool's judges are imported (the anthropic SDK takes 2.7 s, google-genai about as long),
only for the providers its judges use.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

from deepeval.config.settings import get_settings
from deepeval.templates import DAG_NODE_TEMPLATE_CLASSES, iter_base_template_methods
from deepeval.templates.resolver import MetricTemplateNotFoundError
from pydantic import BaseModel

from n8n_deepeval_pipeline.judging.providers import import_provider, tls_context
from n8n_deepeval_pipeline.judging.wire_format import plain_json_schema, strict_response_format
from n8n_deepeval_pipeline.metrics.catalog import CATALOG
from n8n_deepeval_pipeline.metrics.entry import MetricEntry
from n8n_deepeval_pipeline.worker.arena_order import keep_arena_order
from n8n_deepeval_pipeline.worker.metric_builder import import_implementation


def warm_up() -> None:
    """Import every metric, build DeepEval's settings, load the judge's certificates.

    The first evaluation then pays no import, lazy imports do not look like pollution
    later, and the settings singleton is part of the snapshot (were it restored to
    "unset" after each evaluation, every metric would rebuild it: ~25 ms of CPU).
    """
    for entry in CATALOG.values():
        if entry.implementation is not None:
            import_implementation(entry)
    keep_arena_order()  # before the module snapshot: restoring it keeps the order too
    get_settings()
    tls_context()


def prepare_metrics(slugs: Iterable[str], providers: Iterable[str]) -> int:
    """Compile the prompt templates and build the answer schemas of these catalog metrics.

    The schemas are built in the forms judges are sent them; the SDKs of ``providers``
    are imported. Returns how many templates and schemas there are (unknown slugs are
    skipped: a task with one becomes an ``invalid_config`` row in the worker, as before).
    """
    entries = [CATALOG[slug] for slug in set(slugs) if slug in CATALOG]
    classes = [import_implementation(e) for e in entries if e.implementation is not None]
    templates = _compile_templates(
        {cls.__name__ for cls in classes}
        | (DAG_NODE_TEMPLATE_CLASSES if any(_uses_dag(e) for e in entries) else set())
    )
    for provider in set(providers):
        import_provider(provider)
    return templates + _build_schemas(classes)


def _uses_dag(entry: MetricEntry) -> bool:
    return "dag" in entry.config_model.model_fields


def _compile_templates(class_names: set[str]) -> int:
    # DeepEval caches a compiled template per process on first use, in this registry.
    from deepeval.templates.resolver import _registry

    compiled = 0
    for name in sorted(class_names):
        try:
            methods = iter_base_template_methods("metrics", name)
        except MetricTemplateNotFoundError:
            continue  # a deterministic metric: no prompts
        for method, _ in methods:
            _registry.get_compiled("metrics", name, method, True)  # strict: DeepEval's default
            compiled += 1
    return compiled


def _build_schemas(classes: list[Any]) -> int:
    """The schemas of the answers these metrics ask for, as the judge sends them."""
    built = 0
    for cls in classes:
        # DeepEval keeps a metric's answer models in the ``schema`` module beside it.
        name = f"{cls.__module__.rpartition('.')[0]}.schema"
        module = sys.modules.get(name)
        models = [
            value
            for value in (vars(module).values() if module is not None else ())
            if isinstance(value, type) and issubclass(value, BaseModel) and value.__module__ == name
        ]
        for model in models:
            plain_json_schema(model)
            strict_response_format(model)
        built += len(models)
    return built
