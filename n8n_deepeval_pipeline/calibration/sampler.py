"""What to put in front of a reviewer: a stratified, weighted sample of judged runs.

The candidates are (run, metric) pairs the judge scored. They are split into strata by
metric and by the judge's verdict, so that every metric's passes and fails are both
reviewed (kappa needs both), and the sample is shared out evenly among the strata
(a stratum with too few candidates gives its share to the others). Within a stratum,
pairs are drawn without replacement with weights that favour what a person's label
tells most about: a score near the threshold (where the verdict flips), and a run on which
a judge panel disagreed. The draw is seeded (Efraimidis–Spirakis keys), so every reviewer
given the same seed sees the same runs: their labels overlap, and their agreement with
each other can be measured. The sample is ordered by rounds over the strata, so a reviewer
who stops early still leaves a stratified sample. A pair the reviewer has labelled is never
drawn again.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

from n8n_deepeval_pipeline.statistics.pass_direction import Direction

NEAR_THRESHOLD = 0.25  # a score this far from the threshold (or farther) gets no extra weight
NEAR_WEIGHT = 3.0  # extra weight of a score on the threshold
DISAGREEMENT_WEIGHT = 6.0  # extra weight per unit of a panel's disagreement (at most 0.5)
DEFAULT_SEED = 0
MAX_SEED = 2**32 - 1  # the largest seed numpy's generator takes (it refuses negatives)


class Candidate(BaseModel):
    """A judged (run, metric) pair that could be labelled."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    metric: str
    score: float
    threshold: float
    direction: Direction
    judge_passed: bool
    judge_agreement: float | None = None  # a panel's share agreeing with its verdict

    @property
    def key(self) -> tuple[str, str]:
        """The pair's identity, as labels are keyed (with the reviewer)."""
        return self.run_id, self.metric


def weight(candidate: Candidate) -> float:
    """How much a label of this pair is worth: 1, more near the threshold and on disagreement."""
    distance = abs(candidate.score - candidate.threshold)
    nearness = max(0.0, 1.0 - distance / NEAR_THRESHOLD)
    disagreement = 0.0 if candidate.judge_agreement is None else 1.0 - candidate.judge_agreement
    return 1.0 + NEAR_WEIGHT * nearness + DISAGREEMENT_WEIGHT * disagreement


def _drawn(stratum: Sequence[Candidate], generator: np.random.Generator) -> list[Candidate]:
    """The stratum in the order of a weighted draw without replacement (largest key first)."""
    ordered = sorted(stratum, key=lambda candidate: candidate.key)
    uniforms = generator.random(len(ordered))
    keys = [
        math.log(max(u, 1e-300)) / weight(candidate)
        for u, candidate in zip(uniforms, ordered, strict=True)
    ]
    ranked = sorted(range(len(ordered)), key=lambda index: keys[index], reverse=True)
    return [ordered[index] for index in ranked]


def sample(
    candidates: Iterable[Candidate],
    count: int,
    labelled: Iterable[tuple[str, str]] = (),
    metric_order: Sequence[str] = (),
    seed: int = DEFAULT_SEED,
) -> list[Candidate]:
    """Up to ``count`` pairs, stratified by metric and verdict, weighted, seeded.

    ``labelled``: (run, metric) pairs already labelled by this reviewer, never drawn.
    ``metric_order``: the benchmark's metrics, the order strata are visited in.
    """
    done = set(labelled)
    strata: dict[tuple[str, bool], list[Candidate]] = defaultdict(list)
    for candidate in candidates:
        if candidate.key not in done:
            strata[(candidate.metric, candidate.judge_passed)].append(candidate)
    position = {metric: index for index, metric in enumerate(metric_order)}
    names = sorted(strata, key=lambda name: (position.get(name[0], len(position)), name))
    generator = np.random.default_rng(seed)
    queues = {name: _drawn(strata[name], generator) for name in names}
    picked: list[Candidate] = []
    while len(picked) < count and any(queues.values()):
        for name in names:  # one round: a pair from each stratum that has one left
            if queues[name] and len(picked) < count:
                picked.append(queues[name].pop(0))
    return picked
