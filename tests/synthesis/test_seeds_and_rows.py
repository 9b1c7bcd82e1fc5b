"""What a synthesis reads (contexts, rows, documents) and the rows it writes."""

import json
from pathlib import Path

import pytest

from n8n_deepeval_pipeline.config.errors import DataFileError
from n8n_deepeval_pipeline.judging.spec import JudgeSpec
from n8n_deepeval_pipeline.n8n_api.traffic_dataset import hashed_row_id
from n8n_deepeval_pipeline.synthesis.request import (
    SynthesisRequest,
    SynthesizedGolden,
    evolution_weights,
    parse_evolution,
)
from n8n_deepeval_pipeline.synthesis.rows import Provenance, contexts_provenance, golden_rows
from n8n_deepeval_pipeline.synthesis.seeds import check_documents, read_contexts, read_seeds
from n8n_deepeval_pipeline.synthesis.styling import styling_of
from tests.n8n_api.test_traffic_dataset import WEBHOOK_AGENT

JUDGE = JudgeSpec(provider="openai", model="gpt-4.1", api_key="sk-x")


def test_contexts_are_one_list_of_passages_a_line_and_errors_name_the_line(tmp_path: Path) -> None:
    good = tmp_path / "contexts.jsonl"
    good.write_text('["Refunds take 5 days.", "Only within 30 days."]\n\n["Shipping is free."]\n')
    assert read_contexts(good) == [
        (1, ["Refunds take 5 days.", "Only within 30 days."]),
        (3, ["Shipping is free."]),
    ]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('["ok"]\n{"context": ["x"]}\n["a", ""]\n["unclosed"\n[]\n')
    with pytest.raises(DataFileError) as caught:
        read_contexts(bad)
    message = str(caught.value)
    assert f"{bad}: invalid contexts (--from-contexts)" in message
    assert 'line 2: must be a non-empty JSON list of passages, ["…", …]' in message
    assert (
        "line 3: passage [1] is not a non-empty string (1 such passage(s) on this line)" in message
    )
    assert "line 4: not valid JSON" in message
    assert "line 5: must be a non-empty JSON list" in message


def test_rows_to_vary_are_read_from_jsonl_or_csv_and_a_row_without_input_is_named(
    tmp_path: Path,
) -> None:
    rows = tmp_path / "traffic.jsonl"
    rows.write_text(
        json.dumps({"rowId": "ex-1", "input": "Where is my order?", "context": ["A3301 ships"],
                    "expectedOutput": "Tomorrow."}) + "\n"
        + json.dumps({"input": "Hi", "context": '["one passage"]'}) + "\n"
    )  # fmt: skip
    first, second = read_seeds(rows, conversational=False)
    assert first.model_dump() == {
        "text": "Where is my order?",
        "context": ["A3301 ships"],
        "expected": "Tomorrow.",
        "origin": "traffic.jsonl row ex-1",
    }
    assert (second.context, second.origin) == (["one passage"], "traffic.jsonl row 2")
    table = tmp_path / "cases.csv"
    table.write_text("id,input,expectedOutput\nq1,What is 6*7?,42\nq2,,\n")
    with pytest.raises(
        DataFileError, match=r"row 2: no 'input' \(columns: expectedOutput, id, input\)"
    ):
        read_seeds(table, conversational=False)
    scenarios = tmp_path / "goldens.jsonl"
    scenarios.write_text(json.dumps({"scenario": "A refund", "expectedOutcome": "Refunded"}) + "\n")
    (seed,) = read_seeds(scenarios, conversational=True)
    assert (seed.text, seed.expected) == ("A refund", "Refunded")
    with pytest.raises(
        DataFileError, match=r"a dataset is a \.jsonl, \.ndjson, \.csv, \.parquet file"
    ):
        read_seeds(tmp_path / "cases.txt", conversational=False)


def test_documents_must_exist_and_be_of_a_type_deepeval_loads(tmp_path: Path) -> None:
    guide = tmp_path / "guide.md"
    guide.write_text("# Returns\nWithin 30 days.")
    assert check_documents([guide]) == [str(guide.resolve())]
    with pytest.raises(DataFileError) as caught:
        check_documents([tmp_path / "gone.md", tmp_path / "sheet.xlsx"])
    assert "gone.md: invalid document (--from-docs)" in str(caught.value)
    assert "file not found" in str(caught.value)


def test_evolutions_are_named_as_the_option_spells_them_and_weighed() -> None:
    assert parse_evolution("reasoning") == ("reasoning", 1.0)
    assert parse_evolution("In-Breadth=2.5") == ("in-breadth", 2.5)
    assert evolution_weights({"multi-context": 1, "in-breadth": 2}) == {
        "Multi-context": 1, "In-Breadth": 2}  # fmt: skip
    with pytest.raises(ValueError, match="unknown evolution 'creative': choose from reasoning"):
        parse_evolution("creative")
    with pytest.raises(ValueError, match="must be above 0"):
        parse_evolution("reasoning=0")


def golden(text: str, **fields) -> SynthesizedGolden:
    return SynthesizedGolden(text=text, evolutions=["Reasoning"], quality=0.8, **fields)


def test_rows_carry_provenance_an_id_hashed_from_the_input_and_no_expected_output(
    tmp_path: Path,
) -> None:
    contexts = [(1, ["Refunds take 5 days."]), (4, ["Shipping is free."])]
    request = SynthesisRequest(method="contexts", count=2, judge=JUDGE,
                               contexts=[c for _, c in contexts])  # fmt: skip
    lines = contexts_provenance(tmp_path / "contexts.jsonl", contexts)
    provenance = Provenance.of(request, "contexts.jsonl", lines)
    made = golden_rows(
        [golden(" How long do refunds take? ", context=["Refunds take 5 days."], expected="5 days"),
         golden("How long do refunds take?", context=["Refunds take 5 days."]),
         golden("Is shipping free?", context=["Shipping is free."])],
        provenance, JUDGE.label, conversational=False, styling=None, with_expected=False,
    )  # fmt: skip
    assert made.duplicates == 1  # the same golden twice is one row, the first kept
    first, second = made.rows
    assert first == {
        "rowId": hashed_row_id(
            "syn", {"input": "How long do refunds take?", "context": ["Refunds take 5 days."]}
        ),
        "input": "How long do refunds take?",
        "expectedOutput": None,  # not the judge's "5 days": a judge's answer is no ground truth
        "context": ["Refunds take 5 days."],
        "synthetic": True,
        "source": "contexts.jsonl line 1",
        "evolutions": ["Reasoning"],
        "quality": 0.8,
        "synthesizedBy": "openai:gpt-4.1",
    }
    assert second["source"] == "contexts.jsonl line 4"
    asked = golden_rows(
        [golden("Q", expected="A")],
        Provenance.of(SynthesisRequest(method="scratch", count=1, judge=JUDGE)),
        "j",
        False,
        None,
        True,
    )
    assert (asked.rows[0]["expectedOutput"], asked.rows[0]["source"]) == ("A", "scratch")
    assert asked.rows[0]["rowId"] == hashed_row_id("syn", {"input": "Q"})  # no context


def test_the_same_input_from_two_contexts_is_two_rows_as_deepeval_keeps_two_goldens(
    tmp_path: Path,
) -> None:
    contexts = [(1, ["Refunds take 5 days."]), (2, ["Refunds of sale items take 10 days."])]
    request = SynthesisRequest(method="contexts", count=1, judge=JUDGE,
                               contexts=[c for _, c in contexts])  # fmt: skip
    provenance = Provenance.of(
        request, "contexts.jsonl", contexts_provenance(tmp_path / "contexts.jsonl", contexts)
    )
    made = golden_rows(
        [golden("How long do refunds take?", context=passages) for _, passages in contexts],
        provenance, JUDGE.label, conversational=False, styling=None, with_expected=False,
    )  # fmt: skip
    assert made.duplicates == 0  # before: one row, the second context's golden dropped unsaid
    assert [(row["input"], row["context"], row["source"]) for row in made.rows] == [
        ("How long do refunds take?", ["Refunds take 5 days."], "contexts.jsonl line 1"),
        ("How long do refunds take?", ["Refunds of sale items take 10 days."],
         "contexts.jsonl line 2"),
    ]  # fmt: skip
    assert len({row["rowId"] for row in made.rows}) == 2


def test_conversational_rows_are_goldens_a_simulation_reads() -> None:
    styling = styling_of(WEBHOOK_AGENT)
    request = SynthesisRequest(method="docs", count=2, judge=JUDGE, conversational=True)
    (row,) = golden_rows(
        [golden("A customer wants a refund for order A3301.", expected="Refund started",
                source_file="/docs/returns.md", context=["Refunds take 5 days."])],
        Provenance.of(request, "returns.md"), JUDGE.label, True, styling, with_expected=True,
    ).rows  # fmt: skip
    assert row["rowId"] == hashed_row_id(
        "syn", {"scenario": row["scenario"], "context": ["Refunds take 5 days."]}
    )
    assert {
        key: row[key] for key in ("scenario", "expectedOutcome", "userDescription", "source")
    } == {
        "scenario": "A customer wants a refund for order A3301.",
        "expectedOutcome": "Refund started",
        "userDescription": styling.user,
        "source": "returns.md",
    }
    assert "input" not in row and "expectedOutput" not in row
