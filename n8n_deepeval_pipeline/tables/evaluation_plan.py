"""The ``metric_scores`` step: every (run, metric) pair as a task, and each result as a row.

The worker pool sits between the two halves, so this step is a plan rather than one
function: ``EvaluationPlan`` lists the tasks to send and the rows known up front (runs
without an output, preset expressions that find nothing in the run's item), and turns
each finished result into its ``MetricScore`` row.

Each metric is scored by its own judge if it names one (``judge`` or ``model``), else by
the benchmark's. A metric with a judge panel (``judges``) is still one task: the worker
scores it once per judge, in turn, and the row combines their votes
(``statistics.judge_panel``); the task's timeout is the per-evaluation timeout times the
number of judges. Cost is priced per judge, by that judge's model.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from functools import partial
from typing import Any

from n8n_deepeval_pipeline.benchmark.config import Benchmark
from n8n_deepeval_pipeline.evaluation import (
    EvaluationItem,
    EvaluationResult,
    EvaluationTask,
    JudgeVote,
)
from n8n_deepeval_pipeline.judging.prices import PriceTable
from n8n_deepeval_pipeline.judging.spec import (
    JudgeChoice,
    JudgeConfigError,
    JudgeResolver,
    JudgeSpec,
    choose_judge,
    judge_settings,
)
from n8n_deepeval_pipeline.metrics.catalog import entry_for
from n8n_deepeval_pipeline.metrics.entry import MetricEntry
from n8n_deepeval_pipeline.metrics.options import JUDGE_OPTIONS, MetricConfig
from n8n_deepeval_pipeline.n8n_data.agent_steps import AgentTool
from n8n_deepeval_pipeline.n8n_data.images import ImageData, markers_in
from n8n_deepeval_pipeline.n8n_data.json_fields import structured
from n8n_deepeval_pipeline.n8n_data.mcp_calls import McpServer
from n8n_deepeval_pipeline.statistics.judge_panel import PanelRule, combine_panel
from n8n_deepeval_pipeline.statistics.pass_direction import effective_threshold, passes
from n8n_deepeval_pipeline.tables.head_to_head import Family
from n8n_deepeval_pipeline.tables.judge_spend import JudgeSpend, spend_by_run
from n8n_deepeval_pipeline.tables.output_images import image_data
from n8n_deepeval_pipeline.tables.rows import (
    AgentOutput,
    DatasetRow,
    ExpandedRun,
    MetricScore,
    OutputImage,
)
from n8n_deepeval_pipeline.tables.run_items import (
    ExpressionFoundNothingError,
    item_expressions,
    run_item,
    with_expressions,
)
from n8n_deepeval_pipeline.workflow.variants import BASE


def _history_messages(turns: Any) -> Any:
    """Dataset history as its list of messages, also from JSON text or ``{messages: […]}``."""
    try:
        value = structured(turns, "chat history", ValueError)
    except ValueError:
        return turns  # not JSON: the worker's error names the field
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        return value["messages"]
    return value


def conversation(row: DatasetRow, output: AgentOutput) -> Any:
    """The run's conversation.

    The memory recorded after the run, or else the dataset's history followed by this
    run's input and output.
    """
    if output.turns is not None:
        return output.turns
    history = _history_messages(row.turns)
    if not isinstance(history, list):
        return history  # absent, or a shape the worker reports as such
    return [
        *history,
        {"role": "user", "content": row.input or ""},
        {"role": "assistant", "content": output.actual_output or ""},
    ]


def _input_with_images(row: DatasetRow, output: AgentOutput) -> str | None:
    """The row's input, followed by the markers of the images it was given."""
    given = [image["sha256"] for image in output.images or [] if image.get("role") == "input"]
    if not given:
        return row.input
    markers = "\n".join(f"[DEEPEVAL:IMAGE:{sha256}]" for sha256 in given)
    return f"{row.input}\n{markers}" if row.input else markers


def evaluation_item(
    row: DatasetRow,
    output: AgentOutput,
    tools: list[AgentTool] | None = None,
    images: Mapping[str, ImageData] | None = None,
) -> EvaluationItem:
    """What a metric reads about one run: its dataset row joined with its output.

    ``tools``: the tools connected to the version's agent (None: the workflow is unknown);
    ``images``: the version's images by hash (``output_images``): those the run's input and
    output mark go with the item.
    """
    text = _input_with_images(row, output)
    servers = [McpServer.model_validate(server) for server in output.mcp_servers or []]
    marked = markers_in(text) + markers_in(output.actual_output)
    stored = images or {}
    carried = [stored[sha256] for sha256 in dict.fromkeys(marked) if sha256 in stored]
    return EvaluationItem(
        input=text,
        actual_output=output.actual_output,
        expected_output=row.expected_output,
        context=row.context,
        retrieval_context=row.retrieval_context,
        expected_tools=row.expected_tools,
        intermediate_steps=output.intermediate_steps,
        available_tools=_with_mcp_tools(tools, servers),
        turns=conversation(row, output),
        chatbot_role=row.chatbot_role,
        expected_outcome=row.expected_outcome,
        scenario=row.scenario,
        mcp_servers=servers or None,
        images=carried or None,
    )


def _with_mcp_tools(
    tools: list[AgentTool] | None, servers: list[McpServer]
) -> list[AgentTool] | None:
    """The agent's tools and, named as the agent saw them, its MCP servers' tools."""
    if tools is None or not servers:
        return tools
    offered = [
        AgentTool(
            name=server.agent_name(str(tool["name"])), description=tool.get("description") or ""
        )
        for server in servers
        for tool in server.tools
    ]
    return [*tools, *offered]


class EvaluationPlan:
    """Every (run, metric) pair of a partition: tasks to send, and errors known up front.

    ``judge`` resolves a judge named in the file (None: the benchmark's own) into a spec,
    as the judge resource's ``spec_for`` does; a plain spec stands for the benchmark's
    judge, and a metric's judge is layered on it (variables it names are not read).

    ``only``: build just these tasks (by task id: a chunk of the plan, see
    ``tables.scoring_chunks``). Task ids, ``task_count`` and ``total`` stay those of the
    whole plan, so a chunk's memory does not grow with the benchmark.

    ``tools``: the tools connected to the version's agent (from its stored workflow), for
    the traces of the trace metrics; ``images``: the stored images the runs' texts mark.
    ``family``: this version among the workflow and its variants, for the head-to-head
    metrics (none: they are not planned); a head-to-head
    metric is not planned for the member it is against (no row), and a run whose opponent
    has no output gets a ``missing_input`` row.
    """

    def __init__(
        self,
        benchmark: Benchmark,
        runs: list[ExpandedRun],
        rows: list[DatasetRow],
        outputs: list[AgentOutput],
        judge: JudgeSpec | JudgeResolver,
        default_timeout_s: float,
        prices: PriceTable | None = None,
        only: range | None = None,
        tools: list[AgentTool] | None = None,
        family: Family | None = None,
        images: list[OutputImage] | None = None,
    ) -> None:
        resolve = _resolver(benchmark, judge)
        self._only = only
        self.task_count = 0  # tasks of the whole plan; ``tasks`` holds those of ``only``
        self.judge = resolve(None)  # the benchmark's judge
        self.prices = prices or PriceTable()
        self.judges_of = {
            config.result_label(): _judges(config, resolve) for config in benchmark.metrics
        }
        self.tasks: list[EvaluationTask] = []
        self.without_output: list[tuple[ExpandedRun, MetricConfig, AgentOutput | None]] = []
        # (run, metric, why): a preset expression (actualAnswer, …) that found nothing.
        self.unresolved: list[tuple[ExpandedRun, MetricConfig, str]] = []
        self._keys: dict[int, tuple[ExpandedRun, MetricConfig]] = {}
        rows_by_id = {row.row_id: row for row in rows}
        outputs_by_run = {output.run_id: output for output in outputs}
        by_hash = {image.sha256: image_data(image) for image in images or []}
        metrics = [
            (config, item_expressions(config))
            for config in benchmark.metrics
            if _planned(config, family)
        ]
        for run in runs:
            output = outputs_by_run.get(run.run_id)
            for config, expressions in metrics:
                if output is None or output.error is not None:
                    self.without_output.append((run, config, output))
                    continue
                row = rows_by_id[run.row_id]
                try:
                    item = with_expressions(
                        expressions,
                        evaluation_item(row, output, tools, by_hash),
                        partial(
                            run_item, run, row, output, None, benchmark.runs_dataset.data_table
                        ),
                    )
                except ExpressionFoundNothingError as error:
                    self.unresolved.append((run, config, str(error)))
                    continue
                if entry_for(config).head_to_head:
                    assert family is not None  # planned only with a family
                    sides = family.opponent(run, getattr(config, "against", BASE))
                    if isinstance(sides, str):
                        self.unresolved.append((run, config, sides))
                        continue
                    item = item.model_copy(update={"head_to_head": sides})
                self._add_task(run, config, item, config.timeout_s or default_timeout_s)

    @property
    def judges(self) -> list[JudgeSpec]:
        """Every judge the plan's metrics use, each once, in file order."""
        found = {self.judge.model_dump_json(): self.judge}
        for specs in self.judges_of.values():
            found.update((spec.model_dump_json(), spec) for spec in specs)
        return list(found.values())

    def _add_task(
        self, run: ExpandedRun, config: MetricConfig, item: EvaluationItem, timeout_s: float
    ) -> None:
        task_id = self.task_count
        self.task_count += 1
        if self._only is not None and task_id not in self._only:
            return
        self._keys[task_id] = (run, config)
        judges = self.judges_of[config.result_label()]
        panel = judges if config.panel_rule else []
        self.tasks.append(
            EvaluationTask(
                task_id=task_id,
                run_id=run.run_id,
                metric_label=config.result_label(),
                config=config.model_dump(exclude=set(JUDGE_OPTIONS)),
                item=item,
                judge=judges[0],
                panel=panel,
                timeout_s=timeout_s * max(len(panel), 1),
                clean_session=config.clean_session,
            )
        )

    @property
    def total(self) -> int:
        """Score rows this plan produces."""
        return self.task_count + len(self.without_output) + len(self.unresolved)

    def spend_of(self, attempts: list[tuple[str, str, EvaluationResult]]) -> dict[str, JudgeSpend]:
        """Each run's judge spend on this plan's tasks, from (run id, fingerprint, result)."""
        tasks = {task.fingerprint(): task for task in self.tasks}
        return spend_by_run(
            (
                run_id,
                self.row_for(result.model_copy(update={"task_id": tasks[fingerprint].task_id})),
            )
            for run_id, fingerprint, result in attempts
            if fingerprint in tasks
        )

    def row_for(self, result: EvaluationResult) -> MetricScore:
        """The stored row of a finished task."""
        run, config = self._keys[result.task_id]
        return metric_score(run, config, result, self.judges_of[config.result_label()], self.prices)

    def rows_without_output(self) -> list[MetricScore]:
        """Error rows known up front.

        Runs whose workflow produced nothing, metrics whose expression option
        (``actualAnswer``, …) found nothing in the run's item, and head-to-head metrics
        whose opponent has no output for the run (``missing_input``).
        """
        unresolved = [
            metric_score(
                run,
                config,
                EvaluationResult.failed(-1, "missing_input", message),
                self.judges_of[config.result_label()],
                self.prices,
            )
            for run, config, message in self.unresolved
        ]
        return unresolved + [
            metric_score(
                run,
                config,
                _no_output(output),
                self.judges_of[config.result_label()],
                self.prices,
            )
            for run, config, output in self.without_output
        ]

    def resume(
        self, kept: dict[str, EvaluationResult]
    ) -> tuple[list[MetricScore], list[EvaluationTask]]:
        """Rows of evaluations an interrupted attempt finished, and the tasks still to run."""
        rows, to_run = [], []
        for task in self.tasks:
            result = kept.get(task.fingerprint())
            if result is None:
                to_run.append(task)
            else:
                rows.append(self.row_for(result.model_copy(update={"task_id": task.task_id})))
        return rows, to_run


def _planned(config: MetricConfig, family: Family | None) -> bool:
    """A head-to-head metric is planned in a family, for members other than its opponent."""
    if not entry_for(config).head_to_head:
        return True
    return family is not None and family.own != getattr(config, "against", BASE)


def _resolver(benchmark: Benchmark, judge: JudgeSpec | JudgeResolver) -> JudgeResolver:
    """Judge choice → spec: a metric's judge over the benchmark's, then the default."""
    if isinstance(judge, JudgeSpec):
        settings = judge_settings(judge)  # already the benchmark's judge
        return lambda choice: choose_judge(settings, choice, {})

    def resolve(choice: JudgeChoice | None) -> JudgeSpec:
        layered = choice.over(benchmark.judge) if choice is not None else benchmark.judge
        return judge(layered)

    return resolve


def _judges(config: MetricConfig, resolve: JudgeResolver) -> list[JudgeSpec]:
    """The judges of one metric: its panel, its own judge, or the benchmark's."""
    try:
        judges = [resolve(choice) for choice in config.judge_choices()]
    except JudgeConfigError as error:
        raise JudgeConfigError(f"metric {config.result_label()!r}: {error}") from None
    identities = [judge.identity for judge in judges]
    repeated = sorted({j.label for j in judges if identities.count(j.identity) > 1})
    if repeated:  # the same judge twice would only repeat its cached answer
        raise JudgeConfigError(
            f"metric {config.result_label()!r}: its panel names {', '.join(repeated)} more "
            "than once; give each judge another model or provider"
        )
    return judges


def _no_output(output: AgentOutput | None) -> EvaluationResult:
    """Why a run has no score: its target (or simulated user's judge) failed, or none was stored."""
    if output is None:
        return EvaluationResult.failed(-1, "target_error", "no agent output stored for this run")
    return EvaluationResult.failed(-1, output.error_kind or "target_error", output.error or "")


def _marked(judge: JudgeSpec, reason: str | None) -> str | None:
    """A reason, prefixed by the judge's marker if its judgements are not real ones."""
    return f"{judge.marker} {reason}" if judge.marker and reason is not None else reason


def _uses_judge(entry: MetricEntry, result: EvaluationResult) -> bool:
    calls = result.judge_calls + result.cached_calls
    return entry.needs_judge or (entry.accepts_judge and calls > 0)


def metric_score(
    run: ExpandedRun,
    config: MetricConfig,
    result: EvaluationResult,
    judges: list[JudgeSpec],
    prices: PriceTable,
) -> MetricScore:
    """Score, pass/fail under the metric's direction, and what the evaluation cost.

    ``judges``: the metric's judge, or its panel's judges (in the panel's order).
    """
    entry = entry_for(config)
    threshold = effective_threshold(config.threshold, config.strict_mode, entry.direction)
    uses_judge = _uses_judge(entry, result)
    row = {
        "workflow_hash": run.workflow_hash,
        "run_id": run.run_id,
        "case_id": run.case_id,
        "metric": config.result_label(),
        "metric_slug": config.metric,
        "threshold": threshold,
        "direction": entry.direction,
        "error": result.error,
        "error_kind": result.error_kind,
        "judge_calls": result.judge_calls,
        "judge_retries": result.judge_retries,
        "cached_calls": result.cached_calls,
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "tokens": result.prompt_tokens + result.completion_tokens,
        "latency_s": result.latency_s,
        "score_path": result.score_path,
        **_call_log_fields(result, prices),
    }
    rule = config.panel_rule
    if rule is not None:
        return MetricScore.model_validate(
            {**row, **_panel_fields(result, judges, rule, threshold, entry, prices, uses_judge)}
        )
    judge = judges[0]
    return MetricScore.model_validate(
        {
            **row,
            "score": result.score,
            "success": result.error_kind is None
            and passes(result.score, threshold, entry.direction),
            "reason": _marked(judge, result.reason) if uses_judge else result.reason,
            "judge": judge.label if uses_judge else None,
            "dry_run": uses_judge and judge.is_dry_run,
            "cost_usd": prices.cost(judge.model, result.prompt_tokens, result.completion_tokens)
            if uses_judge
            else None,
        }
    )


def _call_log_fields(result: EvaluationResult, prices: PriceTable) -> dict[str, Any]:
    """When the evaluation started and each judge call, priced (nothing if not kept)."""
    if result.judge_call_log is None:
        return {}
    started = result.started_at
    return {
        "started_at": datetime.fromtimestamp(started, UTC) if started is not None else None,
        "judge_call_log": [
            {
                **call.model_dump(),
                "cost_usd": 0.0
                if call.cached
                else prices.cost(call.model, call.prompt_tokens, call.completion_tokens),
            }
            for call in result.judge_call_log
        ],
    }


def _panel_fields(
    result: EvaluationResult,
    judges: list[JudgeSpec],
    rule: PanelRule,
    threshold: float,
    entry: MetricEntry,
    prices: PriceTable,
    uses_judge: bool,
) -> dict[str, Any]:
    """A panel row's score, verdict, agreement, reason and cost, from its judges' votes."""
    votes = result.votes or []
    scored = [
        _vote_entry(vote, judge, threshold, entry, prices)
        for vote, judge in zip(votes, judges, strict=False)
    ]
    costs = [vote["cost_usd"] for vote in scored if vote["cost_usd"] is not None]
    fields: dict[str, Any] = {
        "score": None,
        "success": False,
        "reason": None,
        "judge": ", ".join(judge.label for judge in judges) if uses_judge else None,
        "dry_run": uses_judge and any(judge.is_dry_run for judge in judges),
        "cost_usd": sum(costs) if costs else None,
        "panel": rule,
        "judge_agreement": None,
        "judge_scores": scored or None,
    }
    verdict = combine_panel([vote.score for vote in votes], threshold, entry.direction, rule)
    if result.error_kind is not None or verdict is None:
        return fields
    agreeing = round(verdict.agreement * verdict.answered)
    markers = list(dict.fromkeys(judge.marker for judge in judges if judge.marker))
    heading = f"[{rule} of {len(judges)} judges: {agreeing} of {verdict.answered} agree]"
    opinions = " | ".join(_opinion(vote) for vote in scored)
    return {
        **fields,
        "score": verdict.score,
        "success": verdict.success,
        "reason": " ".join([*markers, heading, opinions]),
        "judge_agreement": verdict.agreement,
    }


def _opinion(vote: dict[str, Any]) -> str:
    """One judge's part of a panel row's reason."""
    if vote["score"] is None:
        return f"{vote['judge']} no score ({vote['error_kind']})"
    verdict = "pass" if vote["success"] else "fail"
    return f"{vote['judge']} {vote['score']:.3f} {verdict}: {vote['reason'] or ''}".rstrip(": ")


def _vote_entry(
    vote: JudgeVote, judge: JudgeSpec, threshold: float, entry: MetricEntry, prices: PriceTable
) -> dict[str, Any]:
    """One judge's part of a panel row (``judge_scores``)."""
    calls = vote.judge_calls + vote.cached_calls
    used = entry.needs_judge or (entry.accepts_judge and calls > 0)
    return {
        "judge": vote.judge,
        "score": vote.score,
        "success": None if vote.score is None else passes(vote.score, threshold, entry.direction),
        "reason": _marked(judge, vote.reason),
        "error": vote.error,
        "error_kind": vote.error_kind,
        "judge_calls": vote.judge_calls,
        "cached_calls": vote.cached_calls,
        "judge_retries": vote.judge_retries,
        "tokens": vote.prompt_tokens + vote.completion_tokens,
        "cost_usd": prices.cost(judge.model, vote.prompt_tokens, vote.completion_tokens)
        if used
        else None,
    }
