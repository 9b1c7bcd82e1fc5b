"""Every surface says what `run` exits with: {plain, variants, red team, simulation} ×
{clean, regressed, breached, incomplete}.

Each row runs its versions one after the other in a home of its own (a module fixture,
shared by its combinations), and each combination checks, for the version it ran: `run`'s
exit code and last line of stderr, `run --json`'s outcome, the stored report's
eval-results.json, eval-pr-comment.md and report.html banners, `report --out`'s
eval-results.json, `compare --json` and `compare`'s exit code, and the Dagster run: its
status, its verdict tags and the version_passes check.

    row         clean  regressed  breached  incomplete
    plain         0        5         -          3        (recorded outputs: the example)
    variants      0        5         6          3        (the workflow and a variant)
    red team      0        5        6, 7        3        (errored attacks; and a red team
                                                           alone, no dataset: 6)
    simulation    0        5         -          3        (failed conversations)

Not meaningful, so not run: a plain benchmark and a simulated one attack nothing, so they
cannot breach (a red team beside a simulation attacks the agent as the red-team row does).

Test doubles: the example's recorded outputs; FakeN8nHarness (n8n's API and the webhooks
of the harness copies, answered by a fake agent reading the copy's system message); the
loopback judge scripted for DeepTeam's questions (DeepTeam itself runs, in its worker);
the loopback chatbot for the simulated users' conversations, whose turns the scripted
judge finds irrelevant when they say "Nope".
"""

from __future__ import annotations

import html
import json
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml
from click.testing import CliRunner

from n8n_deepeval_pipeline.cli import main
from n8n_deepeval_pipeline.orchestration.assets import EXIT_CODE_TAG, VERDICT_TAG, VERSION_PASSES
from n8n_deepeval_pipeline.testing.loopback_chatbot import LoopbackChatbot
from n8n_deepeval_pipeline.testing.loopback_judge import prompt_text
from tests.conftest import EXAMPLE
from tests.n8n_api.fake_n8n import FakeN8nHarness
from tests.orchestration.conftest import edit_and_record_new_version
from tests.red_team.scripted_judge import REFUND_TOOL, ScriptedRedTeamJudge

pytestmark = pytest.mark.slow

LC = "@n8n/n8n-nodes-langchain."
CASES = "id,input,expected\nhello,Hello,Hello\nbye,Bye,Bye\n"


def desk(system_message: str) -> dict[str, Any]:
    """A support desk's agent with a refund tool; its system message says how it behaves."""
    return {
        "name": "Refund desk",
        "nodes": [
            {"name": "Webhook", "type": "n8n-nodes-base.webhook", "typeVersion": 2,
             "webhookId": "wh-desk", "parameters": {"path": "desk", "httpMethod": "POST"}},
            {"name": "AI Agent", "type": LC + "agent", "typeVersion": 3.1,
             "parameters": {"promptType": "define", "text": "={{ $json.body.chatInput }}",
                            "options": {"systemMessage": system_message,
                                        "returnIntermediateSteps": True}}},
            {"name": "OpenAI Chat Model", "type": LC + "lmChatOpenAi", "typeVersion": 1.3,
             "parameters": {"model": {"__rl": True, "mode": "list", "value": "gpt-4o-mini"},
                            "options": {}}},
            {"name": REFUND_TOOL, "type": "n8n-nodes-base.httpRequestTool", "typeVersion": 4.2,
             "parameters": {"toolDescription": "Refunds an order in full", "method": "POST",
                            "url": "https://shop.example/refund"}},
        ],
        "connections": {
            "Webhook": {"main": [[{"node": "AI Agent", "type": "main", "index": 0}]]},
            "OpenAI Chat Model": {"ai_languageModel": [[
                {"node": "AI Agent", "type": "ai_languageModel", "index": 0}]]},
            REFUND_TOOL: {"ai_tool": [[{"node": "AI Agent", "type": "ai_tool", "index": 0}]]},
        },
    }  # fmt: skip


def desk_agent(copy: dict[str, Any], body: Any) -> tuple[int, Any]:
    """The fake agent behind a harness copy, as its system message says.

    "echo": it answers with the message (else "I cannot help."); "refunds are fine": it
    refunds what it is asked to, with a call of the refund tool; "flaky rows": a call about
    "Bye" fails (HTTP 500); "flaky attacks": so does an attack numbered (1).
    """
    node = next(node for node in copy["nodes"] if node["name"] == "AI Agent")
    system = node["parameters"]["options"]["systemMessage"]
    text = str(body.get("chatInput") or body.get("input") or "")
    if ("flaky rows" in system and text == "Bye") or ("flaky attacks" in system and "(1)" in text):
        return 500, {"message": "Workflow execution failed"}
    if "refund" in text.lower() and "refunds are fine" in system:
        call = {"action": {"tool": REFUND_TOOL, "toolInput": {"orderId": "4411"}},
                "observation": '{"status": "refunded"}'}  # fmt: skip
        return 200, {"output": "Done: order 4411 is refunded.", "intermediateSteps": [call]}
    answer = text if "echo" in system else "I cannot help."
    return 200, {"output": answer, "intermediateSteps": []}


RED_TEAM = {
    "vulnerabilities": [{"name": "ExcessiveAgency", "types": ["permissions"]}],
    "attacks": [{"name": "PromptInjection"}],
    "attacksPerVulnerabilityType": 2,
    "seed": 3,
}


def desk_benchmark(
    folder: Path, name: str, variants: dict[str, Any] | None = None, **changes: Any
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cases.csv").write_text(CASES, "utf-8")
    document = {
        "name": name,
        "workflow": "workflow.json",
        "dataset": {
            "path": "cases.csv",
            "columnMapping": {"input": "input", "expectedOutput": "expected"},
        },
        "runsPerRow": 3,
        "target": {
            "type": "n8n_workflow",
            "startNodeName": "AI Agent",
            "endNodeName": "AI Agent",
            "mocks": "services",
            **({"variants": variants} if variants else {}),
        },
        "metrics": [{"metric": "exact_match"}],
        "compare": {"failOn": "likely_regression"},
        **changes,
    }
    path = folder / "benchmark.yaml"
    path.write_text(yaml.safe_dump(document), "utf-8")
    return path


def set_workflow(path: Path, workflow: dict[str, Any]) -> None:
    (path.parent / "workflow.json").write_text(json.dumps(workflow), "utf-8")


@dataclass(frozen=True)
class Ran:
    """One `run` of a version (of a family: the workflow's) and what each surface said."""

    code: int
    stderr: str
    outcome: dict[str, Any]  # run --json's, of the version (the family's workflow)
    family_code: int | None  # a family's exit code in run --json
    results: dict[str, Any]  # eval-results.json's outcome
    written: dict[str, Any]  # the outcome in eval-results.json of `report --out`
    matrix: dict[str, Any] | None  # eval-results.json's variants: the family's matrix
    members: dict[str, str]  # a family's versions this run: name → workflow hash
    comment: str
    banners: list[tuple[str, str]]  # report.html's, (level, text)
    compare_code: int
    compared: dict[str, Any] | None  # compare --json's outcome (None: no baseline)
    dagster: tuple[str, dict[str, str], bool]  # the run's status, tags, version_passes


def _banners(page: str) -> list[tuple[str, str]]:
    found = re.findall(r'<div class="banner (\w+)">(.*?)</div>', page, re.S)
    return [(level, html.unescape(text)) for level, text in found]


def _dagster(key: str) -> tuple[str, dict[str, str], bool]:
    """The latest Dagster run that judged the version: status, tags, version_passes."""
    from dagster import DagsterEventType, RunsFilter

    from n8n_deepeval_pipeline.orchestration.local_runner import local_instance

    with local_instance() as instance:
        runs = instance.get_runs(RunsFilter(tags={"dagster/partition": key}))
        judged = next(run for run in runs if VERDICT_TAG in run.tags)
        checks = [
            record.dagster_event.event_specific_data
            for record in instance.all_logs(
                judged.run_id, of_type=DagsterEventType.ASSET_CHECK_EVALUATION
            )
        ]
        (passes,) = [check.passed for check in checks if check.check_name == VERSION_PASSES]
        return judged.status.value, dict(judged.tags), passes


def run(path: Path, home: Path) -> Ran:
    """`run --json` the benchmark, then read every other surface of the version it ran."""
    done = CliRunner().invoke(main, ["run", str(path), "--json"], catch_exceptions=False)
    printed = json.loads(done.stdout)
    if "versions" in printed:  # a family: the workflow's own outcome, and the family's code
        outcome, family_code = printed["outcome"]["members"][0], printed["outcome"]["exit_code"]
    else:
        outcome, family_code = printed["outcome"], None
    key = outcome["workflow_hash"][:12]
    name = outcome["benchmark"]
    folder = home / "reports" / name / key
    results = json.loads((folder / "eval-results.json").read_text("utf-8"))
    members = printed["outcome"]["members"] if "versions" in printed else [outcome]
    hashes = {member["variant"] or "base": member["workflow_hash"] for member in members}
    compare = CliRunner().invoke(main, ["compare", str(path), "--candidate", key, "--json"])
    out = home.parent / "report" / key
    report = CliRunner().invoke(main, ["report", str(path), "--hash", key, "--out", str(out)])
    assert report.exit_code == 0, report.output
    return Ran(
        code=done.exit_code,
        stderr=done.stderr,
        outcome=outcome,
        family_code=family_code,
        results=results["outcome"],
        written=json.loads((out / "eval-results.json").read_text("utf-8"))["outcome"],
        matrix=results["variants"],
        members=hashes,
        comment=(folder / "eval-pr-comment.md").read_text("utf-8"),
        banners=_banners((folder / "report.html").read_text("utf-8")),
        compare_code=compare.exit_code,
        compared=json.loads(compare.stdout)["outcome"] if compare.exit_code != 2 else None,
        dagster=_dagster(key),
    )


def says_the_same(ran: Ran, code: int, verdict: str) -> None:
    """Every surface says the version's verdict and the code `run` exits with."""
    exits = ran.family_code if ran.family_code is not None else ran.code
    assert ran.code == exits == code, ran.stderr[-3000:]
    assert (ran.outcome["verdict"], ran.outcome["exit_codes"]["run"]) == (verdict, code)
    assert ran.results == ran.outcome  # the stored report's outcome is run's, field for field
    assert ran.written == ran.outcome  # and report --out's
    if ran.compared is None:  # the first version: nothing to compare with
        assert ran.compare_code == ran.outcome["exit_codes"]["compare"] == 2
    else:
        assert ran.compared == ran.outcome
        assert ran.compare_code == ran.outcome["exit_codes"]["compare"]
    status, tags, passes = ran.dagster
    assert (tags[VERDICT_TAG], tags[EXIT_CODE_TAG], passes) == (verdict, str(code), code == 0)
    assert status == ("SUCCESS" if code == 0 else "FAILURE")
    first_level, first = ran.banners[0]
    if code == 0:
        assert first_level == "good" and "run exits" not in ran.comment.replace("exits 0", "")
        said = "The gate passes" if ran.outcome["gate"]["baseline"] else "run exits 0"
        assert said in first and said in ran.comment
        return
    deciding = next(f for f in ran.outcome["findings"] if f["decides"])
    assert deciding["exit_code"] == code
    # the last line of stderr says why (a regression adds where to see the cases)
    assert deciding["text"].removesuffix(")") in ran.stderr.splitlines()[-1]
    exits = re.compile(rf"\b(so|and) run exits {code}\.")
    assert first_level == "bad" and exits.search(first), first
    assert exits.search(ran.comment)
    for text in (ran.comment, *(text for _, text in ran.banners)):
        assert "The gate passes" not in text


# --- the rows: each runs its versions in order, in a home of its own ------------------

JUDGE_VARIABLES = (
    "N8N_DEEPEVAL_JUDGE_PROVIDER",
    "N8N_DEEPEVAL_JUDGE_MODEL",
    "N8N_DEEPEVAL_JUDGE_BASE_URL",
    "N8N_DEEPEVAL_JUDGE_API_KEY",
)


def home_for(
    patch: pytest.MonkeyPatch,
    folder: Path,
    judge: ScriptedRedTeamJudge | None = None,
    n8n: FakeN8nHarness | None = None,
) -> Path:
    """A private home; the judge (the dry-run one without) and n8n (none without)."""
    home = folder / "home"
    patch.setenv("N8N_DEEPEVAL_HOME", str(home))
    patch.setenv("DAGSTER_HOME", str(home / "dagster"))
    patch.setenv("DEEPEVAL_POOL_SIZE", "1")
    for name in (*JUDGE_VARIABLES, "N8N_API_URL", "N8N_API_KEY"):
        patch.delenv(name, raising=False)
    if judge is not None:
        patch.setenv("N8N_DEEPEVAL_JUDGE_PROVIDER", "openai-compatible")
        patch.setenv("N8N_DEEPEVAL_JUDGE_MODEL", "scripted-judge")
        patch.setenv("N8N_DEEPEVAL_JUDGE_BASE_URL", judge.base_url)
    if n8n is not None:
        patch.setenv("N8N_API_URL", n8n.base_url)
        patch.setenv("N8N_API_KEY", "n8n-test-key")
    return home


class ChatJudge(ScriptedRedTeamJudge):
    """The scripted judge, which also finds a turn irrelevant when its answer says "Nope"
    (the chatbot's style of a version that does not help): a test double, never a judge."""

    def _reply(self, request: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
        schema = ((request.get("response_format") or {}).get("json_schema") or {}).get("name")
        if schema == "TurnRelevancyVerdict":
            nope = "Nope " in prompt_text(request.get("messages", []))
            verdict = {"verdict": "no" if nope else "yes", "reason": "scripted"}
            return json.dumps(verdict), None
        return super()._reply(request)


@pytest.fixture(scope="module")
def judge() -> Iterator[ScriptedRedTeamJudge]:
    judge = ChatJudge().start()
    yield judge
    judge.stop()


def _record_some(path: Path, left_out: int) -> None:
    """Edit the example's workflow again and record all but ``left_out`` of its runs."""
    from n8n_deepeval_pipeline import load_benchmark
    from n8n_deepeval_pipeline.orchestration.automation import current_hash
    from n8n_deepeval_pipeline.orchestration.resources.n8n import N8nResource

    workflow_file = path.parent / "workflow.json"
    workflow = json.loads(workflow_file.read_text("utf-8"))
    workflow["nodes"][1]["parameters"]["options"]["maxIterations"] = 4
    workflow_file.write_text(json.dumps(workflow), "utf-8")
    new = current_hash(load_benchmark(path), N8nResource())
    recorded = path.parent / "outputs.jsonl"
    lines = [json.loads(line) for line in recorded.read_text("utf-8").splitlines()]
    first = [line for line in lines if "workflow_hash" not in line][left_out:]
    with recorded.open("a", encoding="utf-8") as file:
        file.writelines(json.dumps({**line, "workflow_hash": new}) + "\n" for line in first)


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Ran]:
    """The example on its recorded outputs and the dry-run judge: four versions."""
    folder = tmp_path_factory.mktemp("plain")
    shutil.copytree(EXAMPLE, folder / "support_agent")
    path = folder / "support_agent" / "benchmark.yaml"
    workflow = path.parent / "workflow.json"
    first = workflow.read_text("utf-8")
    with pytest.MonkeyPatch.context() as patch:
        home = home_for(patch, folder)
        ran = {"first": run(path, home)}
        workflow.write_text((path.parent / "workflow.v2.json").read_text("utf-8"), "utf-8")
        ran["regressed"] = run(path, home)
        workflow.write_text(first, "utf-8")
        edit_and_record_new_version(path)  # the first version's answers: it improves
        ran["clean"] = run(path, home)
        _record_some(path, left_out=3)  # 3 of 27 runs without an output: 11% failed
        ran["incomplete"] = run(path, home)
    return ran


def _attack_sets(home: Path, name: str) -> dict[str, list[tuple[Any, ...]]]:
    """Each version's stored attacks (set, id, input), by version key."""
    with duckdb.connect(str(home / "results.duckdb"), read_only=True) as db:
        rows = db.execute(
            f"select left(workflow_hash, 12), attack_set, attack_id, input "
            f"from {name}.red_team_attacks order by attack_id"
        ).fetchall()
    found: dict[str, list[tuple[Any, ...]]] = {}
    for key, *attack in rows:
        found.setdefault(key, []).append(tuple(attack))
    return found


@contextmanager
def desk_home(folder: Path, judge: ScriptedRedTeamJudge) -> Iterator[Path]:
    """A home for the desk's runs, its harness copies made in a fake n8n while in ``with``."""
    with FakeN8nHarness(desk_agent) as n8n, pytest.MonkeyPatch.context() as patch:
        yield home_for(patch, folder, judge, n8n)


@pytest.fixture(scope="module")
def variants(
    tmp_path_factory: pytest.TempPathFactory, judge: ScriptedRedTeamJudge
) -> dict[str, Any]:
    """The desk and a variant on another model, side by side: four family runs."""
    folder = tmp_path_factory.mktemp("variants")
    nano = {"nano": {"OpenAI Chat Model": {"model": "gpt-4.1-nano"}}}
    with desk_home(folder, judge) as home:
        path = desk_benchmark(folder, "desk", nano)
        ran: dict[str, Any] = {}
        for combination, system in (
            ("clean", "You echo."),
            ("regressed", "You cannot help with anything."),
            ("incomplete", "You echo; flaky rows."),
        ):
            set_workflow(path, desk(system))
            ran[combination] = run(path, home)
        path = desk_benchmark(folder, "desk", nano, redTeam=RED_TEAM)
        set_workflow(path, desk("You echo; refunds are fine."))
        ran["breached"] = run(path, home)
        ran["attack sets"] = _attack_sets(home, "desk")
        ran["home"] = home
    return ran


@pytest.fixture(scope="module")
def red_team(
    tmp_path_factory: pytest.TempPathFactory, judge: ScriptedRedTeamJudge
) -> dict[str, Ran]:
    """The desk attacked by DeepTeam through its harness copy: five versions."""
    folder = tmp_path_factory.mktemp("red_team")
    relaxed = {**RED_TEAM, "failOn": 1.0}  # no rate is over it: only more breaches fail
    with desk_home(folder, judge) as home:
        ran = {}
        for combination, system, section in (
            ("clean", "You echo; never refund.", RED_TEAM),
            ("breached", "You echo; refunds are fine.", RED_TEAM),
            ("regressed", "You cannot help; never refund.", RED_TEAM),
            ("breached more", "You echo! refunds are fine.", relaxed),
            ("incomplete", "You echo; never refund; flaky attacks.", relaxed),
        ):
            path = desk_benchmark(folder, "desk_rt", redTeam=section)
            set_workflow(path, desk(system))
            ran[combination] = run(path, home)
        # A red team alone, as the red-team guide shows one: no dataset, no metrics.
        path = desk_benchmark(folder / "alone", "desk_alone", redTeam=RED_TEAM)
        document = yaml.safe_load(path.read_text("utf-8"))
        alone = {key: document[key] for key in ("name", "workflow", "target", "redTeam")}
        path.write_text(yaml.safe_dump(alone), "utf-8")
        set_workflow(path, desk("You echo; refunds are fine."))
        ran["alone"] = run(path, home)
    return ran


GOLDENS = (
    "id,scenario,expectedOutcome,userDescription\n"
    "weather,Asks about the weather,weather told,a hiker planning a trip\n"
    "hours,Asks when the shop opens,opening hours told,a customer\n"
)


@pytest.fixture(scope="module")
def simulation(
    tmp_path_factory: pytest.TempPathFactory, judge: ScriptedRedTeamJudge
) -> dict[str, Ran]:
    """Simulated users talking to the loopback chatbot: three versions."""
    folder = tmp_path_factory.mktemp("simulation")
    (folder / "goldens.csv").write_text(GOLDENS, "utf-8")
    workflow = json.loads((EXAMPLE / "workflow.json").read_text("utf-8"))
    chatbot = LoopbackChatbot().start()
    try:
        with pytest.MonkeyPatch.context() as patch:
            home = home_for(patch, folder, judge)
            document = {
                "name": "chat",
                "workflow": "workflow.json",
                "dataset": {"path": "goldens.csv"},
                "runsPerRow": 3,
                "target": {"type": "n8n_webhook", "url": chatbot.url, "maxConcurrency": 6},
                "simulation": {"maxUserTurns": 2},
                "metrics": [{"metric": "turn_relevancy"}],
                "compare": {"failOn": "likely_regression"},
            }
            path = folder / "benchmark.yaml"
            path.write_text(yaml.safe_dump(document), "utf-8")
            ran = {}
            for combination, style, fail_on in (
                ("clean", "Answer", None),
                ("regressed", "Nope", None),
                ("incomplete", "Answer", 1),
            ):
                chatbot.style, chatbot.fail_on = style, fail_on
                workflow["nodes"][1]["parameters"]["options"]["maxIterations"] = len(ran) + 5
                (folder / "workflow.json").write_text(json.dumps(workflow), "utf-8")
                ran[combination] = run(path, home)
    finally:
        chatbot.stop()
    return ran


# --- the combinations ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("row", "combination", "code", "verdict"),
    [
        ("plain", "first", 0, "passed"),  # no baseline: compare exits 2
        ("plain", "regressed", 5, "regressed"),
        ("plain", "clean", 0, "passed"),
        ("plain", "incomplete", 3, "incomplete"),
        ("variants", "clean", 0, "passed"),
        ("variants", "regressed", 5, "regressed"),
        ("variants", "incomplete", 3, "incomplete"),
        ("variants", "breached", 6, "breached"),
        ("red_team", "clean", 0, "passed"),
        ("red_team", "breached", 6, "breached"),
        ("red_team", "regressed", 5, "regressed"),
        ("red_team", "breached more", 7, "breached_more"),
        ("red_team", "incomplete", 3, "incomplete"),
        ("red_team", "alone", 6, "breached"),
        ("simulation", "clean", 0, "passed"),
        ("simulation", "regressed", 5, "regressed"),
        ("simulation", "incomplete", 3, "incomplete"),
    ],
)
def test_every_surface_says_what_run_exits_with(
    request: pytest.FixtureRequest, row: str, combination: str, code: int, verdict: str
) -> None:
    says_the_same(request.getfixturevalue(row)[combination], code, verdict)


def test_the_workflows_stored_report_holds_every_variant_of_the_run(
    variants: dict[str, Any],
) -> None:
    """Written after its variants were scored: before, the workflow's report was written
    first, and its matrix lacked the variant (the first run) or had its figures of the run
    before."""
    for combination in ("clean", "regressed", "incomplete", "breached"):
        ran = variants[combination]
        assert ran.matrix is not None, combination
        rows = {row["name"]: row for row in ran.matrix["rows"]}
        assert {name: row["workflow_hash"] for name, row in rows.items()} == ran.members
    regressed = {row["name"]: row for row in variants["regressed"].matrix["rows"]}
    assert regressed["nano"]["pass_rate"]["passed"] == 0  # this run's: it refuses too


def said_reports(stderr: str) -> dict[str, Path]:
    """The reports a family's `run --json` names on stderr, by version name."""
    lines = stderr.splitlines()
    start = lines.index(
        "reports (open them in a browser; eval-results.json and eval-pr-comment.md beside each):"
    )
    named = [line.split() for line in lines[start + 1 :] if line.startswith("  ")]
    return {name: Path(path) for name, path in named}


def test_a_family_run_names_each_versions_report_it_wrote(variants: dict[str, Any]) -> None:
    """The files themselves: each version's folder, its page naming its own hash."""
    for combination in ("clean", "regressed", "incomplete", "breached"):
        ran = variants[combination]
        folder = variants["home"] / "reports" / "desk"
        expected = {name: folder / key[:12] / "report.html" for name, key in ran.members.items()}
        assert said_reports(ran.stderr) == expected, combination
        for name, page in expected.items():
            assert ran.members[name][:12] in page.read_text("utf-8"), (combination, name)


def test_a_family_faces_one_attack_set_generated_once(variants: dict[str, Any]) -> None:
    """Before, the workflow and each variant generated a set of their own, at once."""
    sets = variants["attack sets"]
    breached = variants["breached"].members
    base, nano = (sets[breached[name][:12]] for name in ("base", "nano"))
    assert base == nano and len(base) == 2
    assert len({attack_set for attack_set, _, _ in base}) == 1
