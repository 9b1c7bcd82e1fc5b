"""What to review: strata by metric and verdict, weights near the threshold and on disagreement."""

from collections import Counter

from n8n_deepeval_pipeline.calibration.sampler import Candidate, sample, weight


def candidate(run: int, metric: str, passed: bool, score: float | None = None, **extra):
    chosen = score if score is not None else (0.95 if passed else 0.05)
    return Candidate(
        run_id=f"h:r{run}:0", metric=metric, score=chosen, threshold=0.5,
        direction="higher_is_better", judge_passed=passed, **extra,
    )  # fmt: skip


# helpfulness: 30 passes, 4 fails; bias: 6 passes, 20 fails
POOL = (
    [candidate(i, "helpfulness", True) for i in range(30)]
    + [candidate(100 + i, "helpfulness", False) for i in range(4)]
    + [candidate(200 + i, "bias", True) for i in range(6)]
    + [candidate(300 + i, "bias", False) for i in range(20)]
)


def strata(picked):
    return Counter((c.metric, c.judge_passed) for c in picked)


def test_the_sample_is_shared_evenly_among_metrics_and_verdicts():
    picked = sample(POOL, 16, metric_order=["helpfulness", "bias"])
    assert strata(picked) == {
        ("helpfulness", True): 4, ("helpfulness", False): 4,
        ("bias", True): 4, ("bias", False): 4,
    }  # fmt: skip
    # rounds over the strata: a reviewer who stops after four has seen one of each
    assert strata(picked[:4]) == {key: 1 for key in strata(picked)}
    assert [c.metric for c in picked[:2]] == ["helpfulness", "helpfulness"]


def test_a_small_stratum_gives_its_share_to_the_others():
    picked = sample(POOL, 30, metric_order=["helpfulness", "bias"])
    counts = strata(picked)
    assert counts[("helpfulness", False)] == 4  # all it has
    assert counts[("bias", True)] == 6
    assert sum(counts.values()) == 30
    assert len({c.key for c in picked}) == 30  # never twice
    assert len(sample(POOL, 1000)) == len(POOL)


def test_what_the_reviewer_labelled_is_never_drawn_again():
    done = {c.key for c in POOL if c.metric == "bias"}
    picked = sample(POOL, 20, labelled=done)
    assert {c.metric for c in picked} == {"helpfulness"}
    assert not done & {c.key for c in picked}


def test_the_same_seed_gives_every_reviewer_the_same_runs():
    assert sample(POOL, 12, seed=3) == sample(list(reversed(POOL)), 12, seed=3)
    assert sample(POOL, 12, seed=3) != sample(POOL, 12, seed=4)


def test_weights_favour_scores_near_the_threshold_and_split_panels():
    assert weight(candidate(0, "m", True, score=0.5)) == 4.0  # on the threshold
    assert weight(candidate(0, "m", True, score=0.9)) == 1.0  # far from it
    assert weight(candidate(0, "m", True, score=0.9, judge_agreement=0.5)) == 4.0
    assert weight(candidate(0, "m", True, score=0.9, judge_agreement=1.0)) == 1.0


def test_near_threshold_runs_are_drawn_more_often():
    # one stratum: 10 runs at 0.52 (weight 3.76), 10 at 0.99 (weight 1); 5 drawn per seed
    near = [candidate(i, "m", True, score=0.52) for i in range(10)]
    far = [candidate(50 + i, "m", True, score=0.99) for i in range(10)]
    drawn = Counter(c.score for seed in range(300) for c in sample(near + far, 5, seed=seed))
    assert drawn[0.52] > 2.5 * drawn[0.99]
    assert drawn[0.99] > 0  # a weight, not a filter
