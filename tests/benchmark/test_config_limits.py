"""Input that hurts: what once spun, grew without bound or ended in a traceback, refused in
one line naming the file, the line or field, and the limit."""

import pytest
import yaml
from click.testing import CliRunner

from n8n_deepeval_pipeline import BenchmarkConfigError
from n8n_deepeval_pipeline.benchmark.n8n_target import MAX_VARIANTS
from n8n_deepeval_pipeline.cli import main
from n8n_deepeval_pipeline.judging.prices import PriceTable
from tests.benchmark.test_config import problems, with_changes
from tests.benchmark.test_config_mistakes import text_problems

HEAD = """\
name: demo
workflow: workflow.json
dataset: {path: rows.csv}
metrics: [{metric: exact_match}]
"""


def laughs(indent: str, levels: int = 9) -> str:
    """Nine aliases of nine aliases …: 9**levels values from a few hundred bytes."""
    lines = [f'{indent}a0: &a0 ["x","x","x","x","x","x","x","x","x"]']
    for level in range(1, levels + 1):
        lines.append(f"{indent}a{level}: &a{level} [" + ",".join([f"*a{level - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_in_the_body_is_refused_before_anything_is_built_from_it(tmp_path):
    text = HEAD + "target:\n  type: n8n_webhook\n  url: http://127.0.0.1:9/hook\n  body:\n"
    assert text_problems(tmp_path, text + laughs("    ")) == [
        "not valid YAML: line 14, column 9: expands to more than 100,000 values through aliases"
    ]


def test_an_alias_bomb_in_a_variant_value_is_refused_too(tmp_path):
    text = HEAD + (
        "target:\n  type: n8n_workflow\n  startNodeName: A\n  endNodeName: A\n"
        "  variants:\n    big:\n      A:\n        options.x:\n"
    )
    (problem,) = text_problems(tmp_path, text + laughs("          "))
    assert problem.endswith(": expands to more than 100,000 values through aliases")


def test_aliases_may_repeat_what_a_file_needs(tmp_path):
    text = HEAD + "description: x\n" + "target: {type: recorded, outputs: o.jsonl}\n"
    path = tmp_path / "demo.benchmark.yaml"
    path.write_text(text + "x-common: &c {a: 1, b: [1, 2, 3]}\nx-more: [*c, *c, *c]\n", "utf-8")
    with pytest.raises(BenchmarkConfigError) as caught:  # unknown fields, but loaded
        from n8n_deepeval_pipeline import load_benchmark

        load_benchmark(path)
    assert all("unknown field" in problem for problem in caught.value.problems)


def test_aliases_that_nest_past_the_limit_are_refused(tmp_path):
    chain = ["x0: &x0 [leaf]"] + [f"x{i}: &x{i} [*x{i - 1}]" for i in range(1, 120)]
    (problem,) = text_problems(tmp_path, HEAD + "\n".join(chain) + "\n")
    assert problem.endswith(": aliases nest it deeper than 100 levels")


def test_a_lone_surrogate_in_the_file_is_refused_with_its_line(tmp_path):
    text = HEAD + 'description: "caf\\ud800"\ntarget: {type: recorded, outputs: o.jsonl}\n'
    assert text_problems(tmp_path, text) == [
        "not valid YAML: line 5, column 14: \\ud800 is half of a UTF-16 surrogate pair, not a "
        "character: write the character itself"
    ]


WORKFLOW_TARGET = {"type": "n8n_workflow", "startNodeName": "A", "endNodeName": "A"}


def test_more_variants_than_a_machine_runs_at_once_are_refused(tmp_path):
    many = {f"v{i}": {"A": {"options.temperature": i / 10}} for i in range(200)}
    assert problems(tmp_path, with_changes(target={**WORKFLOW_TARGET, "variants": many})) == [
        "target.n8n_workflow.variants: Value error, 200 variants: at most 16 run beside the "
        "workflow (each version calls it from a process of its own, all at once); split them "
        "over two benchmark files"
    ]
    enough = dict(list(many.items())[:MAX_VARIANTS])
    target = {**WORKFLOW_TARGET, "variants": enough}
    assert problems(tmp_path, with_changes(target=target, runsPerRow=0))[0].startswith(
        "runsPerRow:"
    )  # the variants themselves are taken


RED_TEAM = {"vulnerabilities": [{"name": "ExcessiveAgency"}]}


@pytest.mark.parametrize(
    ("attack", "problem"),
    [
        (
            {"name": "LinearJailbreaking", "numTurns": 1_000_000_000},
            "redTeam.attacks[0].numTurns: Input should be less than or equal to 50",
        ),
        (
            {"name": "PromptInjection", "weight": 10**30},
            "redTeam.attacks[0].weight: Input should be less than or equal to 100",
        ),
        (
            {"name": "TreeJailbreaking", "maxRuntime": float("inf")},
            "redTeam.attacks[0].maxRuntime: Input should be a finite number",
        ),
        (
            {"name": "TreeJailbreaking", "maxDepth": 10_000},
            "redTeam.attacks[0].maxDepth: Input should be less than or equal to 50",
        ),
    ],
)
def test_attack_counts_have_limits(tmp_path, attack, problem):
    document = with_changes(target=WORKFLOW_TARGET, redTeam={**RED_TEAM, "attacks": [attack]})
    assert problems(tmp_path, document) == [problem]


@pytest.mark.parametrize(
    ("price", "problem"),
    [
        (float("inf"), "Input should be a finite number"),
        (True, "Input should be a valid number"),
        ("0.3", "Input should be a valid number"),
        (1e30, "Input should be less than or equal to 10000"),
    ],
)
def test_a_price_is_a_finite_number_of_sane_size(tmp_path, price, problem):
    target = {**WORKFLOW_TARGET, "prices": {"my-model": {"input": price, "output": 0.6}}}
    assert problems(tmp_path, with_changes(target=target)) == [
        f"target.n8n_workflow.prices.my-model.input: {problem}"
    ]
    table = tmp_path / "prices.yaml"
    table.write_text(yaml.safe_dump({"my-model": {"input": price, "output": 0.6}}), "utf-8")
    with pytest.raises(BenchmarkConfigError) as caught:
        PriceTable.from_file(table)
    assert caught.value.problems == [f"my-model.input: {problem}"]


@pytest.mark.parametrize("field", ["sessionIdleMinutes", "maxCostUsdPerDay"])
def test_no_number_of_the_file_is_infinite(tmp_path, field):
    online = {"metrics": ["bias"], field: float("inf")}
    document = with_changes(workflow={"id": "wf"}, online=online, metrics=[{"metric": "bias"}])
    (problem,) = problems(tmp_path, document)
    assert problem == f"online.{field}: Input should be a finite number"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["dataset", "synthesize", "wf", "--out", "x.jsonl", "--count", "1000000000"],
         "'--count': 1000000000 is not in the range 1<=x<=1000"),
        (["dataset", "synthesize", "wf", "--out", "x.jsonl", "--evolutions", "1000"],
         "'--evolutions': 1000 is not in the range 0<=x<=10"),
        (["init", "wf", "--synthesize", "1000000000"],
         "'--synthesize': 1000000000 is not in the range 1<=x<=1000"),
    ],
)  # fmt: skip
def test_counts_on_the_command_line_have_limits(args, said):
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert said in result.stderr
