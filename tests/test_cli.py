import json
import os
import re
import shutil
import stat
from pathlib import Path

import duckdb
import pytest
import yaml
from click.testing import CliRunner

from n8n_deepeval_pipeline import workflow_hash
from n8n_deepeval_pipeline.cli import main
from n8n_deepeval_pipeline.orchestration.local_runner import local_instance
from tests.conftest import EXAMPLE
from tests.orchestration.conftest import edit_and_record_new_version


@pytest.fixture
def cli_home(tmp_path, monkeypatch):
    """A private project home and Dagster instance for commands that run benchmarks."""
    home = tmp_path / "home"
    monkeypatch.setenv("N8N_DEEPEVAL_HOME", str(home))
    monkeypatch.setenv("DAGSTER_HOME", str(home / "dagster"))
    monkeypatch.setenv("DEEPEVAL_POOL_SIZE", "2")
    return home


def test_hash_of_a_file_and_of_stdin_agree_with_the_library():
    text = (EXAMPLE / "workflow.json").read_text()
    expected = workflow_hash(json.loads(text))
    runner = CliRunner()
    from_file = runner.invoke(main, ["hash", str(EXAMPLE / "workflow.json")])
    from_stdin = runner.invoke(main, ["hash", "-"], input=json.dumps({"data": json.loads(text)}))
    assert from_file.output.strip() == expected == from_stdin.output.strip()
    assert len(expected) == 64
    bad = runner.invoke(main, ["hash", "-"], input='{"name": 1}')
    assert bad.exit_code == 1 and "no 'nodes' list" in bad.output


def test_validate_reports_what_will_run_and_fails_with_field_paths(example_copy):
    runner = CliRunner()
    ok = runner.invoke(main, ["validate", str(example_copy)])
    assert ok.exit_code == 0
    assert "support_agent" in ok.output and "9 rows · 27 runs · 7 metrics" in ok.output

    document = yaml.safe_load(example_copy.read_text())
    document["runsPerRow"] = "three"
    document["metrics"][1].pop("allowedTools")
    document["metrics"][1].pop("deniedTools")
    example_copy.write_text(yaml.safe_dump(document))
    bad = runner.invoke(main, ["validate", str(example_copy)])
    assert bad.exit_code == 1
    assert str(example_copy) in bad.output
    assert "runsPerRow: Input should be a valid integer" in bad.output
    assert "metrics[1] (tool_permission): Value error, tool_permission needs" in bad.output


def test_validate_checks_the_files_the_benchmark_points_to(example_copy):
    (example_copy.parent / "dataset.csv").write_text("key,input\n1,a\n")
    result = CliRunner().invoke(main, ["validate", str(example_copy)])
    assert result.exit_code == 1
    assert "dataset.idColumn: column 'id' is not in the file (columns: input, key)" in result.output


def test_validate_and_run_refuse_recordings_that_no_run_reads(example_copy, tmp_path, cli_home):
    outputs = example_copy.parent / "outputs.jsonl"
    with outputs.open("a") as file:
        file.write(json.dumps({"row_id": "ord-status-1", "run_index": 3, "output": "x"}) + "\n")
    message = (
        f"{outputs}: invalid recorded outputs (target.outputs of {example_copy})\n"
        "  - line 55: row_id 'ord-status-1' run_index 3: run_index must be below runsPerRow (3)\n"
        "  - to leave out the lines no run reads, set target.ignoreUnusedOutputs: true\n"
    )
    runner = CliRunner()
    validated = runner.invoke(main, ["validate", str(example_copy)])
    assert (validated.exit_code, validated.output) == (1, message)
    run = runner.invoke(main, ["run", str(example_copy)])
    assert (run.exit_code, run.output) == (2, f"Error: {message}")


def test_metrics_lists_the_catalog_under_a_header_in_aligned_columns():
    lines = CliRunner().invoke(main, ["metrics"]).output.splitlines()
    assert lines[0].split() == ["slug", "metric", "category", "direction", "judge"]
    assert lines[1] == (
        "g_eval                     G-Eval                     custom      higher_is_better  yes"
    )
    longest = next(line for line in lines if line.startswith("turn_contextual_precision"))
    assert longest == (
        "turn_contextual_precision  Turn Contextual Precision  multi-turn  higher_is_better  yes"
    )
    starts = {line.index("higher_is_better") for line in lines if "higher_is_better" in line}
    assert starts == {lines[0].index("direction")}


def test_metrics_json_lists_the_catalog_with_config_schemas():
    result = CliRunner().invoke(main, ["metrics", "--json"])
    listed = json.loads(result.output)
    catalog = {entry["slug"]: entry for entry in listed["metrics"]}
    assert len(catalog) == 55  # with arena_g_eval, the three MCP and five image metrics
    assert {"g_eval", "tool_use", "citation_faithfulness", "correctness", "tools_used"} <= set(
        catalog
    )
    assert catalog["faithfulness"]["category"] == "rag"
    assert "penalizeAmbiguousClaims" in catalog["faithfulness"]["config"]["properties"]
    assert catalog["bias"]["direction"] == "lower_is_better"
    assert catalog["tool_use"]["needs"] == {"judge": True, "trace": False, "turns": True}
    assert catalog["tool_use"]["config"]["required"] == ["availableTools"]
    assert catalog["hallucination"]["requiredFields"] == ["input", "actual_output", "context"]
    assert catalog["agent_loop_detection"]["needs"] == {
        "judge": False,
        "trace": True,
        "turns": False,
    }
    assert catalog["tool_permission"]["config"]["properties"]["threshold"]["default"] == 1.0
    assert "repetitionThreshold" in catalog["agent_loop_detection"]["config"]["properties"]
    assert catalog["mcp_use"]["requiredFields"] == ["input", "actual_output", "mcp_servers"]
    assert catalog["mcp_task_completion"]["needs"] == {"judge": True, "trace": False, "turns": True}
    assert catalog["multi_turn_mcp_use"]["category"] == "mcp"
    assert catalog["image_editing"]["requiredFields"] == [
        "input", "actual_output", "input_images", "output_images"
    ]  # fmt: skip
    for slug in ("text_to_image", "image_coherence", "image_helpfulness", "image_reference"):
        assert catalog[slug]["category"] == "images"
        assert catalog[slug]["direction"] == "higher_is_better"
    assert "maxContextSize" in catalog["image_coherence"]["config"]["properties"]
    assert "includeReason" not in catalog["text_to_image"]["config"]["properties"]
    left_out = {
        entry["implementation"].rpartition(".")[2]: entry["why"] for entry in listed["leftOut"]
    }
    assert "System One" in left_out["JevEval"]
    assert "voice conversation" in left_out["VoiceNaturalnessMetric"]


@pytest.mark.slow
def test_run_materialises_the_example_and_prints_the_summary(example_copy, tmp_path, cli_home):
    runner = CliRunner()
    result = runner.invoke(main, ["run", str(example_copy), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert (summary["benchmark"], summary["runs"], summary["consistency"]["cases"]) == (
        "support_agent",
        27,
        9,
    )
    metrics = {m["metric"]: m for m in summary["metrics"]}
    assert metrics["tool_permission"]["mean_score"] == pytest.approx(26.5 / 27)
    assert metrics["tool_correctness"]["mean_score"] == pytest.approx(26 / 27)
    assert metrics["exact_answer"]["mean_score"] == pytest.approx(22 / 27)
    # Runs whose agent called no tool (intermediateSteps: []) are judged on their trace too.
    assert metrics["agent_loop_detection"]["errors"] == 0
    assert metrics["bias"]["dry_run"] and not metrics["tool_permission"]["dry_run"]
    assert summary["dry_run_judge"] is True
    assert 0 < summary["pass_rate"] < 1
    assert summary["consistency"]["mean_cv"] > 0
    assert set(summary["consistency"]["mean_pass_at_k"]) == {"1", "2", "3"}
    failing = {case["row_id"]: case for case in summary["failing_cases"]}
    # the dry-run judge's placeholders decide no run: the scores without a judge do
    assert list(failing) == ["refund", "calc-shipping"]  # the most failed first
    assert not metrics["helpfulness"]["decides"] and metrics["tool_correctness"]["decides"]
    assert failing["refund"] == {
        "row_id": "refund",
        "failed_runs": 2,
        "runs": 3,
        "categories": {"below_threshold": 2},
    }

    text = runner.invoke(main, ["run", str(example_copy), "--fail-under", "0.99"])
    assert text.exit_code == 1
    assert "DRY-RUN JUDGE" in text.stdout and "consistency over 9 cases" in text.stdout
    assert "failing cases: 2 (failed runs, why)" in text.stdout
    assert "  refund         2/3  below_threshold 2" in text.stdout.splitlines()
    assert "is below 99.0%" in text.output

    backfill = runner.invoke(main, ["backfill", str(example_copy), "--from", "metric_scores"])
    assert backfill.exit_code == 0, backfill.output
    assert "backfilled 1 version(s)" in backfill.output
    with duckdb.connect(str(tmp_path / "home" / "results.duckdb"), read_only=True) as connection:
        assert connection.execute(
            "select count(*) from support_agent.metric_scores"
        ).fetchone() == (189,)


REPORT_LINE = re.compile(
    r"report: (?P<path>\S+) \(open it in a browser; eval-results.json and eval-pr-comment.md "
    r"beside it\)"
)


def said_report(printed):
    """The report file a `run` names on its line of ``printed`` (stdout, or stderr with --json)."""
    (path,) = [m["path"] for line in printed.splitlines() if (m := REPORT_LINE.fullmatch(line))]
    return Path(path)


@pytest.mark.slow
def test_run_ends_by_naming_the_report_it_wrote(example_copy, cli_home, monkeypatch):
    monkeypatch.chdir(cli_home.parent)  # the home under the working directory: said relative
    runner = CliRunner()
    text = runner.invoke(main, ["run", str(example_copy)])
    assert text.exit_code == 0, text.output
    written = cli_home / "reports" / "support_agent" / "f7ee35b359b4"
    last = text.stdout.splitlines()[-1]
    assert last.startswith("report: home/reports/")  # after the summary, as run ends
    assert said_report(text.stdout) == Path("home/reports/support_agent/f7ee35b359b4/report.html")
    assert said_report(text.stdout).resolve() == (written / "report.html").resolve()
    assert "support_agent" in (written / "report.html").read_text("utf-8")
    results = json.loads((written / "eval-results.json").read_text("utf-8"))
    assert results["outcome"]["workflow_hash"].startswith("f7ee35b359b4")
    assert (written / "eval-pr-comment.md").is_file()

    as_json = runner.invoke(main, ["run", str(example_copy), "--json"])
    assert json.loads(as_json.stdout)["runs"] == 27  # stdout holds the JSON alone
    assert said_report(as_json.stderr).resolve() == (written / "report.html").resolve()
    trial = runner.invoke(main, ["run", str(example_copy), "--filter", "ord"])
    assert trial.exit_code == 0, trial.output
    kept = cli_home / "trials" / "support_agent" / "reports" / "support_agent" / "f7ee35b359b4"
    assert said_report(trial.stdout).resolve() == (kept / "report.html").resolve()
    assert (kept / "report.html").is_file()


@pytest.fixture
def usual_umask():
    """The usual umask (022), under which files are created readable by everyone."""
    before = os.umask(0o022)
    yield
    os.umask(before)


def mode(path):
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.slow
def test_a_first_run_creates_the_home_results_and_judge_state_private_to_the_user(
    example_copy, cli_home, usual_umask
):
    result = CliRunner().invoke(main, ["run", str(example_copy)])
    assert result.exit_code == 0, result.output
    judge = cli_home / "judge"
    assert {"home": mode(cli_home), "dagster": mode(cli_home / "dagster")} == {
        "home": 0o700,
        "dagster": 0o700,
    }
    assert mode(cli_home / "results.duckdb") == 0o600
    assert mode(judge) == 0o700
    state = sorted(judge.glob("judge.sqlite*"))
    assert state[0].name == "judge.sqlite"
    assert {path.name: mode(path) for path in state} == {path.name: 0o600 for path in state}


@pytest.mark.slow
def test_backfill_runs_the_current_version_and_rescores_older_ones(
    example_copy, tmp_path, cli_home
):
    runner = CliRunner()
    assert runner.invoke(main, ["run", str(example_copy)]).exit_code == 0
    new = edit_and_record_new_version(example_copy)
    with local_instance() as instance:  # a version production traffic registered (online)
        instance.add_dynamic_partitions("support_agent__workflow_hash", ["0123456789ab"])
    backfill = runner.invoke(main, ["backfill", str(example_copy)])
    assert backfill.exit_code == 0, backfill.output
    assert "never benchmarked, left out: 0123456789ab" in backfill.output  # nothing to re-score
    assert ": from metric_scores" in backfill.output  # the old version, re-scored
    assert f"workflow {new[:12]}: every asset" in backfill.output
    assert "backfilled 2 version(s)" in backfill.output
    with duckdb.connect(str(tmp_path / "home" / "results.duckdb"), read_only=True) as connection:
        counts = connection.execute(
            "select count(distinct workflow_hash), count(*) from support_agent.metric_scores"
        ).fetchone()
    assert counts == (2, 2 * 189)


@pytest.mark.slow
def test_filtered_run_is_a_trial_that_leaves_the_versions_results_whole(
    example_copy, tmp_path, cli_home
):
    runner = CliRunner()
    assert runner.invoke(main, ["run", str(example_copy)]).exit_code == 0
    trial = runner.invoke(
        main,
        ["run", str(example_copy), "--json", "--filter", "ord", "--exclude", "total"],
    )
    assert trial.exit_code == 0, trial.output
    summary = json.loads(trial.stdout)
    folder = cli_home / "trials" / "support_agent"
    assert summary["runs"] == 9  # ord-status-1, ord-status-2, ord-missing × 3 runs
    assert summary["trial"] == (
        f"9 runs of row ids containing 'ord' but not 'total', kept in {folder}"
    )
    assert {case["row_id"] for case in summary["failing_cases"]} <= {
        "ord-status-1",
        "ord-status-2",
        "ord-missing",
    }
    with duckdb.connect(str(cli_home / "results.duckdb"), read_only=True) as connection:
        stored = connection.execute("select count(*) from support_agent.run_aggregates")
        assert stored.fetchone() == (27,)  # the version keeps every case
    with duckdb.connect(str(folder / "results.duckdb"), read_only=True) as connection:
        rows = connection.execute(
            "select distinct split_part(run_id, ':', 2) from support_agent.run_aggregates"
        ).fetchall()
    assert sorted(rows) == [("ord-missing",), ("ord-status-1",), ("ord-status-2",)]
    assert list((folder / "reports" / "support_agent").glob("*/report.html"))
    assert not (cli_home / "trials" / "support_agent" / "dagster").exists()  # no instance kept
    full = json.loads(runner.invoke(main, ["run", str(example_copy), "--json"]).stdout)
    assert (full["runs"], full["trial"]) == (27, None)

    nothing = runner.invoke(main, ["run", str(example_copy), "--filter", "no-such-case"])
    assert nothing.exit_code == 2
    assert "row ids containing 'no-such-case' select no row; row ids: ord-status-1," in (
        nothing.output
    )


def test_published_json_schema_matches_the_models():
    from tests.conftest import ROOT

    result = CliRunner().invoke(main, ["schema"])
    published = json.loads((ROOT / "schemas" / "benchmark.schema.json").read_text())
    assert json.loads(result.output) == published, "regenerate with: n8n-deepeval schema"
    assert published["properties"]["runsPerRow"]["default"] == 1
    assert "passRule" in json.dumps(published)


def test_cache_clear_forgets_every_cached_answer(tmp_path, monkeypatch):
    from n8n_deepeval_pipeline.judging.shared_state import CachedAnswer, SharedState

    monkeypatch.setenv("N8N_DEEPEVAL_HOME", str(tmp_path))
    runner = CliRunner()
    assert "removed 0 cached judge answer(s)" in runner.invoke(main, ["cache", "clear"]).output
    state = SharedState.in_folder(tmp_path / "judge")
    for key in ("a", "b"):
        state.store(key, CachedAnswer(answer="{}", prompt_tokens=1, completion_tokens=1))
    result = runner.invoke(main, ["cache", "clear"])
    assert result.exit_code == 0 and "removed 2 cached judge answer(s)" in result.output
    assert state.cached("a") is None


def test_run_of_an_invalid_benchmark_exits_2_not_1_like_a_low_pass_rate(
    example_copy, tmp_path, cli_home
):
    document = yaml.safe_load(example_copy.read_text())
    document["runsPerRow"] = 0
    example_copy.write_text(yaml.safe_dump(document))
    result = CliRunner().invoke(main, ["run", str(example_copy)])
    assert result.exit_code == 2
    assert "runsPerRow: Input should be greater than or equal to 1" in result.output


@pytest.mark.slow
def test_compare_prints_the_verdicts_and_exits_1_on_a_flagged_regression(
    example_copy, tmp_path, cli_home
):
    runner = CliRunner()
    assert runner.invoke(main, ["run", str(example_copy)]).exit_code == 0
    alone = runner.invoke(main, ["compare", str(example_copy)])
    assert alone.exit_code == 2  # could not run: no earlier version
    assert "no version before f7ee35b359b4 to compare with" in alone.output
    workflow = example_copy.parent / "workflow.json"
    workflow.write_text((example_copy.parent / "workflow.v2.json").read_text())
    second = runner.invoke(main, ["run", str(example_copy)])
    assert second.exit_code == 5  # the run completed and regressed against the first
    assert "runs 27 · pass rate 51.9%" in second.stdout
    assert (
        "likely_regression against baseline f7ee35b359b4: ord-missing, returns-policy (2 cases; "
        in second.stderr
    )
    compared = runner.invoke(main, ["compare", str(example_copy)])
    assert compared.exit_code == 1, compared.output
    lines = compared.stdout.splitlines()
    assert lines[0] == "candidate f7b1504dcb09 against baseline f7ee35b359b4"
    assert lines[1].startswith("run pass rate 88.9% [71.9%, 96.1%] (24/27) → 51.9%")
    assert "ord-missing          3/3        0/3  -100.0  0.050  likely_regression" in lines
    assert "2 case(s) flagged likely_regression or worse: ord-missing, returns-policy" in (
        compared.stderr
    )
    # the dry-run judge's placeholders are marked as such among the metrics' deltas
    marked = {line.split()[0] for line in lines if line.endswith("   dry-run")}
    assert marked == {"helpfulness", "bias"}
    assert any(
        line.startswith("dry-run: scored by the dry-run judge, placeholders") for line in lines
    )
    unknown = runner.invoke(main, ["compare", str(example_copy), "--baseline", "abcdef0"])
    assert unknown.exit_code == 2 and "no known version starts with 'abcdef0'" in unknown.output
    as_json = runner.invoke(main, ["compare", str(example_copy), "--json"])
    assert as_json.exit_code == 1  # the same gate, the same exit code
    printed = json.loads(as_json.stdout)
    assert (printed["baseline"], printed["candidate"]) == ("f7ee35b359b4", "f7b1504dcb09")
    assert printed["outcome"]["gate"] == {
        "fail_on": "likely_regression",
        "baseline": "f7ee35b359b4",
        "flagged_cases": ["ord-missing", "returns-policy"],
        "has_regression": True,  # as compare exits 1
    }
    assert printed["outcome"]["exit_codes"] == {"run": 5, "compare": 1}
    assert printed["dry_run_metrics"] == ["bias", "helpfulness"]
    cases = {case["row_id"]: case for case in printed["result"]["cases"]}
    assert cases["ord-missing"]["verdict"] == "likely_regression"
    assert cases["ord-missing"]["p_value"] == pytest.approx(0.05)
    assert printed["result"]["candidate_overall"]["interval"]["lower"] == pytest.approx(
        0.340, abs=1e-3
    )
    assert {drift["category"] for drift in printed["result"]["failure_drift"]} >= {"target_error"}
    pinned = runner.invoke(
        main, ["compare", str(example_copy), "--baseline", "f7b15", "--candidate", "f7ee3"]
    )
    assert pinned.exit_code == 0  # the other way round: an improvement, nothing flagged
    # the p of the rise 0/3 → 3/3, not of a drop (which would be 1.000)
    assert "ord-missing          0/3        3/3  +100.0  0.050  worth_watching" in (
        pinned.stdout.splitlines()
    )

    out = tmp_path / "report"
    written = runner.invoke(main, ["report", str(example_copy), "--out", str(out)])
    assert written.exit_code == 0, written.output
    results = json.loads((out / "eval-results.json").read_text())
    assert results["outcome"] == printed["outcome"]  # one outcome object in both
    assert results["workflow_hash"].startswith("f7b1504dcb09")
    assert results["comparison"]["baseline_hash"].startswith("f7ee35b359b4")
    verdicts = {c["row_id"]: c["verdict"] for c in results["comparison"]["result"]["cases"]}
    assert verdicts["ord-missing"] == verdicts["returns-policy"] == "likely_regression"
    assert results["comparison"]["result"]["verdict_counts"]["likely_regression"] == 2
    assert "| ord-missing | 3/3 | 0/3 |" in (out / "eval-pr-comment.md").read_text()
    assert "51.9%" in (out / "report.html").read_text()
    assert (
        "they decide no run: the pass rate is tool_correctness, tool_permission, "
        "no_refund_promise's."
    ) in (out / "report.html").read_text()
    # The gate (failOn: likely_regression) fails, and the report says so: run exited 5.
    comment, page = (out / "eval-pr-comment.md").read_text(), (out / "report.html").read_text()
    gate = "The gate fails on 2 cases: this benchmark fails on likely_regression"
    assert gate in comment and gate in page
    assert "No regression" not in comment + page
    # The report `run` wrote (the Dagster asset) and the one `report` wrote (the CLI's
    # runner) both set the baseline's stored runs, outputs included, beside the candidate's.
    written = cli_home / "reports" / "support_agent" / "f7b1504dcb09" / "eval-results.json"
    for stored in (results, json.loads(written.read_text())):
        case = next(c for c in stored["cases"] if c["row_id"] == "ord-missing")
        assert (case["baseline_passed"], len(case["baseline_runs"]), case["passed"]) == (3, 3, 0)
        assert all(run["output"]["text"] for run in case["baseline_runs"])
        assert case["baseline_runs"][0]["output"] != case["runs"][0]["output"]
        causes = [(c["name"], c["candidate_failed"], c["baseline_failed"]) for c in case["causes"]]
        assert ("tool_correctness", 3, 0) in causes


def test_ui_refuses_an_invalid_benchmark_it_is_named_before_starting_anything(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("N8N_DEEPEVAL_HOME", str(tmp_path / "home"))
    bad = tmp_path / "benchmark.yaml"
    bad.write_text("name: 1\n")
    result = CliRunner().invoke(main, ["ui", str(bad)])
    assert result.exit_code == 2
    assert f"{bad}: invalid benchmark\n  - name: Input should be a valid string" in result.output
    assert not (tmp_path / "home").exists()  # no instance made, no Dagster started


@pytest.mark.parametrize("key", [None, "n8n_api_key"], ids=["url only", "url and key"])
def test_init_on_a_mistyped_path_says_the_file_is_not_there(monkeypatch, tmp_path, key):
    """With N8N_API_URL set, a path that is no file was read as an id: "set N8N_API_URL"."""
    monkeypatch.setenv("N8N_API_URL", "http://127.0.0.1:9")
    if key is None:
        monkeypatch.delenv("N8N_API_KEY", raising=False)
    else:
        monkeypatch.setenv("N8N_API_KEY", key)
    mistyped = str(EXAMPLE / "workflow.jsn")
    done = CliRunner().invoke(main, ["init", mistyped, "--out", str(tmp_path / "b.yaml")])
    assert (done.exit_code, done.stderr) == (1, f"Error: {mistyped}: no such workflow file\n")
    monkeypatch.delenv("N8N_API_KEY", raising=False)
    by_id = CliRunner().invoke(main, ["init", "Vw1t9kXq2Lr3"])  # an id: n8n is needed
    assert (by_id.exit_code, by_id.stderr) == (1, "Error: set N8N_API_KEY to read from n8n\n")


def test_ui_refuses_two_benchmarks_of_one_name_before_starting_anything(tmp_path, monkeypatch):
    monkeypatch.setenv("N8N_DEEPEVAL_HOME", str(tmp_path / "home"))
    copies = []
    for folder in ("first", "second"):  # the same benchmark name in two files
        shutil.copytree(EXAMPLE, tmp_path / folder)
        copies.append(tmp_path / folder / "benchmark.yaml")
    result = CliRunner().invoke(main, ["ui", *map(str, copies)])
    assert result.exit_code == 2  # before: "Dagster UI at …" over a broken code location
    assert result.stderr == (
        f"Error: {copies[1]}: benchmark name 'support_agent' is already used by {copies[0]}\n"
    )
    assert not (tmp_path / "home").exists()
    # and so for the files it finds itself
    monkeypatch.setenv("N8N_DEEPEVAL_BENCHMARKS", str(tmp_path))
    found = CliRunner().invoke(main, ["ui"])
    assert (found.exit_code, found.stderr) == (2, result.stderr)
