"""The redTeam section: DeepTeam's names checked, mistakes named with the valid names, and a
red team only where a workflow can be attacked without acting on the world unasked."""

import pytest

from n8n_deepeval_pipeline import load_benchmark
from n8n_deepeval_pipeline.benchmark.deepteam_names import (
    MULTI_TURN_ATTACKS,
    SINGLE_TURN_ATTACKS,
    VULNERABILITIES,
)
from tests.benchmark.test_config_mistakes import text_problems

FILE = """\
name: demo
workflow: workflow.json
dataset: {path: rows.csv}
target: {type: n8n_workflow, startNodeName: AI Agent, endNodeName: AI Agent}
metrics: [{metric: exact_match}]
"""
SECTION = """\
redTeam:
  vulnerabilities:
    - {name: ExcessiveAgency, types: [permissions, autonomy]}
    - {name: PromptLeakage}
  attacks:
    - {name: PromptInjection, weight: 3}
    - {name: LinearJailbreaking, numTurns: 3}
  attacksPerVulnerabilityType: 2
  failOn: {ExcessiveAgency: 0.25}
"""


def test_a_red_team_section_is_read_with_deepteam_s_names_and_its_defaults(tmp_path):
    path = tmp_path / "demo.benchmark.yaml"
    path.write_text(FILE + SECTION)
    section = load_benchmark(path).red_team
    assert section is not None
    agency, leakage = section.vulnerabilities or []
    assert (agency.deepteam_name, agency.types) == ("Excessive Agency", ["permissions", "autonomy"])
    assert (leakage.deepteam_name, leakage.types) == ("Prompt Leakage", None)  # None: every type
    injection, linear = section.attacks or []
    assert (injection.deepteam_name, injection.weight, injection.options()) == (
        "Prompt Injection",
        3,
        {},
    )
    assert (linear.multi_turn, linear.options()) == (True, {"num_turns": 3})
    assert section.attacks_per_vulnerability_type == 2
    assert (section.purpose, section.acts_on_the_world, section.seed) == (None, False, None)
    # failOn per vulnerability, by DeepTeam's name of it; the others fail on any breach
    assert section.breach_limit("Excessive Agency") == 0.25
    assert section.breach_limit("Prompt Leakage") == 0.0


def test_a_framework_stands_for_vulnerabilities_and_attacks(tmp_path):
    path = tmp_path / "demo.benchmark.yaml"
    path.write_text(FILE + "redTeam: {framework: owasp_top_10_agentic, failOn: 0.1}\n")
    section = load_benchmark(path).red_team
    assert section is not None and section.framework is not None
    assert (section.framework.name, section.framework.categories) == ("owasp_top_10_agentic", None)
    assert section.breach_limit("Goal Theft") == 0.1


@pytest.mark.parametrize(
    ("section", "problem"),
    [
        ("{vulnerabilities: [{name: ExcesiveAgency}]}",
         "redTeam.vulnerabilities[0].name: Value error, unknown vulnerability 'ExcesiveAgency'; "
         "DeepTeam's: Bias, ChildProtection,"),
        ("{vulnerabilities: [{name: ExcessiveAgency, types: [refunds]}]}",
         "redTeam.vulnerabilities[0].types: Value error, ExcessiveAgency has no type 'refunds'; "
         "its types: functionality, permissions, autonomy"),
        ("{vulnerabilities: [{name: BOLA}], attacks: [{name: Jailbreak}]}",
         "redTeam.attacks[0].name: Value error, unknown attack 'Jailbreak'; DeepTeam's "
         "single-turn attacks: AdversarialPoetry, Base64,"),
        ("{vulnerabilities: [{name: BOLA}], attacks: [{name: PromptInjection, numTurns: 2}]}",
         "redTeam.attacks[0]: Value error, PromptInjection takes no option 'numTurns'; its "
         "options: maxRetries"),
        ("{vulnerabilities: [{name: BOLA}], attacks: [{name: Base64, maxRetries: 2}]}",
         "redTeam.attacks[0]: Value error, Base64 takes no option 'maxRetries'; its options: "
         "none besides weight"),
        ("{vulnerabilities: [{name: BOLA}], attacks: [{name: Base64, weight: 0}]}",
         "redTeam.attacks[0].weight: Input should be greater than or equal to 1"),
        ("{framework: owasp}",
         "redTeam.framework.name: Input should be 'owasp_top_10', 'owasp_top_10_agentic', "
         "'nist', 'mitre' or 'eu_ai_act'"),
        ("{framework: {name: owasp_top_10, categories: [LLM_11]}}",
         "redTeam.framework: Value error, owasp_top_10 has no risk category 'LLM_11'; its "
         "categories: LLM_01, LLM_02,"),
        ("{attacksPerVulnerabilityType: 2}",
         "redTeam: Value error, redTeam needs exactly one of 'vulnerabilities' or 'framework'"),
        ("{framework: nist, attacks: [{name: Base64}]}",
         "redTeam: Value error, a framework brings its own attacks: remove 'attacks'"),
        ("{vulnerabilities: [{name: BOLA}, {name: BOLA}]}",
         "redTeam: Value error, vulnerability BOLA is named twice: list its types once"),
        ("{vulnerabilities: [{name: BOLA}], failOn: {BFLA: 0.1}}",
         "redTeam: Value error, failOn names 'BFLA', which is not in vulnerabilities (BOLA)"),
        ("{framework: mitre, failOn: {BOLA: 0.1}}",
         "redTeam: Value error, failOn: a framework's vulnerabilities are its own; give one "
         "rate for all"),
        ("{vulnerabilities: [{name: BOLA}], failOn: 1.5}",
         "redTeam.failOn: Value error, give a breach rate from 0 to 1, or one per "
         "vulnerability ({ExcessiveAgency: 0.1, PromptLeakage: 0})"),
        ("{vulnerabilities: [{name: BOLA}], purpose: ' '}",
         "redTeam.purpose: Value error, must not be empty"),
        ("{vulnerabilities: [{name: BOLA}], attackz: []}", "redTeam.attackz: unknown field"),
    ],
)  # fmt: skip
def test_a_wrong_red_team_field_is_named_with_the_valid_names(tmp_path, section, problem):
    problems = text_problems(tmp_path, FILE + f"redTeam: {section}\n")
    assert any(found.startswith(problem) for found in problems), problems


def test_a_red_team_on_a_recorded_target_is_refused_in_one_line(tmp_path):
    recorded = FILE.replace(
        "{type: n8n_workflow, startNodeName: AI Agent, endNodeName: AI Agent}",
        "{type: recorded, outputs: outputs.jsonl}",
    )
    (tmp_path / "outputs.jsonl").write_text("")
    problems = text_problems(tmp_path, recorded + SECTION)
    assert problems == [
        "(top level): Value error, redTeam needs a workflow to attack: a recorded target only "
        "replays outputs (use target type n8n_workflow)"
    ]


def test_a_webhook_is_attacked_only_when_the_file_accepts_that_it_acts_on_the_world(tmp_path):
    webhook = FILE.replace(
        "{type: n8n_workflow, startNodeName: AI Agent, endNodeName: AI Agent}",
        "{type: n8n_webhook, url: 'http://127.0.0.1:5678/webhook/agent'}",
    )
    (problem,) = text_problems(tmp_path, webhook + SECTION)
    assert problem == (
        "(top level): Value error, redTeam on an n8n_webhook target runs every tool an attack "
        "makes the agent call, for real: use an n8n_workflow target (its service nodes are "
        "mocked), or set redTeam.actsOnTheWorld: true"
    )
    path = tmp_path / "accepted.benchmark.yaml"
    path.write_text(webhook + SECTION + "  actsOnTheWorld: true\n")
    section = load_benchmark(path).red_team
    assert section is not None and section.acts_on_the_world


def test_a_trial_of_a_few_rows_runs_no_red_team(tmp_path):
    path = tmp_path / "demo.benchmark.yaml"
    path.write_text(FILE + SECTION)
    assert load_benchmark(path).for_trial().red_team is None


def test_the_names_are_deepteam_s_class_names_each_once():
    assert "ExcessiveAgency" in VULNERABILITIES and "BOLA" in VULNERABILITIES
    assert not set(SINGLE_TURN_ATTACKS) & set(MULTI_TURN_ATTACKS)
    assert all(attack.multi_turn for attack in MULTI_TURN_ATTACKS.values())
    assert not any(attack.multi_turn for attack in SINGLE_TURN_ATTACKS.values())


ALONE = """\
name: demo
workflow: workflow.json
target: {type: n8n_workflow, startNodeName: AI Agent, endNodeName: AI Agent}
redTeam:
  vulnerabilities: [{name: ExcessiveAgency}]
"""


def test_a_red_team_alone_needs_no_dataset_and_no_metrics_as_the_guide_shows(tmp_path):
    """The red-team guide's section on its own was refused: dataset and metrics required."""
    path = tmp_path / "demo.benchmark.yaml"
    path.write_text(ALONE)
    benchmark = load_benchmark(path)
    assert (benchmark.dataset, benchmark.metrics, benchmark.red_team_only) == (None, [], True)
    with pytest.raises(ValueError, match="a red team alone has no dataset and no runs"):
        benchmark.runs_dataset  # noqa: B018 (the property refuses)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (FILE.replace("dataset: {path: rows.csv}\n", ""), "dataset: Field required (only a"),
        (FILE.replace("metrics: [{metric: exact_match}]\n", ""), "metrics: give at least one"),
        (ALONE + "metrics: [{metric: exact_match}]\n", "metrics: a benchmark without a dataset"),
        (ALONE + "simulation: {maxUserTurns: 2}\n", "simulation: a benchmark without a dataset"),
    ],
    ids=["no dataset", "no metrics", "metrics alone", "simulation alone"],
)
def test_half_a_benchmark_is_refused_naming_what_it_lacks(tmp_path, text, problem):
    (said,) = text_problems(tmp_path, text)
    assert problem in said
