"""Workers start without any credential in their environment; the judge key comes in its spec."""

from pathlib import Path

import pytest
from pydantic import SecretStr

from n8n_deepeval_pipeline import EvaluationItem, JudgeSpec, WorkerPool
from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge
from n8n_deepeval_pipeline.worker.environment import worker_environment
from tests.conftest import evaluate_all, make_task, worker_processes

JUDGE_KEY = "judge-key-7f3a9c0d"
URL_TOKEN = "url-token-5d21e8"
OTHER_SECRETS = {
    "OPENAI_API_KEY": "openai-secret-11",
    "ANTHROPIC_API_KEY": "anthropic-secret-22",
    "N8N_API_KEY": "n8n-secret-33",
    "N8N_DEEPEVAL_JUDGE_API_KEY": "pipeline-judge-secret-44",
    "GITHUB_TOKEN": "github-secret-55",
    "HTTPS_PROXY": "http://me:proxy-secret-66@proxy.example:3128",
}


@pytest.fixture
def secret_environment(monkeypatch):
    """The parent's environment as the tester had it, plus harmless variables."""
    for name, value in OTHER_SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("MY_ANTHROPIC_KEY", JUDGE_KEY)  # a benchmark's judge.apiKeyEnv
    monkeypatch.setenv("ACME_JUDGE", JUDGE_KEY)  # the key under a name that says nothing
    monkeypatch.setenv("N8N_DEEPEVAL_JUDGE_BASE_URL", f"http://gw.example/v1?token={URL_TOKEN}")
    monkeypatch.setenv("N8N_DEEPEVAL_HOME", "/srv/n8n-deepeval")
    monkeypatch.setenv("N8N_API_URL", "http://n8n.example:5678")


def secret_values() -> list[str]:
    return [JUDGE_KEY, URL_TOKEN, *OTHER_SECRETS.values()]


def test_the_worker_environment_drops_every_credential_and_keeps_the_rest(secret_environment):
    env = worker_environment([JUDGE_KEY])
    text = repr(env)
    assert [secret for secret in secret_values() if secret in text] == []
    assert env["N8N_DEEPEVAL_HOME"] == "/srv/n8n-deepeval"
    assert env["N8N_API_URL"] == "http://n8n.example:5678"
    assert env["DEEPEVAL_TELEMETRY_OPT_OUT"] == "YES"


@pytest.mark.slow
def test_the_zygote_and_workers_hold_no_secret_and_the_judge_still_gets_its_key(
    secret_environment, tmp_path
):
    server = LoopbackJudge(latency_s=0.0).start()
    judge = JudgeSpec(
        provider="openai-compatible",
        model="loopback-judge",
        base_url=f"{server.base_url}?token={URL_TOKEN}",
        api_key=SecretStr(JUDGE_KEY),
        cache=False,  # both tasks ask the judge
        state_dir=str(tmp_path / "judge"),
    )
    item = EvaluationItem(input="What is 2+2?", actual_output="4", expected_output="4")
    tasks = [
        make_task({"metric": "correctness"}, item, index, judge=judge, run_id=f"h:r{index}:0")
        for index in range(2)
    ]
    before = worker_processes()
    pool = WorkerPool(size=2, timeout_s=60)
    try:
        pool.start()  # as a Dagster step does: before the benchmark's key is known
        results = evaluate_all(pool, tasks)
        started = worker_processes() - before
        workers = set(pool.pids)
        environments = {pid: Path(f"/proc/{pid}/environ").read_bytes() for pid in started}
    finally:
        pool.close()
        server.stop()
    assert [(r.error, r.judge_calls) for r in results] == [(None, 1), (None, 1)]
    assert server.headers_seen[0]["authorization"] == f"Bearer {JUDGE_KEY}"
    assert URL_TOKEN in server.urls_seen[0]
    assert len(started) == 3 and workers < started  # the zygote and two workers
    for pid, environ in environments.items():
        assert b"DEEPEVAL_TELEMETRY_OPT_OUT=YES" in environ, pid
        leaked = [secret for secret in secret_values() if secret.encode() in environ]
        assert leaked == [], pid
