from n8n_deepeval_pipeline.statistics.frontier import frontier


def test_the_frontier_keeps_what_no_other_beats_on_both_cost_and_pass_rate():
    points = {
        "base": (0.010, 0.80),
        "cheap": (0.002, 0.70),  # cheaper, worse: on the frontier
        "dearer": (0.020, 0.80),  # as good as base, dearer: beaten
        "best": (0.030, 0.95),  # dearest, best: on the frontier
        "twin": (0.010, 0.80),  # ties base on both: neither beats the other
        "bad": (0.005, 0.60),  # cheap costs less and passes more: beaten
        "unpriced": (None, 0.99),  # cannot be placed
    }
    assert frontier(points) == ["base", "cheap", "best", "twin"]


def test_without_a_priced_version_there_is_no_frontier():
    assert frontier({"base": (None, 0.8), "fast": (None, 0.9)}) == []
    assert frontier({"alone": (0.0, 0.0)}) == ["alone"]
