"""The red team's assets of a benchmark with a ``redTeam`` section, partitioned by version.

``red_team_attacks`` keeps one attack set for every version (generated once; again only
when asked, ``regenerate``, or when the section changes what decides the attacks): the
set travels in the asset's materialisation metadata from one version to the next.
``red_team_results`` plays it against the version, each attack ``runsPerRow`` times,
through the harness copy with every service node mocked (or the webhook, when the
benchmark accepts that it acts on the world), between two checks of the version;
``red_team_summary`` gives the breach rates and compares each vulnerability with the
baseline version (the ``no_new_breach`` check; ``breaches_within_fail_on`` for
``failOn``). DeepTeam runs in a worker process (``red_team.session``).
"""

# No postponed annotations: Dagster inspects the annotations of asset functions.
import contextlib
import json
import math
from collections import Counter
from collections.abc import Iterator
from typing import Any

import dagster as dg
import pandas as pd

from n8n_deepeval_pipeline.benchmark.config import Benchmark, RecordedTarget
from n8n_deepeval_pipeline.benchmark.n8n_target import (
    N8nWorkflowRef,
    WebhookTarget,
    WorkflowTarget,
)
from n8n_deepeval_pipeline.benchmark.red_team import RedTeamConfig
from n8n_deepeval_pipeline.judging.spec import JudgeSpec
from n8n_deepeval_pipeline.n8n_api.harness_run import (
    harness_body,
    harness_mocks,
    harness_webhook,
    kept_copy_note,
    remove_stale_copies,
)
from n8n_deepeval_pipeline.n8n_api.webhook import WebhookCaller
from n8n_deepeval_pipeline.orchestration.live_target import workflow_at_version
from n8n_deepeval_pipeline.orchestration.metadata_figures import shown
from n8n_deepeval_pipeline.orchestration.partitions import partitions_for, version_check
from n8n_deepeval_pipeline.orchestration.progress import say_progress
from n8n_deepeval_pipeline.orchestration.resources.judge import JudgeResource
from n8n_deepeval_pipeline.orchestration.resources.n8n import N8nResource
from n8n_deepeval_pipeline.red_team import session
from n8n_deepeval_pipeline.red_team.attack_set import (
    KeptSet,
    generation_key,
    generation_namespace,
    seeds_of,
)
from n8n_deepeval_pipeline.red_team.breach_rates import breach_rates, new_breaches, over_limit
from n8n_deepeval_pipeline.red_team.protocol import (
    AttackOutcome,
    AttackRequest,
    GenerateRequest,
    JudgeUsage,
)
from n8n_deepeval_pipeline.red_team.purpose import workflow_purpose
from n8n_deepeval_pipeline.red_team.results import result_row
from n8n_deepeval_pipeline.red_team.rows import BreachRate, RedTeamAttack, RedTeamResult
from n8n_deepeval_pipeline.red_team.target import (
    AttackTarget,
    StepsOf,
    attack_problems,
    attacked_target,
    steps_from_executions,
)
from n8n_deepeval_pipeline.tables.comparison import baseline_version
from n8n_deepeval_pipeline.tables.frames import from_frame, to_frame
from n8n_deepeval_pipeline.tables.rows import WorkflowSnapshot, full_hash, of_version
from n8n_deepeval_pipeline.workflow.anatomy import anatomy
from n8n_deepeval_pipeline.workflow.hashing import version_key

RED_TEAM_ASSETS = ("red_team_attacks", "red_team_results", "red_team_summary")
KEPT_SET_METADATA = "kept_attack_set"
NO_NEW_BREACH = "no_new_breach"
WITHIN_FAIL_ON = "breaches_within_fail_on"
# What one attack may take: its messages (a multi-turn attack's turns) and their judging.
_MESSAGES_PER_ATTACK = 12
_JUDGE_CALLS_PER_MESSAGE = 6
_GENERATION_LIMIT_S = 3600.0
# The harness copy's time limit: removed as stale by another run only past it.
_HARNESS_LIMIT_S = 6 * 3600.0


class RedTeamAttacksConfig(dg.Config):
    """How the attack set of this version is chosen."""

    regenerate: bool = False
    """Generate a new attack set instead of playing the kept one (later versions keep it)."""


def _key(benchmark: Benchmark, name: str) -> dg.AssetKey:
    return dg.AssetKey([benchmark.name, name])


def _section(benchmark: Benchmark) -> RedTeamConfig:
    assert benchmark.red_team is not None  # built only for benchmarks with the section
    return benchmark.red_team


def _attacked_target(benchmark: Benchmark) -> WorkflowTarget | WebhookTarget:
    assert not isinstance(benchmark.target, RecordedTarget)  # the section refuses them
    return benchmark.target


def build_red_team_assets(
    benchmark: Benchmark, common: dict[str, Any]
) -> list[dg.AssetsDefinition]:
    """The three red-team assets of a benchmark that has a ``redTeam`` section."""
    return [_attacks(benchmark, common), _results(benchmark, common), _summary(benchmark, common)]


def _usage_metadata(
    prefix: str, usage: JudgeUsage, spec: JudgeSpec, judge: JudgeResource
) -> dict[str, Any]:
    cost = judge.prices().cost(spec.model, usage.prompt_tokens, usage.completion_tokens)
    metadata: dict[str, Any] = {
        f"{prefix}/judge_calls": usage.calls,
        f"{prefix}/cached_calls": usage.cached,
        f"{prefix}/tokens": usage.prompt_tokens + usage.completion_tokens,
    }
    if cost is not None:
        metadata[f"{prefix}/cost_usd"] = round(cost, 6)
    return metadata


def _attacks(benchmark: Benchmark, common: dict[str, Any]) -> dg.AssetsDefinition:
    key = _key(benchmark, "red_team_attacks")

    @dg.asset(
        name="red_team_attacks",
        description="The attacks every version faces: DeepTeam's, generated once and kept "
        "(run with regenerate for a new set).",
        ins={"workflow_snapshot": dg.AssetIn(key=_key(benchmark, "workflow_snapshot"))},
        **common,
    )
    def red_team_attacks(
        context: dg.AssetExecutionContext,
        config: RedTeamAttacksConfig,
        judge: JudgeResource,
        workflow_snapshot: pd.DataFrame,
    ) -> pd.DataFrame:
        section = _section(benchmark)
        (snapshot,) = from_frame(WorkflowSnapshot, workflow_snapshot)
        spec = judge.spec_for(benchmark.judge)
        generation = generation_key(section, spec.label)
        kept = None if config.regenerate else _kept_set(context, key, generation)
        metadata: dict[str, Any] = {}
        if kept is None:
            purpose = section.purpose or workflow_purpose(json.loads(snapshot.canonical_json))
            request = GenerateRequest(
                config=section,
                purpose=purpose,
                judge=spec,
                cache_namespace=generation_namespace(section, generation),
                concurrency=_attacked_target(benchmark).max_concurrency,
            )
            say_progress(context, "red team: generating the attacks")
            generated = session.generate(request, _GENERATION_LIMIT_S)
            kept = KeptSet.new(generation, context.partition_key, purpose, generated.seeds)
            metadata |= _usage_metadata("generation", generated.usage, spec, judge)
            context.log.info(f"generated attack set {kept.attack_set}: {len(kept.seeds)} attacks")
        else:
            context.log.info(
                f"kept attack set {kept.attack_set} (generated in {kept.generated_in})"
            )
        rows = kept.rows(snapshot.workflow_hash)
        methods = Counter(row.attack_method or "none" for row in rows)
        context.add_output_metadata(
            shown(
                {
                    KEPT_SET_METADATA: dg.MetadataValue.json(kept.model_dump(mode="json")),
                    "attack_set": kept.attack_set,
                    "generated_in": kept.generated_in,
                    "attacks": len(rows),
                    "generation_errors": sum(row.error is not None for row in rows),
                    **{f"attacks/{method}": count for method, count in methods.items()},
                    **metadata,
                }
            )
        )
        return to_frame(RedTeamAttack, rows)

    attacks_asset: dg.AssetsDefinition = red_team_attacks
    return attacks_asset


def _kept_set(
    context: dg.AssetExecutionContext, key: dg.AssetKey, generation: str
) -> KeptSet | None:
    """The set the last materialisation of any version kept, if it was made the same way."""
    event = context.instance.get_latest_materialization_event(key)
    materialisation = event.asset_materialization if event is not None else None
    entry = materialisation.metadata.get(KEPT_SET_METADATA) if materialisation else None
    if entry is None:
        return None
    kept = KeptSet.model_validate(entry.value)
    if kept.key != generation:
        context.log.info(
            "the redTeam section (or the judge) changed what decides the attacks: a new set"
        )
        return None
    return kept


def _results(benchmark: Benchmark, common: dict[str, Any]) -> dg.AssetsDefinition:
    @dg.asset(
        name="red_team_results",
        description="Each attack on each run of this version: DeepTeam's verdict, the "
        "conversation, and every tool call it provoked (mocked: they never ran).",
        ins={
            "red_team_attacks": dg.AssetIn(key=_key(benchmark, "red_team_attacks")),
        },
        deps=[_key(benchmark, "workflow_snapshot")],
        **common,
    )
    def red_team_results(
        context: dg.AssetExecutionContext,
        n8n: N8nResource,
        judge: JudgeResource,
        red_team_attacks: pd.DataFrame,
    ) -> pd.DataFrame:
        attacks = from_frame(RedTeamAttack, red_team_attacks)
        rows = _attacked(context, benchmark, n8n, judge, attacks)
        breaches = sum(row.breached for row in rows)
        costs = [row.cost_usd for row in rows if row.cost_usd is not None]
        context.add_output_metadata(
            shown(
                {
                    "results": len(rows),
                    "breaches": breaches,
                    "errors": sum(row.error is not None for row in rows),
                    "tool_calls": sum(len(row.tools_called) for row in rows),
                    "judge_calls": sum(row.judge_calls for row in rows),
                    "cost_usd": float(sum(costs)),
                }
            )
        )
        return to_frame(RedTeamResult, rows)

    results_asset: dg.AssetsDefinition = red_team_results
    return results_asset


def _time_limit(target: WorkflowTarget | WebhookTarget, spec: JudgeSpec, attacks: int) -> float:
    """Long enough for every attack's messages and judge calls, at the target's concurrency."""
    message_s = target.timeout_s + _JUDGE_CALLS_PER_MESSAGE * spec.timeout_s
    return _MESSAGES_PER_ATTACK * message_s * math.ceil(attacks / target.max_concurrency)


def _attacked(
    context: dg.AssetExecutionContext,
    benchmark: Benchmark,
    n8n: N8nResource,
    judge: JudgeResource,
    attacks: list[RedTeamAttack],
) -> list[RedTeamResult]:
    """Every attack played ``runsPerRow`` times against this version, between version checks."""
    target = _attacked_target(benchmark)
    spec = judge.spec_for(benchmark.judge)
    partition = context.partition_key
    workflow = workflow_at_version(benchmark, n8n, partition, "before")
    request = AttackRequest(
        config=_section(benchmark),
        purpose=attacks[0].purpose if attacks else None,
        judge=spec,
        seeds=seeds_of(attacks),
        runs=benchmark.runs_per_row,
        concurrency=target.max_concurrency,
    )
    total = len(request.seeds) * request.runs
    outcomes: list[AttackOutcome] = []

    def progress(outcome: AttackOutcome) -> None:
        outcomes.append(outcome)
        if len(outcomes) % max(1, total // 10) == 0 or len(outcomes) == total:
            say_progress(context, f"red team: attacked {len(outcomes)}/{total}")

    tools = anatomy(workflow).tools
    workflow_hash = attacks[0].workflow_hash if attacks else partition
    time_limit_s = _time_limit(target, spec, total)
    with contextlib.ExitStack() as stack:
        if isinstance(target, WorkflowTarget):
            caller, steps_of, mocked = _harness(context, benchmark, target, workflow, n8n, stack)
        else:
            context.log.warning(
                "red team on the live webhook (redTeam.actsOnTheWorld): every tool an attack "
                "makes the agent call really runs"
            )
            caller, steps_of, mocked = n8n.webhook_caller(target), None, set()
            if target.steps_from_execution and isinstance(benchmark.workflow, N8nWorkflowRef):
                client = stack.enter_context(n8n.client())
                steps_of = steps_from_executions(
                    client, benchmark.workflow.id, 2 * target.max_concurrency + 5
                )
        stack.callback(caller.close)
        answer = AttackTarget(caller, workflow_hash, tools, mocked, steps_of)
        session.attack(request, answer, progress, time_limit_s)
    workflow_at_version(benchmark, n8n, partition, "after")
    by_id = {seed.attack_id: seed for seed in request.seeds}
    prices = judge.prices()
    return [
        result_row(outcome, by_id[outcome.attack_id], workflow_hash, spec, prices, mocked)
        for outcome in sorted(outcomes, key=lambda o: (o.attack_id, o.run_index))
    ]


def _harness(
    context: dg.AssetExecutionContext,
    benchmark: Benchmark,
    target: WorkflowTarget,
    workflow: dict[str, Any],
    n8n: N8nResource,
    stack: contextlib.ExitStack,
) -> tuple[WebhookCaller, StepsOf | None, set[str]]:
    """The webhook of a harness copy with every service node mocked, for the stack's life.

    Also how its executions' steps are read, and the tool names its mocks answer.
    """
    problems = attack_problems(target, workflow, variants=False)  # the version's own graph
    if problems:
        raise ValueError("redTeam: " + "; ".join(problems))
    attacked = attacked_target(target)
    mocks = harness_mocks(attacked, workflow)
    context.log.info(f"red team: mocked {', '.join(sorted(mocks.replacements)) or 'nothing'}")
    client = stack.enter_context(n8n.client())
    for name in remove_stale_copies(client, benchmark.name):
        context.log.warning(f"removed a harness copy whose run is over: {name}")
    label = f"{benchmark.name} {context.partition_key} red-team"
    copy_id, url = stack.enter_context(
        harness_webhook(
            client,
            n8n.base_url or "",
            workflow,
            attacked,
            label,
            _HARNESS_LIMIT_S,
            mocks.replacements,
        )
    )
    if attacked.keep_harness_copy:
        context.log.info(kept_copy_note(n8n.base_url or "", copy_id))
    caller = n8n.webhook_caller(attacked.as_webhook(url, harness_body(attacked, workflow)))
    recent = 2 * attacked.max_concurrency + 5
    steps_of = (
        steps_from_executions(client, copy_id, recent) if attacked.steps_from_execution else None
    )
    return caller, steps_of, mocks.mocked_tools


def _summary(benchmark: Benchmark, common: dict[str, Any]) -> dg.AssetsDefinition:
    key = _key(benchmark, "red_team_summary")
    gate = benchmark.compare.fail_on

    @dg.asset(
        name="red_team_summary",
        description="Breach rates per vulnerability, attack method and pair (Wilson 95%), "
        "each vulnerability against its failOn and the baseline version (Fisher).",
        ins={
            "red_team_results": dg.AssetIn(
                key=_key(benchmark, "red_team_results"),
                partition_mapping=dg.AllPartitionMapping(),
            )
        },
        check_specs=[
            version_check(
                NO_NEW_BREACH,
                benchmark,
                key,
                description=f"No vulnerability breaches more than in the baseline version "
                f"with the verdict {gate!r} (or surer), judged attacks compared by Fisher's "
                "exact test.",
            ),
            version_check(
                WITHIN_FAIL_ON,
                benchmark,
                key,
                description="No vulnerability's breach rate is above redTeam.failOn.",
            ),
        ],
        **common,
    )
    def red_team_summary(
        context: dg.AssetExecutionContext, red_team_results: pd.DataFrame
    ) -> Iterator[Any]:
        stored = from_frame(RedTeamResult, red_team_results)
        candidate = context.partition_key
        baseline = _baseline(context, benchmark)
        rates = breach_rates(
            of_version(stored, candidate),
            full_hash(stored, candidate),
            _section(benchmark),
            of_version(stored, baseline) if baseline else None,
            full_hash(stored, baseline) if baseline else None,
        )
        yield dg.Output(to_frame(BreachRate, rates), metadata=_rates_metadata(rates, baseline))
        flagged = new_breaches(rates, gate)
        yield dg.AssetCheckResult(
            check_name=NO_NEW_BREACH,
            asset_key=key,
            passed=not flagged,
            metadata={
                "baseline": (baseline or "none")[:12],
                "vulnerabilities": ", ".join(row.vulnerability or "" for row in flagged) or "none",
            },
        )
        over = over_limit(rates)
        yield dg.AssetCheckResult(
            check_name=WITHIN_FAIL_ON,
            asset_key=key,
            passed=not over,
            metadata={
                "vulnerabilities": ", ".join(
                    f"{row.vulnerability} {row.rate:.0%} > {row.fail_on:.0%}"
                    for row in over
                    if row.rate is not None and row.fail_on is not None
                )
                or "none"
            },
        )

    summary_asset: dg.AssetsDefinition = red_team_summary
    return summary_asset


def red_teamed_versions(instance: dg.DagsterInstance, benchmark: Benchmark) -> list[str]:
    """The registered versions (oldest first) whose attacks have been played."""
    known = instance.get_dynamic_partitions(partitions_for(benchmark).name or "")
    played = instance.get_materialized_partitions(_key(benchmark, "red_team_results"))
    attacked = {version_key(partition) for partition in played}
    return [version for version in known if version in attacked]


def _baseline(context: dg.AssetExecutionContext, benchmark: Benchmark) -> str | None:
    versions = red_teamed_versions(context.instance, benchmark)
    return baseline_version(versions, context.partition_key, benchmark.compare.baseline)


def _rates_metadata(rates: list[BreachRate], baseline: str | None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"baseline": (baseline or "none")[:12]}
    for row in rates:
        if row.kind == "vulnerability" and row.rate is not None:
            metadata[f"breach_rate/{row.vulnerability}"] = row.rate
        if row.kind == "attack_method" and row.rate is not None:
            metadata[f"breach_rate_by_method/{row.attack_method}"] = row.rate
    return shown(metadata)
