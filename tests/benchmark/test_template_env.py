"""A benchmark file is shared like code: its templates read only the variables it lists."""

from n8n_deepeval_pipeline import load_benchmark
from tests.benchmark.test_config import problems, with_changes, write

HOOK = {"type": "n8n_webhook", "url": "http://127.0.0.1:5678/webhook/probe"}
JUDGE_KEY = "N8N_DEEPEVAL_JUDGE_API_KEY"


def test_a_template_reading_the_judge_key_is_refused_at_validate(tmp_path):
    leak = {**HOOK, "body": {"leak": "{{ env.N8N_DEEPEVAL_JUDGE_API_KEY }}"}}
    assert problems(tmp_path, with_changes(target=leak)) == [
        f"target.n8n_webhook: Value error, body reads env.{JUDGE_KEY}: {JUDGE_KEY} belongs to "
        "this project (N8N_DEEPEVAL_*, N8N_API_KEY): templates never see it"
    ]


def test_the_projects_own_variables_cannot_be_listed(tmp_path):
    listed = {**HOOK, "env": ["SUPPORT_BOT_TOKEN", JUDGE_KEY, "N8N_API_KEY"]}
    assert problems(tmp_path, with_changes(target=listed)) == [
        f"target.n8n_webhook.env[1]: Value error, {JUDGE_KEY} belongs to this project "
        "(N8N_DEEPEVAL_*, N8N_API_KEY): templates never see it",
        "target.n8n_webhook.env[2]: Value error, N8N_API_KEY belongs to this project "
        "(N8N_DEEPEVAL_*, N8N_API_KEY): templates never see it",
    ]


def test_a_variable_the_file_does_not_list_is_refused_naming_the_field(tmp_path):
    header = {**HOOK, "headers": {"Authorization": "Bearer {{ env['SUPPORT_BOT_TOKEN'] }}"}}
    assert problems(tmp_path, with_changes(target=header)) == [
        "target.n8n_webhook: Value error, headers.Authorization reads env.SUPPORT_BOT_TOKEN, "
        "which is not in target.env (list the variables templates may read: "
        "env: [SUPPORT_BOT_TOKEN])"
    ]
    listed = load_benchmark(
        write(tmp_path, with_changes(target={**header, "env": ["SUPPORT_BOT_TOKEN"]}))
    )
    assert listed.target.env == ["SUPPORT_BOT_TOKEN"]


def test_a_harness_run_input_is_held_to_the_list_too(tmp_path):
    harness = {
        "type": "n8n_workflow",
        "startNodeName": "AI Agent",
        "endNodeName": "Reply",
        "input": {"chatInput": "{{ input }}", "token": "{{ env.CRM_TOKEN }}"},
    }
    (problem,) = problems(tmp_path, with_changes(target=harness))
    assert problem.startswith("target.n8n_workflow: Value error, input reads env.CRM_TOKEN, ")
    target = load_benchmark(
        write(tmp_path, with_changes(target={**harness, "env": ["CRM_TOKEN"]}))
    ).target
    assert target.as_webhook("http://127.0.0.1/webhook/copy", target.input).env == ["CRM_TOKEN"]


def test_a_judges_key_cannot_be_listed(tmp_path):
    document = with_changes(
        target={**HOOK, "env": ["OPENAI_API_KEY"]},
        judge={"provider": "openai", "apiKeyEnv": "OPENAI_API_KEY"},
    )
    assert problems(tmp_path, document) == [
        "(top level): Value error, target.env lists OPENAI_API_KEY, a judge's key (apiKeyEnv): "
        "templates never see it"
    ]
