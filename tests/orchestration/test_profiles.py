"""N8N_DEEPEVAL_PROFILE picks the instance, the results IO manager and the executor."""

import pytest
import yaml

from n8n_deepeval_pipeline.orchestration.definitions import (
    build_definitions,
    build_executor,
    results_io_manager,
)
from n8n_deepeval_pipeline.orchestration.local_runner import prepare_dagster_home, trial_instance
from n8n_deepeval_pipeline.orchestration.profiles import instance_yaml
from n8n_deepeval_pipeline.orchestration.resources.postgres_results_io_manager import (
    PostgresResultsIOManager,
)
from n8n_deepeval_pipeline.orchestration.resources.results_io_manager import ResultsIOManager
from n8n_deepeval_pipeline.tables.postgres_connection import libpq_url

URL = "postgresql+psycopg2://n8n:secret@db.internal:5432/results"


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("N8N_DEEPEVAL_HOME", str(tmp_path / "home"))
    # set, then unset: prepare_dagster_home() sets it, and it is restored afterwards
    monkeypatch.setenv("DAGSTER_HOME", "unset")
    monkeypatch.delenv("DAGSTER_HOME")
    for name in ("N8N_DEEPEVAL_PROFILE", "N8N_DEEPEVAL_POSTGRES_URL", "N8N_DEEPEVAL_REDIS_URL"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "home"


@pytest.fixture
def distributed(home, monkeypatch):
    monkeypatch.setenv("N8N_DEEPEVAL_PROFILE", "distributed")
    monkeypatch.setenv("N8N_DEEPEVAL_POSTGRES_URL", URL)
    monkeypatch.setenv("N8N_DEEPEVAL_REDIS_URL", "redis://broker.internal:6379/0")
    return home


def test_local_is_the_default(home):
    assert isinstance(results_io_manager(), ResultsIOManager)
    executor = build_executor()
    assert executor is None or "celery" not in executor.name
    assert yaml.safe_load((prepare_dagster_home() / "dagster.yaml").read_text()) == {
        "telemetry": {"enabled": False},
        "nux": {"enabled": False},  # no "join the community" pop-up over the UI's first page
        "storage": {
            "custom": {
                "module": "n8n_deepeval_pipeline.orchestration.sqlite_storage",
                "class": "PooledSqliteStorage",
                "config": {"base_dir": {"env": "DAGSTER_HOME"}},
            }
        },
    }


def test_the_dagster_yaml_an_earlier_version_wrote_is_brought_up_to_date(home):
    config = prepare_dagster_home() / "dagster.yaml"
    config.write_text("telemetry:\n  enabled: false\n")  # what the local profile once was
    prepare_dagster_home()
    assert config.read_text() == instance_yaml("local")


def test_an_instance_made_before_the_pop_up_was_turned_off_has_it_off_now(home):
    from n8n_deepeval_pipeline.orchestration.local_runner import local_instance

    config = prepare_dagster_home() / "dagster.yaml"
    local_before = (
        "telemetry:\n  enabled: false\nstorage:\n  custom:\n"
        "    module: n8n_deepeval_pipeline.orchestration.sqlite_storage\n"
        "    class: PooledSqliteStorage\n    config:\n      base_dir:\n        env: DAGSTER_HOME\n"
    )
    config.write_text(local_before)
    with local_instance() as instance:  # Dagster's own reading of the file
        assert instance.nux_enabled is False
    assert config.read_text() == instance_yaml("local")


def test_distributed_uses_postgres_and_celery(distributed, example_copy):
    pytest.importorskip("dagster_celery", reason="the distributed extra is not installed")
    defs = build_definitions([example_copy])
    manager = defs.resources["io_manager"]
    assert isinstance(manager, PostgresResultsIOManager)
    job = defs.resolve_job_def("support_agent__benchmark")
    assert job.executor_def.name == "celery_redis"
    # The password stays in the environment: dagster.yaml names the variable.
    config = (prepare_dagster_home() / "dagster.yaml").read_text()
    assert "secret" not in config
    assert yaml.safe_load(config)["storage"] == {
        "postgres": {"postgres_url": {"env": "N8N_DEEPEVAL_POSTGRES_URL"}}
    }
    assert libpq_url(URL) == "postgresql://n8n:secret@db.internal:5432/results"


def test_a_generated_dagster_yaml_follows_the_profile_and_an_edited_one_stays(home, monkeypatch):
    config = prepare_dagster_home() / "dagster.yaml"
    monkeypatch.setenv("N8N_DEEPEVAL_PROFILE", "distributed")
    prepare_dagster_home()
    assert config.read_text() == instance_yaml("distributed")
    config.write_text("telemetry:\n  enabled: false\n# mine\n")
    monkeypatch.setenv("N8N_DEEPEVAL_PROFILE", "local")
    prepare_dagster_home()
    assert config.read_text().endswith("# mine\n")


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"N8N_DEEPEVAL_PROFILE": "cluster"}, "choose one of local, distributed, kubernetes"),
        (
            {"N8N_DEEPEVAL_PROFILE": "distributed"},
            "N8N_DEEPEVAL_PROFILE=distributed needs N8N_DEEPEVAL_POSTGRES_URL",
        ),
        (
            {
                "N8N_DEEPEVAL_PROFILE": "distributed",
                "N8N_DEEPEVAL_POSTGRES_URL": "postgresql://n8n@db/results",
            },
            r"must start with postgresql\+psycopg2://",
        ),
    ],
)
def test_a_wrong_setting_is_named(home, monkeypatch, env, message):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=message):
        results_io_manager()


def test_a_trial_stays_local(distributed):
    with trial_instance("support_agent"):
        assert isinstance(results_io_manager(), ResultsIOManager)


def test_the_kubernetes_profile_names_its_extra_when_dagster_k8s_is_missing(
    distributed, monkeypatch
):
    monkeypatch.setenv("N8N_DEEPEVAL_PROFILE", "kubernetes")
    assert isinstance(results_io_manager(), PostgresResultsIOManager)
    try:
        import dagster_k8s  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match=r"n8n-deepeval-pipeline\[kubernetes\]"):
            build_executor()
    else:
        assert build_executor().name == "k8s"


def test_every_celery_worker_acknowledges_a_step_when_it_ends_as_the_executor_does(distributed):
    cli = pytest.importorskip("dagster_celery.cli", reason="the distributed extra is not installed")
    from n8n_deepeval_pipeline.orchestration.profiles import CELERY_SETTINGS, STEP_REQUEUE_S
    from tests.conftest import ROOT

    worker = cli.get_validated_config(str(ROOT / "deploy" / "celery" / "worker.yaml"))
    assert worker["config_source"] == CELERY_SETTINGS
    assert CELERY_SETTINGS["task_acks_late"] is True  # a step of a worker lost whole is re-queued
    assert CELERY_SETTINGS["broker_transport_options"] == {"visibility_timeout": STEP_REQUEUE_S}
