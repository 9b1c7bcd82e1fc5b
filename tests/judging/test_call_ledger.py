"""The call ledger: every answered judge call, by attempt, read back into each run's spend."""

from n8n_deepeval_pipeline.judging.call_ledger import CallLedger, LedgerTag, answered_calls
from n8n_deepeval_pipeline.judging.prices import PriceTable
from n8n_deepeval_pipeline.tables.judge_spend import JudgeSpend, with_answered_calls


def test_answered_calls_are_read_back_by_attempt_and_a_torn_line_is_skipped(tmp_path):
    folder = tmp_path / "c01_of_01.calls"
    killed = CallLedger(LedgerTag(folder=str(folder), attempt="run-1"))
    for _ in range(3):
        killed.answered("openai:gpt-4o-mini", "gpt-4o-mini", 1000, 100)
    with (folder / "999.jsonl").open("a") as torn:  # a worker killed mid-write
        torn.write('{"attempt": "run-1", "judge": "openai:gpt-4o-mini", "mod')
    CallLedger(LedgerTag(folder=str(folder), attempt="run-2")).answered("j", "gpt-4o-mini", 10, 1)
    calls = list(answered_calls(folder))
    assert sorted(call.attempt for call in calls) == ["run-1", "run-1", "run-1", "run-2"]

    # the journal knew run-1 finished one evaluation with one call; the ledger knows three
    journal = {"run-1": JudgeSpend(evaluations=1, judge_calls=1, cached_calls=2, tokens=1100)}
    spend = with_answered_calls(journal, calls, PriceTable())
    price = PriceTable().cost("gpt-4o-mini", 3000, 300)
    assert spend["run-1"] == JudgeSpend(
        evaluations=1, judge_calls=3, cached_calls=2, tokens=3300, cost_usd=price
    )
    assert spend["run-2"].evaluations == 0 and spend["run-2"].judge_calls == 1
    untouched = {"run-0": JudgeSpend(evaluations=4, judge_calls=4)}  # no ledger: as it was
    assert with_answered_calls(untouched, [], PriceTable()) == untouched
