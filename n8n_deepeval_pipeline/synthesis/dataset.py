"""A synthesized dataset: the source read, the request made, the process run, rows written.

``dataset synthesize`` and ``init --synthesize`` both come here. The source is a workflow
(an id in n8n, or an exported file) or a benchmark file (its workflow and its judge);
the rows are added to a JSONL file or an n8n Data Table as rows drawn from executions
are, so a row already there by its id is not added again.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from n8n_deepeval_pipeline.benchmark.config import load_benchmark
from n8n_deepeval_pipeline.benchmark.n8n_target import N8nWorkflowRef
from n8n_deepeval_pipeline.judging.prices import PriceTable
from n8n_deepeval_pipeline.judging.retry_policy import configured_call_limit_s
from n8n_deepeval_pipeline.judging.spec import JudgeChoice, JudgeSpec
from n8n_deepeval_pipeline.n8n_api.client import N8nClient
from n8n_deepeval_pipeline.n8n_api.sources import fetch_workflow
from n8n_deepeval_pipeline.n8n_api.traffic_dataset import append_to_data_table, append_to_file
from n8n_deepeval_pipeline.synthesis.judges import synthesis_embedder, synthesis_judge
from n8n_deepeval_pipeline.synthesis.process import LineSink, run_synthesis
from n8n_deepeval_pipeline.synthesis.request import (
    DEFAULT_EVOLUTIONS,
    Method,
    SynthesisRequest,
    SynthesisResult,
    evolution_weights,
)
from n8n_deepeval_pipeline.synthesis.rows import (
    Provenance,
    SynthesizedRows,
    contexts_provenance,
    golden_rows,
)
from n8n_deepeval_pipeline.synthesis.seeds import check_documents, read_contexts, read_seeds
from n8n_deepeval_pipeline.synthesis.styling import Styling, styling_of
from n8n_deepeval_pipeline.workflow.file import read_workflow

_BENCHMARK_SUFFIXES = (".yaml", ".yml")
# From scratch, the default is a few goldens; from material, DeepEval's default per piece.
DEFAULT_COUNT = {"scratch": 10, "contexts": 2, "docs": 2, "goldens": 2}
PRICES_ENV = "N8N_DEEPEVAL_PRICES"


@dataclass(frozen=True)
class Source:
    """The workflow the goldens are for, where it was read, and the judge it names."""

    workflow: dict[str, Any]
    label: str
    judge: JudgeChoice | None = None


def read_source(text: str, client: Callable[[], N8nClient]) -> Source:
    """A benchmark file (.yaml), an exported workflow file, or else a workflow id in n8n.

    ``client`` gives the n8n to read an id from (called only then).
    """
    path = Path(text)
    if path.is_file() and path.suffix.lower() in _BENCHMARK_SUFFIXES:
        benchmark = load_benchmark(path)
        if isinstance(benchmark.workflow, N8nWorkflowRef):
            with client() as n8n:
                workflow = fetch_workflow(n8n, benchmark.workflow)
        else:
            workflow = read_workflow(benchmark.workflow)
        return Source(workflow, f"benchmark {path.name}", benchmark.judge)
    if path.is_file():
        return Source(read_workflow(path), f"workflow file {path.name}")
    if path.suffix.lower() in (".json", *_BENCHMARK_SUFFIXES) or os.sep in text:
        raise ValueError(f"{text}: no such file (a workflow id has neither a suffix nor a /)")
    with client() as n8n:
        return Source(fetch_workflow(n8n, N8nWorkflowRef(id=text)), f"workflow {text}")


@dataclass(frozen=True)
class Material:
    """What the goldens are drawn from besides the workflow: at most one kind."""

    contexts: Path | None = None
    documents: tuple[Path, ...] = ()
    dataset: Path | None = None

    @property
    def method(self) -> Method:
        """DeepEval's generation method for this material (none: from scratch)."""
        given = [self.contexts is not None, bool(self.documents), self.dataset is not None]
        if sum(given) > 1:
            raise ValueError("give at most one of --from-contexts, --from-docs, --from-dataset")
        if self.contexts is not None:
            return "contexts"
        if self.documents:
            return "docs"
        return "goldens" if self.dataset is not None else "scratch"


@dataclass(frozen=True)
class SynthesisOptions:
    """DeepEval's knobs, as the command's options give them."""

    count: int | None = None
    conversational: bool = False
    evolutions: Mapping[str, float] = field(default_factory=dict)  # the options' spellings
    num_evolutions: int = 1
    quality_threshold: float = 0.5
    quality_retries: int = 3
    with_expected_output: bool = False
    styling: Mapping[str, str | None] = field(default_factory=dict)  # overrides by field
    embedder: str | None = None
    random_seed: int | None = None
    cache: bool = True


@dataclass(frozen=True)
class Plan:
    """A request ready to run, and what its rows need to be written."""

    request: SynthesisRequest
    provenance: Provenance
    styling: Styling


def plan(
    source: Source,
    material: Material,
    options: SynthesisOptions,
    environ: Mapping[str, str] = os.environ,
    judge: JudgeSpec | None = None,
) -> Plan:
    """The synthesis of ``options`` on ``material`` for ``source``'s workflow.

    ``judge``: the judge to use (default: the source's, over ``N8N_DEEPEVAL_JUDGE_*``).
    File errors name the file and line; option errors are ValueErrors.
    """
    method = material.method
    judge = judge or synthesis_judge(environ, source.judge, options.cache)
    styling = styling_of(source.workflow).overridden(**options.styling)
    evolutions = (
        evolution_weights(dict(options.evolutions)) if options.evolutions else DEFAULT_EVOLUTIONS
    )
    if method == "scratch" and options.num_evolutions and set(evolutions) <= {"Multi-context"}:
        raise ValueError(
            "from scratch there is no context to draw on: DeepEval has no multi-context "
            "evolution there (choose another --evolution)"
        )
    if method == "scratch" and options.with_expected_output:
        raise ValueError(
            "--with-expected-output: from scratch DeepEval writes no expected output (only "
            "from contexts, documents or rows)"
        )
    material_name, contexts = None, {}
    fields: dict[str, Any] = {}
    if method == "contexts":
        assert material.contexts is not None
        numbered = read_contexts(material.contexts)
        fields["contexts"] = [passages for _, passages in numbered]
        contexts = contexts_provenance(material.contexts, numbered)
        material_name = material.contexts.name
    elif method == "docs":
        fields["documents"] = check_documents(list(material.documents))
        fields["embedder"] = synthesis_embedder(environ, judge, options.embedder)
        material_name = ", ".join(path.name for path in material.documents)
    elif method == "goldens":
        assert material.dataset is not None
        fields["seeds"] = read_seeds(material.dataset, options.conversational)
        material_name = material.dataset.name
    request = SynthesisRequest(
        method=method,
        conversational=options.conversational,
        count=options.count or DEFAULT_COUNT[method],
        # From rows, DeepEval reads the style off the rows themselves (real traffic).
        styling=None if method == "goldens" else styling,
        evolutions=evolutions,
        num_evolutions=options.num_evolutions,
        quality_threshold=options.quality_threshold,
        quality_retries=options.quality_retries,
        with_expected_output=options.with_expected_output,
        random_seed=options.random_seed,
        judge=judge,
        judge_call_limit_s=configured_call_limit_s(environ),
        **fields,
    )
    return Plan(request, Provenance.of(request, material_name, contexts), styling)


@dataclass(frozen=True)
class Synthesized:
    """What a synthesis gave: DeepEval's result, its rows, and what the judge cost."""

    result: SynthesisResult
    rows: SynthesizedRows
    cost_usd: float | None


def synthesize(
    planned: Plan, on_line: LineSink | None = None, environ: Mapping[str, str] = os.environ
) -> Synthesized:
    """Run the synthesizer process and turn its goldens into rows."""
    request = planned.request
    result = run_synthesis(request, on_line)
    rows = golden_rows(
        result.goldens,
        planned.provenance,
        request.judge.label,
        request.conversational,
        planned.styling,
        request.with_expected_output,
    )
    prices_file = environ.get(PRICES_ENV)
    prices = PriceTable.from_file(Path(prices_file) if prices_file else None)
    usage = result.usage
    cost = prices.cost(request.judge.model, usage.prompt_tokens, usage.completion_tokens)
    return Synthesized(result, rows, cost)


def write_rows(
    rows: list[dict[str, Any]],
    out: Path | None,
    data_table: str | None,
    client: Callable[[], N8nClient],
) -> int:
    """Add the rows to the JSONL file or the Data Table; how many were new there."""
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        return append_to_file(out, rows).new
    assert data_table is not None
    with client() as n8n:
        return append_to_data_table(n8n, data_table, rows)
