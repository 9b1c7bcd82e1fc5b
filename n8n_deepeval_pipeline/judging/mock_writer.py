"""Responses the judge writes for a mocked node, as the evaluation framework's mock generation.

The judge is told what the node is (``workflow.mocks.mock_request``: its type, its
parameters without secrets, a tool's description and arguments) and the row's input, and
writes the items the node would plausibly have returned. It answers in a schema sent as
structured output, as a metric's judge call is (so it is paced, retried and cached the
same way): items of named fields whose values are JSON text, a form every provider's strict
mode takes (an object of arbitrary keys is not one). A reply that does not fit, a refusal
included, is a ``MockWriteError`` naming the node, for the row's runs to carry.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from pydantic import BaseModel, Field, ValidationError

from n8n_deepeval_pipeline.judging.failures import JUDGE_FAILURES

# What a judge call raises when it gets no usable answer: the row's error, not the run's.
_NO_ANSWER = (*JUDGE_FAILURES, ValidationError, ValueError)

_PROMPT = """\
You stand in for one node of an n8n workflow during a test run. The node is not run:
write the output it would plausibly have returned for this input, with realistic values
that fit the node's type and parameters (an HTTP request: the response body; a tool:
what the tool answers the agent).

The node:
{node}

The workflow's input for this test case:
{row_input}

Answer with the node's output items. Each item is a list of fields, each field a name
and its value written as JSON (a number, true, "text", an object or a list).
"""


class MockField(BaseModel):
    """One field of an item."""

    name: str = Field(description="The field's name.")
    value: str = Field(description="The field's value, written as JSON.")


class MockItem(BaseModel):
    """One item the node outputs."""

    fields: list[MockField]


class MockResponse(BaseModel):
    """The items a mocked node returns."""

    items: list[MockItem]

    def as_items(self) -> list[dict[str, Any]]:
        """The items as n8n holds them, each value read as JSON (else kept as text)."""
        return [
            {field.name: _json_or_text(field.value) for field in item.fields} for item in self.items
        ]


class MockWriteError(RuntimeError):
    """The judge wrote no usable response for a mocked node."""


class Judge(Protocol):
    """What the writer needs of a judge: DeepEval's ``generate`` with a schema."""

    def generate(self, prompt: str, schema: type[BaseModel] | None = None) -> Any:
        """The answer, validated against ``schema``."""


def _json_or_text(value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError:
        return value


def mock_prompt(request: dict[str, Any], row_input: Any) -> str:
    """The judge's prompt for one node and one row."""
    node = json.dumps(request, ensure_ascii=False, indent=2, sort_keys=True)
    shown = row_input if isinstance(row_input, str) else json.dumps(row_input, ensure_ascii=False)
    return _PROMPT.format(node=node, row_input=shown)


def write_mock(judge: Judge, request: dict[str, Any], row_input: Any) -> str:
    """The node's response for the row as JSON text (a list of items), written by the judge."""
    name = request["node"]
    try:
        answer = judge.generate(mock_prompt(request, row_input), MockResponse)
    except _NO_ANSWER as error:  # a refusal, a bad reply, an open circuit
        raise MockWriteError(f'mock "{name}": the judge wrote no response: {error}') from None
    if not isinstance(answer, MockResponse):
        raise MockWriteError(f'mock "{name}": the judge answered no items: {str(answer)[:200]}')
    items = answer.as_items()
    if not items:
        raise MockWriteError(f'mock "{name}": the judge answered an empty list of items')
    return json.dumps(items, ensure_ascii=False)


def write_mocks(
    judge: Judge,
    requests: Mapping[str, dict[str, Any]],
    row_inputs: Mapping[str, Any],
    concurrency: int = 4,
) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """Each row's responses by node (row id → node → JSON text), and the rows it failed for.

    One judge call per node and row, before the row's runs: every run of a row gets the
    same response, as a dataset column would give it.
    """
    jobs = [(row_id, name) for row_id in row_inputs for name in requests]

    def one(job: tuple[str, str]) -> str | MockWriteError:
        row_id, name = job
        try:
            return write_mock(judge, requests[name], row_inputs[row_id])
        except MockWriteError as error:
            return error

    written: dict[str, dict[str, str]] = {}
    failed: dict[str, str] = {}
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        for (row_id, name), answer in zip(jobs, pool.map(one, jobs), strict=True):
            if isinstance(answer, MockWriteError):
                failed.setdefault(row_id, str(answer))
            else:
                written.setdefault(row_id, {})[name] = answer
    return {row: mocks for row, mocks in written.items() if row not in failed}, failed
