"""Pattern Match's engine: RE2 where it answers as Python's re does, re with a time limit else."""

import random
import re

import pytest

from n8n_deepeval_pipeline import EvaluationItem
from n8n_deepeval_pipeline.worker.pattern_engine import (
    PATTERN_TIME_LIMIT_S,
    PatternTimeout,
    compile_pattern,
)
from tests.conftest import evaluate_all, make_task

CATASTROPHIC = "(a+)+$"


def test_a_catastrophic_pattern_is_matched_by_re2_in_linear_time():
    pattern = compile_pattern(CATASTROPHIC, ignore_case=False)
    assert pattern.fullmatch("a" * 100_000 + "b") is False  # Python's re: centuries
    assert pattern.fullmatch("a" * 100_000) is True
    assert pattern.engine_for("a" * 10 + "b") == "re2"


def test_a_pattern_re2_cannot_take_runs_on_pythons_re_stopped_after_the_limit():
    # a lookahead (the example's own no_refund_promise has one) needs backtracking
    pattern = compile_pattern("^(?!.*x)(a|aa)+$", ignore_case=False)
    assert pattern.engine_for("aaa") == "re"
    assert pattern.fullmatch("aaaa") is True
    with pytest.raises(PatternTimeout) as caught:
        pattern.fullmatch("a" * 64 + "!")
    assert str(caught.value) == (
        f"the pattern was stopped after {PATTERN_TIME_LIMIT_S:g} s on this output: it backtracks "
        "without end on it (Python's re; RE2, which matches in linear time, cannot take its "
        "lookaround or backreference)"
    )


def test_non_ascii_text_goes_to_re_where_re2s_classes_would_differ():
    words = compile_pattern(r"\w+", ignore_case=False)
    assert words.engine_for("cafe") == "re2"
    assert words.engine_for("café") == "re"  # RE2's \w is ASCII, Python's is Unicode
    assert words.fullmatch("café") is True
    plain = compile_pattern("caf.", ignore_case=False)
    assert plain.engine_for("café") == "re2"  # no class that differs: the same answer


# Parity with DeepEval's own engine (Python's re), on patterns and texts drawn at random.
ATOMS = [
    "a",
    "b",
    ".",
    r"\d",
    r"\w",
    r"\s",
    r"\b",
    "[ab]",
    "[^a]",
    r"\.",
    "é",
    "ß",
    "K",
    "\u212a",
    "s",
]
TEXTS = ["", "a", "ab", "aab", "a b", "a.b", "12", "café", "straße", "Kelvin", "\u017f",
         "\u212a", "a\nb", "a\x0bb", "A", "ABC", "x1_y", " ", "é"]  # fmt: skip


def random_pattern(rng):
    def piece(depth):
        if depth > 1 or rng.random() < 0.5:
            atom = rng.choice(ATOMS)
        else:
            inner = "".join(piece(depth + 1) for _ in range(rng.randint(1, 3)))
            atom = rng.choice([f"({inner})", f"(?:{inner})", f"({inner}|{piece(depth + 1)})"])
        return atom + rng.choice(["", "", "*", "+", "?", "{1,2}", "{2}", "*?", "{,2}"])

    flags = rng.choice(["", "", "(?i)", "(?s)", "(?m)"])
    return flags + "".join(piece(0) for _ in range(rng.randint(1, 3)))


def test_every_engine_answers_as_pythons_re_does():
    rng = random.Random(7)
    checked = {"re2": 0, "re": 0}
    for _ in range(5000):
        text = rng.choice(TEXTS)
        pattern, ignore_case = random_pattern(rng), rng.random() < 0.3
        try:
            expected = re.fullmatch(pattern, text, re.IGNORECASE if ignore_case else 0) is not None
        except re.error:
            continue  # the benchmark file's check refuses it
        compiled = compile_pattern(pattern, ignore_case)
        assert compiled.fullmatch(text) is expected, (pattern, ignore_case, text)
        checked[compiled.engine_for(text)] += 1
    assert checked["re2"] > 800 and checked["re"] > 300  # each engine well tried


@pytest.mark.slow
def test_a_catastrophic_pattern_is_scored_in_a_worker_without_taking_the_timeout(dry_run_pool):
    long_output = "a" * 5000 + "b"
    item = EvaluationItem(input="x", actual_output=long_output)
    backtracking = {"metric": "pattern_match", "pattern": "^(?!x)(a|aa)+$"}
    results = evaluate_all(
        dry_run_pool,
        [
            make_task({"metric": "pattern_match", "pattern": CATASTROPHIC}, item, 0, timeout_s=30),
            make_task(backtracking, item, 1, timeout_s=30),
        ],
    )
    assert (results[0].score, results[0].error) == (0.0, None)
    assert results[1].error_kind == "metric_error"
    assert "stopped after 2 s" in results[1].error
