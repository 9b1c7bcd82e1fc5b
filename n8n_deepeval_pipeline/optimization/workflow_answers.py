"""A candidate prompt answered by the workflow itself: its harness copy run with that text.

Each candidate text is set at the prompt's parameter path (the variants' override by path,
``workflow.variants``) on a copy of the workflow, which is a variant of its own with its
own workflowHash; its harness copy is made as any benchmark run makes one (the trigger
replaced, cut after the end node, every side-effect node the target mocks replaced by its
mock), so optimising never acts on the world. Copies are made on first use and kept while
they serve; at most ``keep`` idle ones stay published, and all are removed at the end.

Every answer is journaled as it arrives (``answers.jsonl`` in the search's folder), keyed
by the candidate's digest, the row and how many times that candidate had answered that row
before in this search: a search started again after a kill replays the same answers in
the same order without calling the workflow, so the scores (their tasks fingerprinted by
the answer's run id and item) come from the score journal, and the model's calls from the
judge's cache. An answer is a fresh call each time DeepEval asks, as its own model callback
would be: GEPA asks for a row's answer to score it and again to diagnose it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from n8n_deepeval_pipeline.benchmark.n8n_target import WorkflowTarget
from n8n_deepeval_pipeline.n8n_api.client import N8nClient
from n8n_deepeval_pipeline.n8n_api.executions import steps_by_session
from n8n_deepeval_pipeline.n8n_api.harness_run import (
    harness_body,
    harness_webhook,
    mock_answers,
    remove_stale_copies,
)
from n8n_deepeval_pipeline.n8n_api.webhook import WebhookCaller
from n8n_deepeval_pipeline.n8n_data.agent_steps import marked_mocked, tool_name
from n8n_deepeval_pipeline.optimization.launcher import CallFailed
from n8n_deepeval_pipeline.optimization.spend import Spend, SpendLedger
from n8n_deepeval_pipeline.tables.ids import case_id, run_id
from n8n_deepeval_pipeline.tables.rows import AgentOutput, DatasetRow, ExpandedRun
from n8n_deepeval_pipeline.workflow.hashing import workflow_hash
from n8n_deepeval_pipeline.workflow.mocks import mocked_nodes
from n8n_deepeval_pipeline.workflow.prompt_parameter import PromptParameter
from n8n_deepeval_pipeline.workflow.variants import apply_variant


def digest(text: str) -> str:
    """A candidate text's short digest (what its answers are journaled under)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class AnswerJournal:
    """Every answer of a search, one JSON line each, appended and flushed as it arrives."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self.kept: dict[str, AgentOutput] = {}
        with contextlib.suppress(FileNotFoundError):
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    entry = json.loads(line)
                    self.kept[str(entry["key"])] = AgentOutput.model_validate(entry["output"])
                except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                    continue  # a line torn by a kill: that answer is asked again

    def record(self, key: str, output: AgentOutput) -> None:
        """Keep one answer at once."""
        line = json.dumps({"key": key, "output": output.model_dump(mode="json")})
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as journal:
                journal.write(line + "\n")
                journal.flush()
            self.kept[key] = output


@dataclass
class _Copy:
    """One candidate's published harness copy, its caller, and the calls it serves now."""

    copy_id: str
    caller: WebhookCaller
    client: N8nClient
    stack: ExitStack
    in_use: int = 0


@dataclass
class Answered:
    """An answer as the scorer reads it: the run it was, its row, the workflow's output."""

    run: ExpandedRun
    row: DatasetRow
    output: AgentOutput
    replayed: bool = False


@dataclass
class CandidateCopies:
    """Harness copies of the workflow, one per candidate text, made when first asked for."""

    client: Callable[[], N8nClient]
    base_url: str
    workflow: dict[str, Any]
    target: WorkflowTarget
    parameter: PromptParameter
    label: str  # the copies' names begin with it (the benchmark's name)
    time_limit_s: float
    keep: int = 4
    _live: OrderedDict[str, _Copy] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _making: dict[str, threading.Lock] = field(default_factory=dict)

    def variant(self, candidate: str) -> dict[str, Any]:
        """The workflow with ``candidate`` at the prompt's parameter."""
        return apply_variant(self.workflow, self.parameter.overrides(candidate))

    def remove_stale(self) -> list[str]:
        """Remove copies of this benchmark left by runs that are over; their names."""
        with self.client() as client:
            return remove_stale_copies(client, self.label)

    @contextmanager
    def use(self, candidate: str) -> Iterator[_Copy]:
        """The candidate's copy for the block (made if needed; not removed while in use)."""
        key = digest(candidate)
        with self._lock:
            making = self._making.setdefault(key, threading.Lock())
        with making:
            with self._lock:
                copy = self._live.get(key)
                if copy is not None:
                    copy.in_use += 1
                    self._live.move_to_end(key)
            if copy is None:
                copy = self._make(candidate)
                with self._lock:
                    copy.in_use += 1
                    self._live[key] = copy
        try:
            yield copy
        finally:
            with self._lock:
                copy.in_use -= 1
            self._evict()

    def _make(self, candidate: str) -> _Copy:
        varied = self.variant(candidate)
        answers = mock_answers(self.target, varied)
        stack = ExitStack()
        try:
            client = stack.enter_context(self.client())
            copy_id, url = stack.enter_context(
                harness_webhook(
                    client,
                    self.base_url,
                    varied,
                    self.target,
                    f"{self.label} optimize {digest(candidate)[:8]}",
                    self.time_limit_s,
                    mocked_nodes(varied, answers),
                )
            )
            webhook = self.target.as_webhook(url, harness_body(self.target, varied))
            caller = WebhookCaller(webhook, url, os.environ)
            stack.callback(caller.close)
        except BaseException:
            stack.close()
            raise
        return _Copy(copy_id, caller, client, stack)

    def _evict(self) -> None:
        """Unpublish and remove the least recently used idle copies beyond ``keep``."""
        with self._lock:
            idle = [key for key, copy in self._live.items() if copy.in_use == 0]
            gone = [self._live.pop(key) for key in idle[: max(len(self._live) - self.keep, 0)]]
        for copy in gone:
            copy.stack.close()

    def close(self) -> None:
        """Remove every copy still published."""
        with self._lock:
            gone, self._live = list(self._live.values()), OrderedDict()
        for copy in gone:
            copy.stack.close()


class WorkflowAnswerer:
    """Answers of candidate prompts on dataset rows, from the workflow or the journal."""

    def __init__(
        self,
        copies: CandidateCopies,
        rows: list[DatasetRow],
        journal: AnswerJournal,
        ledger: SpendLedger,
        run_name: str,
    ) -> None:
        self.copies = copies
        self.rows = {row.row_id: row for row in rows}
        self.journal = journal
        self.ledger = ledger
        self.run_name = run_name
        self.answered: dict[str, Answered] = {}
        self._asked: Counter[tuple[str, str]] = Counter()
        self._hashes: dict[str, str] = {}
        self._lock = threading.Lock()
        self._mocked_tools = {
            tool_name(name) for name in mock_answers(copies.target, copies.workflow)
        }

    def _run(self, candidate: str, row: DatasetRow, index: int) -> ExpandedRun:
        key = digest(candidate)
        with self._lock:
            if key not in self._hashes:
                self._hashes[key] = workflow_hash(self.copies.variant(candidate))
            version = self._hashes[key]
        case = case_id(version, row.row_id)
        return ExpandedRun(
            workflow_hash=version,
            run_id=run_id(case, index),
            case_id=case,
            run_index=index,
            row_id=row.row_id,
            run_name=self.run_name,
        )

    def answer(self, candidate: str, golden_id: str) -> tuple[str, str]:
        """The workflow's answer of ``candidate`` on the row: (answer id, its output text)."""
        row = self.rows.get(golden_id)
        if row is None:
            raise CallFailed(f"no dataset row {golden_id!r}")
        with self._lock:
            index = self._asked[(digest(candidate), golden_id)]
            self._asked[(digest(candidate), golden_id)] += 1
        run = self._run(candidate, row, index)
        key = f"{digest(candidate)}:{golden_id}:{index}"
        output = self.journal.kept.get(key)
        replayed = output is not None
        if output is None:
            self.ledger.reserve("answer", Spend(answer_calls=1))
            output = self._call(candidate, run, row)
            self.journal.record(key, output)
        else:
            self.ledger.add(Spend(replayed_answers=1))
        with self._lock:
            self.answered[key] = Answered(run, row, output, replayed)
        return key, output.actual_output or ""

    def _call(self, candidate: str, run: ExpandedRun, row: DatasetRow) -> AgentOutput:
        with self.copies.use(candidate) as copy:
            (output,) = copy.caller.outputs([run], {row.row_id: row})
            if output.intermediate_steps is None and self.copies.target.steps_from_execution:
                output = _with_steps(copy, output)
        steps = marked_mocked(output.intermediate_steps, self._mocked_tools)
        return output.model_copy(update={"intermediate_steps": steps})


def _with_steps(copy: _Copy, output: AgentOutput) -> AgentOutput:
    """The answer's tool calls read from its execution (Return Intermediate Steps off)."""
    if output.error is not None or output.session_id is None:
        return output
    found = steps_by_session(copy.client.executions(copy.copy_id, limit=50))
    steps = found.get(output.session_id)
    return output if steps is None else output.model_copy(update={"intermediate_steps": steps})
