"""The red team's worker process seen from the step: every message it has for the workflow is
answered (several at once), every outcome collected, and a worker that fails, dies or
overruns is an error with its exit code that names its kept log, without the judge's key.
The worker here is ``tests.red_team.fake_worker``, a fake that speaks the protocol without
DeepTeam."""

import threading
import time

import pytest
from pydantic import SecretStr

from n8n_deepeval_pipeline.benchmark.red_team import RedTeamConfig
from n8n_deepeval_pipeline.judging.spec import JudgeSpec
from n8n_deepeval_pipeline.red_team import session
from n8n_deepeval_pipeline.red_team.protocol import (
    AttackRequest,
    AttackSeed,
    GenerateRequest,
    TargetCall,
    TargetReply,
    ToolCallRecord,
)
from n8n_deepeval_pipeline.worker.launcher import ChildFailed

CONFIG = RedTeamConfig.model_validate({"vulnerabilities": [{"name": "ExcessiveAgency"}]})
JUDGE = JudgeSpec(provider="openai", model="gpt-4.1", api_key="sk-secret-red-team-key")


@pytest.fixture(autouse=True)
def fake_worker(monkeypatch, tmp_path):
    monkeypatch.setattr(session, "MODULE", "tests.red_team.fake_worker")
    monkeypatch.setenv("N8N_DEEPEVAL_HOME", str(tmp_path / "home"))


def seed(attack_id, text):
    return AttackSeed(
        attack_id=attack_id,
        vulnerability="Excessive Agency",
        vulnerability_class="ExcessiveAgency",
        vulnerability_type="permissions",
        input=text,
    )


def request(*seeds, runs=2, concurrency=4):
    return AttackRequest(
        config=CONFIG, purpose=None, judge=JUDGE, seeds=list(seeds), runs=runs,
        concurrency=concurrency,
    )  # fmt: skip


def test_generation_returns_the_worker_s_attack_set():
    generated = session.generate(
        GenerateRequest(
            config=CONFIG, purpose="refunds", judge=JUDGE, cache_namespace="n", concurrency=2
        ),
        timeout_s=60,
    )
    assert [(s.attack_id, s.input) for s in generated.seeds] == [
        ("a001", "refunds 1"),
        ("a002", "refunds 2"),
    ]


def test_every_message_is_answered_in_its_session_several_at_once():
    calls: list[TargetCall] = []
    in_flight, most = [0], [0]
    lock = threading.Lock()
    # Each call waits until four are in flight (each turn of the four sessions at once): a
    # worker that let fewer through breaks the barrier, and the calls' errors show it.
    together = threading.Barrier(4, timeout=30)

    def target(call: TargetCall) -> TargetReply:
        with lock:
            calls.append(call)
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
        together.wait()
        with lock:
            in_flight[0] -= 1
        tools = [ToolCallRecord(name="Refund", input_parameters={"orderId": call.message[-1]})]
        return TargetReply(call_id=call.call_id, content=f"re: {call.message}", tools_called=tools)

    seen = []
    outcomes = session.attack(
        request(seed("a001", "refund 1"), seed("a002", "refund 2")), target, seen.append, 60
    )
    assert len(calls) == 8  # 2 seeds × 2 runs × 2 turns
    assert most[0] == 4  # as many as the concurrency lets through
    by_session = {}
    for call in calls:
        by_session.setdefault(call.session_id, []).append(call.message)
    assert by_session["a001-0"] == ["refund 1", "again: refund 1"]
    assert seen == outcomes
    assert [o.error for o in outcomes] == [None] * 4
    assert sorted((o.attack_id, o.run_index) for o in outcomes) == [
        ("a001", 0), ("a001", 1), ("a002", 0), ("a002", 1)]  # fmt: skip
    first = next(o for o in outcomes if (o.attack_id, o.run_index) == ("a002", 1))
    assert first.actual_output == "re: refund 2 | re: again: refund 2"
    assert [t.input_parameters for t in first.tools_called] == [{"orderId": "2"}] * 2


def test_a_target_that_raises_is_the_call_s_error_not_the_run_s():
    def target(call: TargetCall) -> TargetReply:
        raise ConnectionError(f"webhook down, key {JUDGE.api_key.get_secret_value()}")

    (outcome,) = session.attack(request(seed("a001", "x"), runs=1), target, lambda o: None, 60)
    assert outcome.error == "ConnectionError: webhook down, key [redacted]"
    assert outcome.error_kind == "target_error"


def test_a_worker_that_fails_is_named_with_its_kept_log_without_the_key(tmp_path):
    with pytest.raises(ChildFailed) as failed:
        session.attack(request(seed("a001", "fail"), runs=1), lambda c: None, lambda o: None, 60)
    message = str(failed.value)
    assert message.startswith("the red team's worker failed: the judge refused [redacted] (")
    assert JUDGE.api_key.get_secret_value() not in message
    log = failed.value.log_path
    assert f"its log: {log}" in message
    assert log.parent == tmp_path / "home" / "logs" and log.suffix == ".log"
    assert log.exists()  # kept for reading, as the message says


def test_a_worker_that_dies_is_an_error_with_its_exit_code():
    with pytest.raises(ChildFailed, match=r"ended before its result \(exit code 9\)") as died:
        session.attack(request(seed("a001", "die"), runs=1), lambda c: None, lambda o: None, 60)
    assert died.value.exit_code == 9


def test_a_worker_that_overruns_its_time_is_stopped():
    def slow(call: TargetCall) -> TargetReply:
        time.sleep(5)
        return TargetReply(call_id=call.call_id, content="late")

    started = time.monotonic()
    with pytest.raises(ChildFailed, match=r"did not finish in 2 s \(exit code -9, SIGKILL\)"):
        session.attack(request(seed("a001", "x"), runs=1), slow, lambda o: None, timeout_s=2)
    assert time.monotonic() - started < 15


def generation(purpose="refunds", judge=JUDGE):
    return GenerateRequest(
        config=CONFIG, purpose=purpose, judge=judge, cache_namespace="n", concurrency=2
    )


def answered(call: TargetCall) -> TargetReply:
    return TargetReply(call_id=call.call_id, content=f"re: {call.message}")


def test_a_worker_started_ahead_generates_and_plays_and_is_stopped_after_the_block(
    started_children, tmp_path
):
    with session.started_ahead():
        assert len(started_children) == 1  # started before any job
        generated = session.generate(generation(), timeout_s=60)
        outcomes = session.attack(request(*generated.seeds, runs=1), answered, lambda o: None, 60)
        assert len(started_children) == 1  # both jobs asked the one process
    assert [o.actual_output for o in outcomes] == [
        "re: refunds 1 | re: again: refunds 1",
        "re: refunds 2 | re: again: refunds 2",
    ]
    (worker,) = started_children
    assert worker.process.poll() is not None  # stopped with the block, its traces too
    assert worker.scratch is not None and not worker.scratch.exists()
    assert not (tmp_path / "home" / "logs").exists()


def test_without_a_block_each_job_has_a_worker_of_its_own(started_children):
    generated = session.generate(generation(), timeout_s=60)
    session.attack(request(*generated.seeds, runs=1), answered, lambda o: None, 60)
    assert len(started_children) == 2
    assert all(child.process.poll() is not None for child in started_children)


def test_a_kept_worker_whose_environment_holds_the_judges_key_is_not_asked(
    started_children, monkeypatch
):
    key = "opensesame7731"  # nothing says it is a key, but the judge's spec
    monkeypatch.setenv("SUPPORT_DESK_SETTING", key)  # nor does the variable's name
    judge = JUDGE.model_copy(update={"api_key": SecretStr(key)})
    with session.started_ahead():
        session.generate(generation(judge=judge), timeout_s=60)
        assert len(started_children) == 2
        assert key in started_children[0].environment["SUPPORT_DESK_SETTING"]
        assert "SUPPORT_DESK_SETTING" not in started_children[1].environment


def test_a_worker_that_failed_is_not_kept_and_its_log_is(started_children, tmp_path):
    with session.started_ahead():
        with pytest.raises(ChildFailed) as failed:
            session.attack(request(seed("a001", "fail"), runs=1), answered, lambda o: None, 60)
        session.generate(generation(), timeout_s=60)
        assert len(started_children) == 2
        assert started_children[0].process.poll() == 1
    # the worker started ahead took the key's job: its log is redacted with the job's key
    assert failed.value.log_path.exists()
    assert "the judge refused [redacted]" in str(failed.value)
