"""Build DeepEval test cases from n8n-shaped items (worker side only)."""

from __future__ import annotations

from typing import Any

from deepeval.test_case import LLMTestCase, ToolCall

from n8n_deepeval_pipeline.agent_steps import (
    ToolCallData,
    parse_intermediate_steps,
    synthetic_trace,
    tool_calls,
)
from n8n_deepeval_pipeline.evaluation import EvaluationItem
from n8n_deepeval_pipeline.metrics.catalog import ItemField

# Where each field comes from, in the words of a benchmark file.
FIELD_SOURCES: dict[ItemField, str] = {
    "input": "'input' (dataset.columnMapping.input)",
    "actual_output": "'output' (the workflow's output for this run)",
    "expected_output": "'expectedOutput' (dataset.columnMapping.expectedOutput)",
    "context": "'context' (dataset.columnMapping.context)",
    "retrieval_context": "'retrievalContext' (dataset.columnMapping.retrievalContext)",
    "tools_called": "'intermediateSteps' (AI Agent with Return Intermediate Steps on)",
    "expected_tools": "'expectedTools' (dataset.columnMapping.expectedTools)",
    "trace": "'intermediateSteps' (at least one step, for the synthetic trace)",
}


class MissingInputError(ValueError):
    """A field the metric needs is absent; the message names it and where it comes from."""

    def __init__(self, fields: list[ItemField]) -> None:
        self.fields = fields
        names = ", ".join(FIELD_SOURCES[field] for field in fields)
        super().__init__(f"missing input: {names}")


def _deepeval_tool_call(call: ToolCallData) -> ToolCall:
    return ToolCall(
        name=call.name,
        input_parameters=call.input_parameters,
        output=call.output,
        reasoning=call.reasoning,
    )


def _missing(
    item: EvaluationItem, needed: tuple[ItemField, ...], steps: list[Any] | None
) -> list[ItemField]:
    present: dict[ItemField, bool] = {
        "input": item.input not in (None, ""),
        "actual_output": item.actual_output is not None,
        "expected_output": item.expected_output is not None,
        "context": bool(item.context),
        "retrieval_context": bool(item.retrieval_context),
        "tools_called": steps is not None,
        "expected_tools": item.expected_tools is not None,
        "trace": bool(steps),
    }
    return [field for field in needed if not present[field]]


def build_llm_test_case(item: EvaluationItem, needed: tuple[ItemField, ...]) -> LLMTestCase:
    """An LLMTestCase with every field the item has; MissingInputError if a needed one is absent."""
    steps = parse_intermediate_steps(item.intermediate_steps)
    missing = _missing(item, needed, steps)
    if missing:
        raise MissingInputError(missing)
    calls = tool_calls(steps) if steps is not None else None
    test_case = LLMTestCase(
        input=str(item.input) if item.input is not None else "",
        actual_output=item.actual_output,
        expected_output=item.expected_output,
        context=item.context,
        retrieval_context=item.retrieval_context,
        tools_called=[_deepeval_tool_call(call) for call in calls] if calls is not None else None,
        expected_tools=[ToolCall(name=name) for name in item.expected_tools]
        if item.expected_tools is not None
        else None,
    )
    if steps:
        test_case._trace_dict = synthetic_trace(steps, item.input, item.actual_output)
    return test_case
