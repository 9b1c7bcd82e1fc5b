"""The DataFrame codec: typed columns (also for empty partitions) and JSON round trips."""

import pandas as pd
import pytest

from n8n_deepeval_pipeline import AgentOutput, ConsistencyStats, DatasetRow, MetricScore
from n8n_deepeval_pipeline.tables.frames import OutdatedTableError, from_frame, to_frame

HASH = "c" * 64


def test_an_empty_partition_still_has_every_column_with_its_type():
    frame = to_frame(MetricScore, [])
    assert list(frame.columns) == list(MetricScore.model_fields)
    assert len(frame) == 0
    dtypes = frame.dtypes.astype(str).to_dict()
    assert (dtypes["score"], dtypes["success"], dtypes["judge_calls"]) == (
        "Float64",
        "boolean",
        "Int64",
    )
    assert dtypes["reason"] == "string"
    assert from_frame(MetricScore, frame) == []
    assert to_frame(ConsistencyStats, []).dtypes.astype(str)["pass_at_k"] == "string"


def test_json_fields_are_stored_as_text_and_read_back_as_values():
    row = DatasetRow(
        workflow_hash=HASH,
        row_id="r1",
        position=3,
        input="où est ma commande ?",
        retrieval_context=["a", "b"],
        turns=[{"role": "user", "content": "x"}],
        raw={"id": "r1", "n": 2, "tags": ["x"]},
    )
    frame = to_frame(DatasetRow, [row])
    assert frame.loc[0, "retrieval_context"] == '["a", "b"]'
    assert frame.loc[0, "raw"] == '{"id": "r1", "n": 2, "tags": ["x"]}'
    assert pd.isna(frame.loc[0, "context"])
    assert from_frame(DatasetRow, frame) == [row]


def test_nulls_as_duckdb_returns_them_become_none():
    frame = pd.DataFrame(
        {
            "workflow_hash": [HASH],
            "run_id": ["r:0"],
            "actual_output": [pd.NA],
            "intermediate_steps": [None],
            "turns": [None],
            "label": [None],
            "session_id": [None],
            "latency_s": [float("nan")],
            "error": ["boom"],
        }
    )
    (output,) = from_frame(AgentOutput, frame)
    assert (output.actual_output, output.latency_s, output.intermediate_steps, output.error) == (
        None,
        None,
        None,
        "boom",
    )


def test_a_table_from_before_a_nullable_column_reads_it_as_none_but_not_a_required_one():
    score = MetricScore.model_validate(
        {
            **dict.fromkeys(MetricScore.model_fields),
            "workflow_hash": HASH,
            "run_id": "r:0",
            "metric": "exact_answer",
            "metric_slug": "exact_match",
            "success": True,
            "score": 1.0,
            "direction": "higher_is_better",
            "case_id": "r",
            "threshold": 0.5,
            "judge_calls": 0,
            "judge_retries": 0,
            "cached_calls": 0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "tokens": 0,
            "latency_s": 0.1,
            "dry_run": False,
            "error_kind": "missing_input",
        }
    )
    older = to_frame(MetricScore, [score]).drop(columns=["error_kind"])
    (read,) = from_frame(MetricScore, older)
    assert read == score.model_copy(update={"error_kind": None})
    with pytest.raises(OutdatedTableError, match="has no column run_id: it was written by an"):
        from_frame(MetricScore, older.drop(columns=["run_id"]))


def test_rows_stored_with_the_retired_no_output_kind_read_back_as_target_error():
    """Results stored before one name was kept for a run without output still read."""
    stored = AgentOutput(workflow_hash="a" * 64, run_id="r", error="x", error_kind="no_output")
    assert stored.error_kind == "target_error"
    score = MetricScore.model_validate(
        {
            "workflow_hash": "a" * 64, "run_id": "r", "case_id": "c", "metric": "m",
            "metric_slug": "exact_match", "score": None, "threshold": 0.5, "success": False,
            "direction": "higher_is_better", "reason": None, "error": "x",
            "error_kind": "no_output", "judge": None, "dry_run": False, "judge_calls": 0,
            "judge_retries": 0, "cached_calls": 0, "prompt_tokens": 0, "completion_tokens": 0,
            "tokens": 0, "cost_usd": None, "latency_s": 0.0,
        }
    )  # fmt: skip
    assert score.error_kind == "target_error"


def test_what_is_stored_has_no_configured_secret_and_no_lone_surrogate(monkeypatch):
    import duckdb

    monkeypatch.setenv("SUPPORT_BOT_TOKEN", "bot-token-4e1f9a0c")
    output = AgentOutput(
        workflow_hash=HASH,
        run_id=f"{HASH}:r1:0",
        actual_output="token bot-token-4e1f9a0c, half a pair \ud800",
        intermediate_steps=[{"observation": "again bot-token-4e1f9a0c \udfff"}],
    )
    frame = to_frame(AgentOutput, [output])
    assert frame.loc[0, "actual_output"] == "token [redacted], half a pair \ufffd"
    assert frame.loc[0, "intermediate_steps"] == '[{"observation": "again [redacted] \ufffd"}]'
    with duckdb.connect() as db:  # a lone surrogate would make DuckDB refuse the table
        db.execute("create table outputs as select * from frame")
        assert db.execute("select actual_output from outputs").fetchone() == (
            "token [redacted], half a pair \ufffd",
        )
