"""DeepTeam driven at its own seams, in the worker process (never imported anywhere else).

``red_team()`` generates its attacks and judges them in one call, and played again with
``reuse_simulated_test_cases`` it judges a multi-turn attack on the turns it stored,
without calling the target (DeepTeam issue #199). So the two halves are driven apart,
each with DeepTeam's own objects and methods, set up as ``RedTeamer.a_red_team`` sets
them up:

- generation (once, kept): ``AttackSimulator.a_simulate_baseline_attacks`` per
  vulnerability, one attack drawn by weight per baseline attack (as ``a_simulate`` draws
  it), single-turn attacks dressed by ``a_enhance_attack``; a multi-turn attack is kept
  as its opening;
- each version, each run: a multi-turn attack is played by ``a_enhance_attack`` against
  the workflow, then ``RedTeamer.a_red_team`` judges the test case (a single-turn attack is
  sent to the workflow there), with the vulnerability's own metric.

The simulator and the evaluation model are the pipeline's judge. Each attack run has its
own session with the workflow, its own judge usage counter and cache namespace.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import random
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import deepteam.attacks.multi_turn
import deepteam.attacks.single_turn
import deepteam.frameworks
import deepteam.vulnerabilities
from deepeval.test_case import ToolCall
from deepteam.attacks.base_attack import BaseAttack
from deepteam.attacks.multi_turn import BaseMultiTurnAttack
from deepteam.red_teamer.red_teamer import RedTeamer
from deepteam.red_teamer.utils import wrap_model_callback
from deepteam.test_case import RTTestCase, RTTurn
from pydantic import BaseModel

from n8n_deepeval_pipeline.benchmark.deepteam_names import FRAMEWORKS, VULNERABILITIES
from n8n_deepeval_pipeline.benchmark.red_team import RedTeamConfig
from n8n_deepeval_pipeline.judging.failures import JUDGE_FAILURES
from n8n_deepeval_pipeline.judging.judge import (
    JUDGE_SCOPE,
    JudgeScope,
    PipelineJudge,
    UsageCounter,
)
from n8n_deepeval_pipeline.judging.spec import JudgeSpec
from n8n_deepeval_pipeline.red_team.protocol import (
    AttackOutcome,
    AttackSeed,
    Generated,
    JudgeUsage,
    TargetReply,
    ToolCallRecord,
    TurnRecord,
    attack_failure,
)

# Sends one message to the workflow in a session; the step process answers it.
CallTarget = Callable[[str, str], Awaitable[TargetReply]]


@dataclass
class _RunScope:
    """The attack run in progress: its session, its calls, what failed in it."""

    session_id: str
    target_calls: int = 0
    target_errors: list[str] = field(default_factory=list)
    judge_errors: list[str] = field(default_factory=list)


_RUN: contextvars.ContextVar[_RunScope | None] = contextvars.ContextVar(
    "red_team_run", default=None
)


class TargetCallFailed(RuntimeError):
    """The workflow did not answer an attack's message."""


class _WatchedJudge(PipelineJudge):
    """The pipeline's judge, remembering in the attack run why a call failed.

    DeepTeam catches every error of an attack and keeps only its own words for it.
    """

    async def a_generate(self, prompt: str, schema: type[BaseModel] | None = None) -> Any:
        try:
            return await super().a_generate(prompt, schema)
        except JUDGE_FAILURES as error:
            scope = _RUN.get()
            if scope is not None:
                scope.judge_errors.append(str(error))
            raise


@dataclass
class _Group:
    """Vulnerabilities and attacks run together: the whole plan, or a framework's category.

    DeepTeam's vulnerability classes set models and a purpose their base does not declare.
    """

    risk_category: str | None
    vulnerabilities: list[Any]
    attacks: list[BaseAttack] | None


def _usage(counter: UsageCounter) -> JudgeUsage:
    return JudgeUsage(
        calls=counter.calls,
        retries=counter.retries,
        cached=counter.cached,
        prompt_tokens=counter.prompt_tokens,
        completion_tokens=counter.completion_tokens,
    )


class DeepTeamRun:
    """One red team's DeepTeam objects and judge, for generating or for playing attacks."""

    def __init__(
        self, config: RedTeamConfig, purpose: str | None, judge: JudgeSpec, concurrency: int
    ) -> None:
        self.config = config
        self.purpose = purpose
        self.concurrency = concurrency
        self.judge = _WatchedJudge(judge, UsageCounter())
        self._namespace_per_run = judge.cache_scope == "run"

    def groups(self) -> list[_Group]:
        """Fresh DeepTeam objects (a multi-turn attack keeps state between its turns)."""
        config = self.config
        if config.framework is not None:
            framework_class = getattr(
                deepteam.frameworks, FRAMEWORKS[config.framework.name].class_name
            )
            chosen = (
                {"categories": config.framework.categories} if config.framework.categories else {}
            )
            framework = framework_class(**chosen)
            groups = [
                _Group(category.name, category.vulnerabilities, category.attacks)
                for category in framework.risk_categories
            ]
        else:
            vulnerabilities = [
                getattr(deepteam.vulnerabilities, choice.name)(
                    types=choice.types or list(VULNERABILITIES[choice.name].types)
                )
                for choice in config.vulnerabilities or []
            ]
            attacks = [
                _attack_class(choice.name)(weight=choice.weight, **choice.options())
                for choice in config.attacks or []
            ]
            groups = [_Group(None, vulnerabilities, attacks or None)]
        for group in groups:
            for vulnerability in group.vulnerabilities:
                # What simulation sets in red_team(), where the metric reads it from.
                vulnerability.purpose = self.purpose
        return groups

    def _red_teamer(self) -> RedTeamer:
        return RedTeamer(
            simulator_model=self.judge,
            evaluation_model=self.judge,
            target_purpose=self.purpose,
            max_concurrent=self.concurrency,
        )

    # ---- generation -------------------------------------------------------------------

    async def generate(self, cache_namespace: str) -> Generated:
        """The attack set: every group's baseline attacks, each dressed by its drawn attack."""
        usage = UsageCounter()
        JUDGE_SCOPE.set(JudgeScope(usage, cache_namespace))
        draw = random.Random(self.config.seed)
        seeds: list[AttackSeed] = []
        for group in self.groups():
            for case, attack in await self._generate_group(group, draw):
                seeds.append(_seed(f"a{len(seeds) + 1:03d}", group, case, attack))
        return Generated(seeds=seeds, usage=_usage(usage))

    async def _generate_group(
        self, group: _Group, draw: random.Random
    ) -> list[tuple[RTTestCase, BaseAttack | None]]:
        red_teamer = self._red_teamer()
        simulator = red_teamer.attack_simulator
        simulator.evaluation_model = red_teamer.evaluation_model
        simulator.attack_engine = red_teamer._resolve_attack_engine(None)
        for vulnerability in group.vulnerabilities:
            vulnerability.simulator_model = red_teamer.simulator_model
            vulnerability.attack_engine = simulator.attack_engine
        per_type = self.config.attacks_per_vulnerability_type
        baseline: list[RTTestCase] = []
        for cases in await asyncio.gather(
            *(
                simulator.a_simulate_baseline_attacks(per_type, vulnerability, ignore_errors=True)
                for vulnerability in group.vulnerabilities
            )
        ):
            baseline += cases
        attacks = group.attacks
        pairs: list[tuple[RTTestCase, BaseAttack | None]]
        if attacks and self.config.run_all_attacks:
            pairs = [(copy.deepcopy(case), attack) for case in baseline for attack in attacks]
        elif attacks:  # drawn in the attacks' order, as a_simulate draws them
            weights = [attack.weight for attack in attacks]
            pairs = [(case, draw.choices(attacks, weights=weights, k=1)[0]) for case in baseline]
        else:
            pairs = [(case, None) for case in baseline]
        limit = asyncio.Semaphore(self.concurrency)

        async def dress(case: RTTestCase, attack: BaseAttack | None) -> None:
            if attack is None:
                return
            if isinstance(attack, BaseMultiTurnAttack):
                case.attack_method = attack.get_name()  # played for every version
                return
            async with limit:
                await simulator.a_enhance_attack(
                    attack=attack,
                    test_case=case,
                    ignore_errors=True,
                    vulnerabilities=group.vulnerabilities,
                )

        await asyncio.gather(*(dress(case, attack) for case, attack in pairs))
        return pairs

    # ---- attacks ----------------------------------------------------------------------

    async def play(
        self,
        seeds: list[AttackSeed],
        runs: int,
        call_target: CallTarget,
        on_outcome: Callable[[AttackOutcome], None],
    ) -> None:
        """Play every seed ``runs`` times, ``concurrency`` at once."""
        callback = wrap_model_callback(_callback(call_target), async_mode=True)
        limit = asyncio.Semaphore(self.concurrency)

        async def one(seed: AttackSeed, run_index: int) -> None:
            async with limit:
                # A context of its own: the session, the judge's usage and namespace.
                outcome = await asyncio.create_task(
                    self._play(seed, run_index, callback), context=contextvars.Context()
                )
            on_outcome(outcome)

        await asyncio.gather(*(one(seed, index) for seed in seeds for index in range(runs)))

    async def _play(self, seed: AttackSeed, run_index: int, callback: Any) -> AttackOutcome:
        started = time.perf_counter()
        usage = UsageCounter()
        namespace = str(run_index) if self._namespace_per_run else "shared"
        JUDGE_SCOPE.set(JudgeScope(usage, namespace))
        scope = _RunScope(session_id=f"red-team-{seed.attack_id}-{run_index}-{uuid.uuid4().hex}")
        _RUN.set(scope)
        if seed.error is not None:
            return AttackOutcome(
                attack_id=seed.attack_id,
                run_index=run_index,
                input=seed.input,
                error=seed.error,
                error_kind="generation_error",
            )
        group = next(g for g in self.groups() if g.risk_category == seed.risk_category)
        vulnerability = next(v for v in group.vulnerabilities if v.get_name() == seed.vulnerability)
        kind = next(t for t in vulnerability.get_types() if t.value == seed.vulnerability_type)
        case = RTTestCase(
            vulnerability=seed.vulnerability,
            vulnerability_type=kind,
            input=seed.input,
            attack_method=seed.attack_method,
        )
        red_teamer = self._red_teamer()
        if seed.multi_turn:
            attack = next(a for a in group.attacks or [] if type(a).__name__ == seed.attack_class)
            simulator = red_teamer.attack_simulator
            simulator.model_callback = callback
            simulator.evaluation_model = red_teamer.evaluation_model
            await simulator.a_enhance_attack(
                attack=attack,
                test_case=case,
                ignore_errors=True,
                vulnerabilities=group.vulnerabilities,
            )
        red_teamer.test_cases = [case]  # judged as they are: a single-turn one is sent there
        assessment = await red_teamer.a_red_team(
            callback,
            vulnerabilities=group.vulnerabilities,
            attacks=group.attacks,
            reuse_simulated_test_cases=True,
            ignore_errors=True,
            _print_assessment=False,
            _upload_to_confident=False,
        )
        (judged,) = assessment.test_cases
        return _outcome(seed, run_index, judged, group, scope, usage, started)


def _attack_class(name: str) -> Callable[..., BaseAttack]:
    """A DeepTeam attack class by name (its constructor takes weight and its options)."""
    found = getattr(deepteam.attacks.single_turn, name, None) or getattr(
        deepteam.attacks.multi_turn, name
    )
    assert isinstance(found, type) and issubclass(found, BaseAttack)
    return found


def _callback(call_target: CallTarget) -> Callable[..., Awaitable[RTTurn]]:
    """The model callback: the message goes to the workflow in the attack run's session."""

    async def model_callback(input: str, turns: list[RTTurn] | None = None) -> RTTurn:
        scope = _RUN.get()
        assert scope is not None  # every callback runs inside an attack run
        scope.target_calls += 1
        reply = await call_target(scope.session_id, input)
        if reply.error is not None:
            scope.target_errors.append(reply.error)
            raise TargetCallFailed(reply.error)
        tools = [
            ToolCall(
                name=call.name,
                description=call.description,
                input_parameters=call.input_parameters,
                output=call.output,
            )
            for call in reply.tools_called
        ]
        return RTTurn(role="assistant", content=reply.content or "", tools_called=tools or None)

    return model_callback


def _seed(attack_id: str, group: _Group, case: RTTestCase, attack: BaseAttack | None) -> AttackSeed:
    vulnerability = next(v for v in group.vulnerabilities if v.get_name() == case.vulnerability)
    return AttackSeed(
        attack_id=attack_id,
        vulnerability=case.vulnerability,
        vulnerability_class=type(vulnerability).__name__,
        vulnerability_type=str(case.vulnerability_type.value),
        risk_category=group.risk_category,
        attack_method=case.attack_method,
        attack_class=type(attack).__name__ if attack is not None else None,
        multi_turn=isinstance(attack, BaseMultiTurnAttack),
        input=case.input,
        error=case.error,
    )


def _tool_records(calls: list[ToolCall] | None) -> list[ToolCallRecord]:
    return [
        ToolCallRecord(
            name=call.name,
            input_parameters=call.input_parameters or {},
            output=call.output,
            description=call.description,
        )
        for call in calls or []
    ]


def _outcome(
    seed: AttackSeed,
    run_index: int,
    judged: RTTestCase,
    group: _Group,
    scope: _RunScope,
    usage: UsageCounter,
    started: float,
) -> AttackOutcome:
    turns = (
        [
            TurnRecord(
                role=turn.role,
                content=turn.content,
                tools_called=_tool_records(turn.tools_called),
                turn_level_attack=turn.turn_level_attack,
            )
            for turn in judged.turns
        ]
        if judged.turns
        else None
    )
    tools = _tool_records(judged.tools_called) + [
        call for turn in turns or [] for call in turn.tools_called
    ]
    error, kind = attack_failure(judged.error, scope.target_errors, scope.judge_errors)
    return AttackOutcome(
        attack_id=seed.attack_id,
        run_index=run_index,
        input=judged.input,
        actual_output=judged.actual_output,
        turns=turns,
        tools_called=tools,
        score=judged.score,
        reason=judged.reason,
        risk_category=group.risk_category or judged.risk_category,
        cvss_score=judged.cvss_score,
        error=error,
        error_kind=kind,
        usage=_usage(usage),
        target_calls=scope.target_calls,
        latency_s=round(time.perf_counter() - started, 4),
    )
