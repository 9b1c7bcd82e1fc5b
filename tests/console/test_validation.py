"""validate: bad data files and recordings no run reads are reported, naming both files."""

import json

import pytest
import yaml

from n8n_deepeval_pipeline import BenchmarkConfigError
from n8n_deepeval_pipeline.console.validation import check_benchmark


def test_recordings_of_unknown_rows_or_runs_beyond_runs_per_row_are_errors(example_copy):
    outputs = example_copy.parent / "outputs.jsonl"
    lines = outputs.read_text().splitlines()
    extra = [
        {"row_id": "no-such-row", "run_index": 0, "output": "x"},
        {"row_id": json.loads(lines[0])["row_id"], "run_index": 3, "output": "x"},
    ]
    outputs.write_text("\n".join([*lines, *map(json.dumps, extra)]) + "\n")
    with pytest.raises(BenchmarkConfigError) as caught:
        check_benchmark(example_copy)
    assert str(caught.value).splitlines()[0] == (
        f"{outputs}: invalid recorded outputs (target.outputs of {example_copy})"
    )
    assert caught.value.problems == [
        "line 55: row_id 'no-such-row' run_index 0: "
        "no such row in the dataset (after filters and maxRows)",
        f"line 56: row_id {extra[1]['row_id']!r} run_index 3: "
        "run_index must be below runsPerRow (3)",
        "to leave out the lines no run reads, set target.ignoreUnusedOutputs: true",
    ]
    document = yaml.safe_load(example_copy.read_text())
    document["target"]["ignoreUnusedOutputs"] = True
    example_copy.write_text(yaml.safe_dump(document))
    assert check_benchmark(example_copy)[1].runs == 27


@pytest.mark.parametrize(
    ("name", "text", "what", "problem"),
    [
        ("dataset.csv", "", "invalid dataset (dataset.path", "the file is empty"),
        (
            "outputs.jsonl",
            "\n\n",
            "invalid recorded outputs (target.outputs",
            "the file is empty: no recorded outputs",
        ),
    ],
)
def test_an_empty_data_file_is_named_with_the_benchmark_that_points_to_it(
    example_copy, name, text, what, problem
):
    path = example_copy.parent / name
    path.write_text(text)
    with pytest.raises(BenchmarkConfigError) as caught:
        check_benchmark(example_copy)
    assert str(caught.value) == f"{path}: {what} of {example_copy})\n  - {problem}"


def test_the_bundled_example_is_valid(example_copy):
    _, report = check_benchmark(example_copy)
    assert (report.rows, report.runs, report.workflow_hash[:12]) == (9, 27, "f7ee35b359b4")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{not json", "line 1: not valid JSON (Expecting property name enclosed in double quotes)"),
        ('{"nodes": 3}', "no 'nodes' list: this is not an n8n workflow export"),
    ],
)
def test_workflow_file_errors_name_the_benchmark_and_its_workflow_field(
    example_copy, text, problem
):
    workflow = example_copy.parent / "workflow.json"
    workflow.write_text(text)
    with pytest.raises(BenchmarkConfigError) as caught:
        check_benchmark(example_copy)
    assert str(caught.value) == (
        f"{workflow}: invalid workflow (workflow of {example_copy})\n  - {problem}"
    )


def _with(example_copy, **changes):
    document = yaml.safe_load(example_copy.read_text())
    for key, value in changes.items():
        if key == "failOn":
            document["compare"]["failOn"] = value
        else:
            document[key] = value
    example_copy.write_text(yaml.safe_dump(document))
    return example_copy


@pytest.mark.parametrize(
    ("fail_on", "runs", "fewest", "needs"),
    [("regression", 3, 4, "0.05"), ("likely_regression", 1, 2, "0.2")],
)
def test_validate_warns_when_the_gate_can_never_fire_with_runs_per_row(
    example_copy, fail_on, runs, fewest, needs
):
    from click.testing import CliRunner
    from scipy.stats import fisher_exact

    from n8n_deepeval_pipeline.cli import main

    path = _with(example_copy, failOn=fail_on, runsPerRow=runs, target=_columns_target())
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 0, result.output  # valid: a warning, not an error
    # the surest drop there is: every baseline run passes, every candidate run fails
    best = fisher_exact([[0, runs], [runs, 0]], alternative="less").pvalue
    assert result.stderr == (
        f"{path}: warning: compare.failOn: {fail_on} can never fire with runsPerRow {runs}: "
        f"even {runs}/{runs} passing runs dropping to 0/{runs} give p = {best:.3f} "
        f"(Fisher's one-sided exact test), and {fail_on} needs p < {needs}; "
        f"it takes at least {fewest} runs per case\n"
    )
    enough = _with(example_copy, runsPerRow=fewest)
    assert CliRunner().invoke(main, ["validate", str(enough)]).stderr == ""


def _columns_target():
    # outputs from dataset columns: any runsPerRow is valid (no recorded run indexes)
    return {"type": "recorded", "columns": {"output": "expectedOutput"}, "workflowHash": "0" * 64}


def _harness_target(**extra):
    return {"type": "n8n_workflow", "startNodeName": "AI Agent", "endNodeName": "AI Agent",
            **extra}  # fmt: skip


def test_validate_lists_in_plain_words_the_nodes_that_act_on_a_real_service(
    example_copy, monkeypatch
):
    from click.testing import CliRunner

    from n8n_deepeval_pipeline.cli import main

    monkeypatch.setenv("N8N_API_URL", "http://127.0.0.1:9")  # the harness's n8n, never called
    monkeypatch.setenv("N8N_API_KEY", "n8n-api-key-unused")
    path = _with(example_copy, runsPerRow=2, target=_harness_target())
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    assert result.stderr == (
        f'{path}: warning: acts on a real service: "order_lookup" '
        "(n8n-nodes-base.httpRequestTool) makes HTTP requests with the credential "
        "httpHeaderAuth, as a tool of AI Agent, on every run (mock it in target.mocks)\n"
    )
    judged = {"nodes": {"order_lookup": "judge"}}  # a judge-mocked node does not act
    for mocks in ("services", {"nodes": {"order_lookup": {"column": "expectedOutput"}}}, judged):
        mocked = _with(example_copy, target=_harness_target(mocks=mocks))
        assert CliRunner().invoke(main, ["validate", str(mocked)]).stderr == ""


def test_a_mock_of_a_node_that_never_runs_or_of_a_missing_column_is_an_error(example_copy):
    mocks = {"nodes": {"Respond to Webhook": {"response": {}},
                       "order_lookup": {"column": "answers"}}}  # fmt: skip
    path = _with(example_copy, runsPerRow=2, target=_harness_target(mocks=mocks))
    with pytest.raises(BenchmarkConfigError) as caught:
        check_benchmark(path)
    assert caught.value.problems == [
        'target: mock "Respond to Webhook": no node of that name runs between "AI Agent" '
        'and "AI Agent"',
        "target: mock \"order_lookup\": column 'answers' is missing from row 'ord-status-1'",
    ]


def test_a_mock_needs_one_answer_and_the_error_names_its_field(example_copy):
    path = _with(example_copy, target=_harness_target(mocks={"nodes": {"order_lookup": {}}}))
    with pytest.raises(BenchmarkConfigError) as caught:
        check_benchmark(path)
    assert caught.value.problems == [
        "target.n8n_workflow.mocks.nodes.order_lookup: Value error, a mock needs exactly one "
        "of 'response', 'column' or 'judge'"
    ]


@pytest.mark.parametrize("mock", [{"column": "expectedOutput"}, "judge"])
def test_a_column_or_judge_mock_needs_an_object_input(example_copy, mock):
    mocks = {"nodes": {"order_lookup": mock}}
    target = _harness_target(input="{{ input }}", mocks=mocks)
    path = _with(example_copy, runsPerRow=2, target=target)
    with pytest.raises(BenchmarkConfigError) as caught:
        check_benchmark(path)
    assert caught.value.problems == [
        "target: mocks: a response read from a column or written by the judge needs an object input"
    ]


def test_a_dataset_whose_filters_match_no_row_is_refused_naming_the_dataset_and_filters(
    example_copy,
):
    from click.testing import CliRunner

    from n8n_deepeval_pipeline.cli import main

    document = yaml.safe_load(example_copy.read_text())
    document["dataset"]["filters"] = {"topic": "weather", "id": "ord-status-1"}
    example_copy.write_text(yaml.safe_dump(document))
    result = CliRunner().invoke(main, ["validate", str(example_copy)])
    assert result.exit_code == 1
    assert "ok" not in result.output
    assert result.stderr == (
        f"{example_copy}: invalid benchmark\n"
        f"  - dataset: no row of {example_copy.parent / 'dataset.csv'} matches "
        "dataset.filters (id=ord-status-1, topic=weather): nothing would run\n"
    )


def test_run_refuses_a_harness_target_without_n8n_in_one_line_before_any_step(
    example_copy, monkeypatch, tmp_path
):
    from click.testing import CliRunner

    from n8n_deepeval_pipeline.cli import main

    for name in ("N8N_API_URL", "N8N_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("N8N_DEEPEVAL_HOME", str(tmp_path / "home"))
    path = _with(example_copy, runsPerRow=4, target=_harness_target(mocks="services"))
    needs_n8n = (
        "target: n8n_workflow runs a harness copy in n8n: set N8N_API_URL and N8N_API_KEY "
        "(Settings → n8n API in n8n) to run it"
    )
    validated = CliRunner().invoke(main, ["validate", str(path)])
    assert validated.exit_code == 0  # the file is valid, and validate says what run will say
    assert validated.stderr == f"{path}: warning: run refuses it here: {needs_n8n}\n"
    result = CliRunner().invoke(main, ["run", str(path)])
    assert result.exit_code == 2, result.output  # a configuration to mend, not a failed run
    assert result.stderr == f"Error: {path}: cannot run here\n  - {needs_n8n}\n"
    assert "Dagster" not in result.stderr and not (tmp_path / "home" / "results.duckdb").exists()
    assert not (tmp_path / "home").exists()  # refused before anything was made


def _webhook_target(**extra):
    return {"type": "n8n_webhook", "url": "http://127.0.0.1:9/webhook/agent", **extra}


@pytest.mark.parametrize(
    ("target", "problem"),
    [
        (
            _webhook_target(body={"p": "{{ config }}"}),
            "target.body.p: template '{{ config }}': 'config' is undefined",
        ),
        (
            _webhook_target(body={"q": ["{{ input }}", "{{ row.nope.deeper }}"]}),
            "target.body.q[1]: template '{{ row.nope.deeper }}': 'dict object' has no "
            "attribute 'nope'",
        ),
        (
            _webhook_target(headers={"X-Case": "{{ evalContext.case }}"}),
            "target.headers.X-Case: template '{{ evalContext.case }}': 'dict object' has no "
            "attribute 'case'",
        ),
        (
            _webhook_target(url="http://127.0.0.1:9/webhook/{{ evalContext.row }}"),
            "target.url: template 'http://127.0.0.1:9/webhook/{{ evalContext.row }}': "
            "'dict object' has no attribute 'row'",
        ),
        (
            _webhook_target(body={"f": "{{ row.items }}"}),
            "target.body: the rendered body is not JSON (Object of type "
            "builtin_function_or_method is not JSON serializable)",
        ),
        (
            _harness_target(input={"chatInput": "{{ inputs }}"}),
            "target.input.chatInput: template '{{ inputs }}': 'inputs' is undefined",
        ),
    ],
)
def test_every_request_template_is_rendered_against_the_first_row_naming_the_field(
    example_copy, target, problem
):
    path = _with(example_copy, target=target)
    with pytest.raises(BenchmarkConfigError) as caught:
        check_benchmark(path)
    assert caught.value.problems == [f"{problem} (with row 'ord-status-1')"]


def test_templates_that_render_for_the_first_row_are_valid_and_an_unset_env_is_a_warning(
    example_copy, monkeypatch
):
    monkeypatch.delenv("SUPPORT_TOKEN", raising=False)
    target = _webhook_target(
        headers={"Authorization": "Bearer {{ env.SUPPORT_TOKEN }}"},
        body={"q": "{{ input }}", "case": "{{ evalContext.caseId }}", "n": "{{ row.id }}"},
        env=["SUPPORT_TOKEN"],
    )
    _, report = check_benchmark(_with(example_copy, target=target))
    assert report.warnings == [
        "target.env: SUPPORT_TOKEN is not set here: a template that reads it fails on every call"
    ]
    monkeypatch.setenv("SUPPORT_TOKEN", "t0k3n-for-support")
    assert check_benchmark(example_copy)[1].warnings == []


def test_online_conversational_metrics_need_a_session_the_workflow_names(tmp_path):
    from n8n_deepeval_pipeline.n8n_api.client import N8nClient
    from tests.n8n_api.fake_n8n import FakeN8nApi
    from tests.orchestration.test_online import (
        WEBHOOK_CONVERSATION_BENCHMARK,
        WEBHOOK_MEMORY_AGENT,
        benchmark_file,
    )
    from tests.workflow.test_anatomy import webhook_agent_with_memory

    path = benchmark_file(tmp_path, WEBHOOK_CONVERSATION_BENCHMARK)
    (path.parent / "dataset.jsonl").write_text(
        '{"rowId": "r1", "input": "hello", "expectedOutput": "hi"}\n'
    )
    with FakeN8nApi() as fake, N8nClient(fake.base_url, "test-key") as client:
        fake.workflows["wf"] = WEBHOOK_MEMORY_AGENT  # memory keyed by body.sessionId
        assert check_benchmark(path, client)[1].metrics == ["turn_relevancy", "knowledge_retention"]
        fake.workflows["wf"] = webhook_agent_with_memory()  # the input's sessionId: none
        with pytest.raises(BenchmarkConfigError) as caught:
            check_benchmark(path, client)
    assert caught.value.problems == [
        "online.metrics: turn_relevancy, knowledge_retention score chat sessions, but the "
        'workflow names none: memory "Simple Memory" takes the session from the input\'s '
        "sessionId, which the trigger Webhook (n8n-nodes-base.webhook) does not send; key "
        "the memory by a field of the request (Session ID: Define below, "
        "{{ $json.body.sessionId }}) or score only per execution"
    ]


def _refused_alike(path, tmp_path, monkeypatch, problem):
    """`validate` (exit 1) and `run` (exit 2, before any step) refuse ``path`` in one line."""
    from click.testing import CliRunner

    from n8n_deepeval_pipeline.cli import main

    monkeypatch.setenv("N8N_DEEPEVAL_HOME", str(tmp_path / "home"))
    said = f"{path}: invalid benchmark\n  - {problem}\n"
    validated = CliRunner().invoke(main, ["validate", str(path)])
    assert (validated.exit_code, validated.stderr) == (1, said)
    ran = CliRunner().invoke(main, ["run", str(path)])
    assert (ran.exit_code, ran.stderr) == (2, f"Error: {said}")  # not a failed Dagster step
    assert not (tmp_path / "home").exists()


def test_an_unknown_judge_provider_is_refused_by_validate_as_by_run(
    example_copy, tmp_path, monkeypatch
):
    monkeypatch.setenv("N8N_DEEPEVAL_JUDGE_PROVIDER", "gpt")  # before: run exited 4
    _refused_alike(
        example_copy,
        tmp_path,
        monkeypatch,
        "N8N_DEEPEVAL_JUDGE_PROVIDER='gpt' names no judge provider: one of dry-run, openai, "
        "openai-compatible, azure-openai, anthropic, gemini, ollama, openrouter, deepseek, "
        "bedrock, local",
    )


def test_a_judge_whose_sdk_is_not_installed_is_refused_naming_it_and_its_extra(
    example_copy, tmp_path, monkeypatch
):
    from n8n_deepeval_pipeline.judging import providers

    real = providers._installed  # a stand-in for an environment without the gemini extra

    def installed(module):
        return module != "google.genai" and real(module)

    monkeypatch.setattr(providers, "_installed", installed)
    monkeypatch.setenv("N8N_DEEPEVAL_JUDGE_PROVIDER", "gemini")
    monkeypatch.setenv("N8N_DEEPEVAL_JUDGE_MODEL", "gemini-2.5-flash")
    _refused_alike(  # before: 54 scores without a judgement, exit 3
        example_copy,
        tmp_path,
        monkeypatch,
        "N8N_DEEPEVAL_JUDGE_*: the gemini judge needs its SDK (google.genai): "
        "pip install 'n8n-deepeval-pipeline[gemini]'",
    )


def test_a_judge_the_run_could_not_build_is_refused_naming_its_field(example_copy):
    document = yaml.safe_load(example_copy.read_text())
    document["metrics"][6]["judge"] = {"provider": "azure-openai", "model": "gpt-4o"}
    example_copy.write_text(yaml.safe_dump(document))
    with pytest.raises(BenchmarkConfigError) as caught:
        check_benchmark(example_copy)
    assert caught.value.problems == [
        "metrics[6] (bias): the azure-openai judge needs base_url (the Azure endpoint)"
    ]
    document["metrics"][6].pop("judge")
    document["judge"] = {"provider": "bedrock", "model": "anthropic.claude-sonnet-4-5"}
    example_copy.write_text(yaml.safe_dump(document))
    with pytest.raises(BenchmarkConfigError) as caught:
        check_benchmark(example_copy)
    assert caught.value.problems == ["judge: the bedrock judge needs region (the AWS region)"]


@pytest.mark.parametrize(
    ("turns", "problem"),
    [
        ("hello there", "chat history is not valid JSON: Expecting value"),
        ([1, 2], "message 1 is not an object"),
        ({"role": "user"}, "chat history must be a list, got dict"),
    ],
)
def test_opening_turns_a_simulation_cannot_read_are_refused_by_validate(
    example_copy, turns, problem
):
    folder = example_copy.parent
    goldens = [{"id": "g1", "scenario": "Asks about an order.", "turns": turns}]
    (folder / "goldens.jsonl").write_text("".join(json.dumps(g) + "\n" for g in goldens))
    document = {
        "name": "simulated",
        "workflow": "workflow.json",
        "dataset": {"path": "goldens.jsonl"},
        "target": {"type": "n8n_webhook", "url": "http://127.0.0.1:9/webhook/agent"},
        "simulation": {"maxUserTurns": 2},
        "metrics": [{"metric": "turn_relevancy"}],
    }
    path = folder / "simulated.yaml"
    path.write_text(yaml.safe_dump(document))
    with pytest.raises(BenchmarkConfigError) as caught:
        check_benchmark(path)
    assert caught.value.problems == [
        f"row 1 (id 'g1'): the opening turns (column 'turns') cannot be read: {problem}"
    ]
