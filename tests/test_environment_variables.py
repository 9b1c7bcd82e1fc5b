"""The registry of environment variables is whole, and the code reads defaults from it."""

import re
from pathlib import Path

import pytest

from n8n_deepeval_pipeline import environment_variables, settings
from n8n_deepeval_pipeline.environment_variables import REGISTRY, VARIABLES, Variable
from n8n_deepeval_pipeline.tables.scoring_chunks import DEFAULT_CHUNK_SIZE
from n8n_deepeval_pipeline.worker.pool import DEFAULT_PER_WORKER

ROOT = Path(__file__).resolve().parents[1]
REGISTRY_FILE = ROOT / "n8n_deepeval_pipeline" / "environment_variables.py"
# The project's own names: its prefix, n8n's API, the pool size and Dagster's home.
_NAME = re.compile(r"\b(N8N_DEEPEVAL_[A-Z0-9_]*[A-Z0-9]|N8N_API_[A-Z]+|DEEPEVAL_POOL_SIZE)\b")


def sources() -> dict[Path, str]:
    """Every file of the package, the scripts, the tests, CI and the CI templates, but the
    registry and this."""
    found = [
        *(ROOT / "n8n_deepeval_pipeline").rglob("*.py"),
        *(ROOT / "scripts").iterdir(),
        *(ROOT / "tests").rglob("*.py"),
        ROOT / ".ci" / "run",
        *(ROOT / "deploy").rglob("*.yaml"),
        ROOT / "action.yml",  # the GitHub Action and the GitLab template set and read some
        *(ROOT / "templates").rglob("*.yml"),
    ]
    return {
        path: path.read_text(encoding="utf-8")
        for path in found
        if path.is_file()
        and path not in (REGISTRY_FILE, Path(__file__))
        and path.suffix in ("", ".py", ".sh", ".yaml", ".yml")
    }


def test_every_variable_the_code_names_is_registered():
    named = {
        (name, str(path.relative_to(ROOT)))
        for path, text in sources().items()
        for name in _NAME.findall(text)
    }
    unregistered = sorted((name, where) for name, where in named if name not in REGISTRY)
    assert unregistered == []


def test_every_registered_variable_is_read_somewhere():
    text = "\n".join(sources().values())
    unread = [variable.name for variable in VARIABLES if variable.name not in text]
    assert unread == []


def test_the_registry_refuses_a_name_twice():
    twice = (*VARIABLES[:1], VARIABLES[0])
    with pytest.raises(ValueError, match="registered twice: N8N_DEEPEVAL_HOME"):
        environment_variables._index(twice)


def test_a_value_or_the_default_and_a_blank_value_is_unset():
    pool = REGISTRY["DEEPEVAL_POOL_SIZE"]
    assert pool.value({"DEEPEVAL_POOL_SIZE": "8"}) == "8"
    assert pool.value({"DEEPEVAL_POOL_SIZE": "  "}) == "4"
    assert pool.value({}) == "4"
    assert environment_variables.value("N8N_DEEPEVAL_JUDGE_RPM", {}) is None
    with pytest.raises(KeyError, match="has no default"):
        environment_variables.setting("N8N_DEEPEVAL_JUDGE_RPM", {})
    with pytest.raises(KeyError):
        environment_variables.value("N8N_DEEPEVAL_NOT_A_SETTING", {})


def test_the_defaults_stated_are_the_code_s():
    assert REGISTRY["N8N_DEEPEVAL_EVALUATIONS_PER_WORKER"].default == str(DEFAULT_PER_WORKER)
    assert REGISTRY["N8N_DEEPEVAL_CHUNK_SIZE"].default == str(DEFAULT_CHUNK_SIZE)
    assert REGISTRY[settings.PROFILE_ENV].default == settings.PROFILES[0]


def test_settings_read_their_defaults_from_the_registry(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    for name in (settings.HOME_ENV, settings.PROFILE_ENV, settings.LOCAL_EXECUTOR_ENV):
        monkeypatch.delenv(name, raising=False)
    assert settings.home() == tmp_path / ".n8n-deepeval"
    assert settings.profile() == "local"
    assert settings.local_executor() == "in_process"
    monkeypatch.setenv(settings.PROFILE_ENV, " Distributed ")
    assert settings.profile() == "distributed"


def test_the_resources_take_the_registered_defaults(monkeypatch, tmp_path):
    from n8n_deepeval_pipeline.orchestration.definitions import build_resources

    monkeypatch.setenv(settings.HOME_ENV, str(tmp_path))
    for variable in VARIABLES:
        if variable.group in ("judge", "worker pool"):
            monkeypatch.delenv(variable.name, raising=False)
    monkeypatch.setenv("N8N_DEEPEVAL_WORKER_MAX_RSS_MB", "750")
    resources = build_resources()
    pool, judge = resources["worker_pool"], resources["judge"]
    assert (pool.size, pool.evaluations_per_worker, pool.timeout_s) == (4, 64, 300.0)
    assert (pool.max_evaluations, pool.max_rss_mb) == (500, 750.0)
    assert (judge.provider, judge.model, judge.timeout_s) == ("dry-run", "dry-run", 60.0)
    assert (judge.max_in_flight, judge.max_attempts, judge.breaker_threshold) == (256, 6, 10)
    assert (judge.requests_per_minute, judge.tokens_per_minute, judge.cache) == (None, None, True)


def test_a_variable_states_its_default_as_the_reference_page_shows_it():
    assert Variable(name="A", group="n8n", meaning="m", default="30").shown_default == "`30`"
    assert Variable(name="A", group="n8n", meaning="m").shown_default == "unset"
    described = Variable(name="A", group="n8n", meaning="m", default_described="the CPUs")
    assert described.shown_default == "the CPUs"


def test_the_judge_provider_variable_and_fields_name_every_provider():
    from n8n_deepeval_pipeline.benchmark.config import benchmark_json_schema
    from n8n_deepeval_pipeline.judging.spec import JUDGE_PROVIDERS

    meaning = REGISTRY["N8N_DEEPEVAL_JUDGE_PROVIDER"].meaning
    assert [p for p in JUDGE_PROVIDERS if f"`{p}`" not in meaning] == []
    definitions = benchmark_json_schema()["$defs"]
    for model in ("JudgeChoice", "JudgeOverride"):
        said = definitions[model]["properties"]["provider"]["description"]
        assert [p for p in JUDGE_PROVIDERS if p not in said] == [], model
