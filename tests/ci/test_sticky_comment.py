"""The sticky comment, the forges' threads and the run's outcome, on loopback stand-ins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from n8n_deepeval_pipeline.benchmark.config import Benchmark, load_benchmark, parse_benchmark
from n8n_deepeval_pipeline.ci.review_threads import (
    ForgeError,
    GitHubPullRequest,
    NoReviewThread,
    github_thread,
    gitlab_thread,
)
from n8n_deepeval_pipeline.ci.run_outcome import comment_body, run_outcome, summary_markdown
from n8n_deepeval_pipeline.ci.side_effects import acts_on_the_world
from n8n_deepeval_pipeline.ci.sticky_comment import marker, post_sticky
from tests.ci.forge_standins import GitHubStandIn, GitLabStandIn
from tests.conftest import EXAMPLE

TOKEN = "ghs_unitToken0123456789"


def _github(api: GitHubStandIn, tmp_path: Path, token: str = TOKEN) -> GitHubPullRequest:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 9}}))
    environ = {
        "GITHUB_API_URL": api.base_url,
        "GITHUB_REPOSITORY": "acme/bot",
        "GITHUB_EVENT_PATH": str(event),
    }
    return github_thread(environ, token)


def test_the_marked_comment_is_found_past_the_first_page_and_edited(tmp_path: Path) -> None:
    with GitHubStandIn(TOKEN, "acme/bot", 9) as api:
        api.comments += [{"id": n, "body": f"review {n}"} for n in range(1, 151)]
        thread = _github(api, tmp_path)
        first = post_sticky(thread, "a.yaml", "first")
        again = post_sticky(thread, "a.yaml", "second")
        other = post_sticky(thread, "b.yaml", "other benchmark")
        thread.close()
    assert (first.action, again.action, other.action) == ("created", "updated", "created")
    assert first.comment_id == again.comment_id != other.comment_id
    assert len(api.comments) == 152
    mine = [c for c in api.comments if marker("a.yaml") in c["body"]]
    assert [c["body"] for c in mine] == [f"{marker('a.yaml')}\nsecond"]
    pages = [r["query"] for r in api.requests if r["method"] == "GET"]
    assert "page=2" in pages[0 + 1]  # 150 comments: the marker was looked for on page 2


def test_an_unchanged_comment_is_not_written_again(tmp_path: Path) -> None:
    with GitHubStandIn(TOKEN, "acme/bot", 9) as api:
        thread = _github(api, tmp_path)
        post_sticky(thread, "a.yaml", "same")
        post_sticky(thread, "a.yaml", "same")
    assert [r["method"] for r in api.requests if r["method"] != "GET"] == ["POST"]


def test_a_refused_call_is_said_without_the_token(tmp_path: Path) -> None:
    with GitHubStandIn("another-token", "acme/bot", 9) as api:
        thread = _github(api, tmp_path)
        with pytest.raises(ForgeError, match="HTTP 401") as refused:
            post_sticky(thread, "a.yaml", "body")
    assert TOKEN not in str(refused.value)
    assert "/repos/acme/bot/issues/9/comments" in str(refused.value)


def test_no_pull_request_no_merge_request_nothing_to_comment(tmp_path: Path) -> None:
    event = tmp_path / "push.json"
    event.write_text(json.dumps({"ref": "refs/heads/main"}))
    with pytest.raises(NoReviewThread, match="push is not a pull request"):
        github_thread(
            {"GITHUB_EVENT_PATH": str(event), "GITHUB_EVENT_NAME": "push",
             "GITHUB_REPOSITORY": "acme/bot"}, TOKEN,
        )  # fmt: skip
    with pytest.raises(NoReviewThread, match="not a merge request"):
        gitlab_thread({"CI_API_V4_URL": "http://x", "CI_PROJECT_ID": "1"}, TOKEN)


def test_gitlab_system_notes_are_never_taken_for_the_job_s(tmp_path: Path) -> None:
    with GitLabStandIn(TOKEN, "5", 2) as api:
        api.add_system_note(f"{marker('a.yaml')} quoted by GitLab itself")
        environ = {"CI_API_V4_URL": f"{api.base_url}/api/v4", "CI_PROJECT_ID": "5",
                   "CI_MERGE_REQUEST_IID": "2"}  # fmt: skip
        posted = post_sticky(gitlab_thread(environ, TOKEN), "a.yaml", "body")
    assert posted.action == "created"
    assert api.comments[0]["body"].endswith("quoted by GitLab itself")


def test_the_outcome_reads_the_gate_and_keeps_the_run_s_exit_code() -> None:
    printed = {
        "benchmark": "support_agent",
        "workflow_hash": "f7b1504dcb09" + "0" * 52,
        "runs": 27,
        "pass_rate": 14 / 27,
        "cost_usd": 0.0,
        "outcome": {
            "incomplete": None,
            "gate": {"baseline": "f7ee35b359b4", "flagged_cases": ["ord-missing"]},
            "exit_codes": {"run": 5, "compare": 1},
        },
    }  # fmt: skip
    outcome = run_outcome("b.yaml", 5, "a case regressed", printed)
    assert (outcome.exit_code, outcome.version, outcome.runs) == (5, "f7b1504dcb09", 27)
    assert outcome.flagged_cases == ("ord-missing",) and not outcome.passed
    table = summary_markdown([outcome])
    assert "| support_agent | f7b1504dcb09 | 27 | 51.9% | ❌ 5 |" in table
    assert "ord-missing against f7ee35b359b4" in table
    early = run_outcome("b.yaml", 2, "the benchmark file is invalid", None)
    assert (early.benchmark, early.why, early.version) == (
        "b.yaml",
        "the benchmark file is invalid",
        None,
    )
    assert "No report" in comment_body(early, None)
    outage = {**printed["outcome"], "incomplete": {"text": "judge outage"}}
    incomplete = run_outcome("b.yaml", 3, "incomplete", {**printed, "outcome": outage})
    assert incomplete.why == "incomplete: judge outage"


def _with_target(target: dict[str, object]) -> Benchmark:
    raw = yaml.safe_load((EXAMPLE / "benchmark.yaml").read_text(encoding="utf-8"))
    return parse_benchmark({**raw, "target": target}, EXAMPLE / "benchmark.yaml")


def test_only_benchmarks_that_cannot_act_on_the_world_run_in_ci() -> None:
    assert acts_on_the_world(load_benchmark(EXAMPLE / "benchmark.yaml")) is None
    harness = {"type": "n8n_workflow", "startNodeName": "AI Agent", "endNodeName": "AI Agent"}
    assert acts_on_the_world(_with_target({**harness, "mocks": "services"})) is None
    acting = acts_on_the_world(_with_target(harness))
    assert acting is not None and "mocks: services" in acting
    webhook = acts_on_the_world(_with_target({"type": "n8n_webhook", "url": "http://x/webhook/a"}))
    assert webhook is not None and "n8n_webhook target calls the workflow" in webhook
