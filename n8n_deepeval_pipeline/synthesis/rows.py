"""Synthesized goldens as dataset rows, each with where it came from.

A row carries its provenance: ``synthetic: true``, ``source`` (from scratch, or the
contexts line, document or dataset row it was drawn from), the ``evolutions`` DeepEval
applied, the filter's ``quality`` score of its input (None where DeepEval does not filter:
from scratch) and ``synthesizedBy`` (the judge). ``expectedOutput`` (a conversation's
``expectedOutcome``) stays empty unless it was asked for: a judge's answer is not ground
truth. A row's id is a hash of its input (its scenario) and of its context when it has
one, so the same golden is one row and a second synthesis adds only new ones, while the
same input drawn from two contexts stays two rows, as DeepEval's Synthesizer returns two
goldens (a context is what contextual metrics judge the answer against).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from n8n_deepeval_pipeline.n8n_api.traffic_dataset import ID_COLUMN, hashed_row_id
from n8n_deepeval_pipeline.synthesis.request import SynthesisRequest, SynthesizedGolden
from n8n_deepeval_pipeline.synthesis.styling import Styling

ROW_KIND = "syn"
# The columns of a conversational golden (DeepEval's fields, camelCase): what a benchmark's
# simulation reads.
SCENARIO, EXPECTED_OUTCOME, USER_DESCRIPTION = "scenario", "expectedOutcome", "userDescription"


@dataclass(frozen=True)
class Provenance:
    """Where a synthesis drew from, to name each golden's source."""

    by_context: dict[tuple[str, ...], str]  # a context's passages → where they were read
    fallback: str  # a golden whose context names nothing: the material as a whole

    @classmethod
    def of(
        cls,
        request: SynthesisRequest,
        material: str | None = None,
        contexts: dict[tuple[str, ...], str] | None = None,
    ) -> Provenance:
        """The provenance of ``request``'s goldens.

        ``material`` names its file or files; ``contexts`` says where each context was read.
        """
        by_context = dict(contexts or {})
        for seed in request.seeds:
            if seed.context:
                by_context.setdefault(tuple(seed.context), seed.origin)
        fallback = "scratch" if request.method == "scratch" else (material or request.method)
        return cls(by_context, fallback)

    def source(self, golden: SynthesizedGolden) -> str:
        """Where one golden came from."""
        if golden.source_file:
            return Path(golden.source_file).name
        if golden.context and tuple(golden.context) in self.by_context:
            return self.by_context[tuple(golden.context)]
        return self.fallback


def contexts_provenance(
    path: Path, numbered: Sequence[tuple[int, list[str]]]
) -> dict[tuple[str, ...], str]:
    """Each context of a ``--from-contexts`` file → its file name and line."""
    found: dict[tuple[str, ...], str] = {}
    for number, passages in numbered:
        found.setdefault(tuple(passages), f"{path.name} line {number}")
    return found


@dataclass(frozen=True)
class SynthesizedRows:
    """The rows of the goldens, one per golden, and how many goldens repeated one before."""

    rows: list[dict[str, Any]]
    duplicates: int


def golden_rows(
    goldens: Sequence[SynthesizedGolden],
    provenance: Provenance,
    judge_label: str,
    conversational: bool,
    styling: Styling | None,
    with_expected: bool,
) -> SynthesizedRows:
    """One row per distinct golden (input and context), provenance attached.

    A deterministic judge can give the same input for the same context twice (DeepEval
    asks it the same evolution prompt): a dataset keeps one. The same input from another
    context is another golden, kept as DeepEval keeps it.
    """
    rows: dict[str, dict[str, Any]] = {}
    for golden in goldens:
        row = _row(golden, provenance, judge_label, conversational, styling, with_expected)
        rows.setdefault(row[ID_COLUMN], row)
    return SynthesizedRows(list(rows.values()), len(goldens) - len(rows))


def _row(
    golden: SynthesizedGolden,
    provenance: Provenance,
    judge_label: str,
    conversational: bool,
    styling: Styling | None,
    with_expected: bool,
) -> dict[str, Any]:
    text = golden.text.strip()
    expected = golden.expected if with_expected else None
    if conversational:
        asked: dict[str, Any] = {SCENARIO: text}
        fields = {
            EXPECTED_OUTCOME: expected,
            USER_DESCRIPTION: styling.user if styling is not None else None,
        }
    else:
        asked = {"input": text}
        fields = {"expectedOutput": expected}
    keyed = {**asked, "context": list(golden.context)} if golden.context else asked
    return {
        ID_COLUMN: hashed_row_id(ROW_KIND, keyed),
        **asked,
        **fields,
        "context": golden.context or None,
        "synthetic": True,
        "source": provenance.source(golden),
        "evolutions": list(golden.evolutions),
        "quality": golden.quality,
        "synthesizedBy": judge_label,
    }
