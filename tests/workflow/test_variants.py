import json

import pytest

from n8n_deepeval_pipeline.workflow.hashing import workflow_hash
from n8n_deepeval_pipeline.workflow.variants import (
    apply_variant,
    family,
    same_workflow_problems,
    variant_problems,
)
from tests.conftest import EXAMPLE

WORKFLOW = json.loads((EXAMPLE / "workflow.json").read_text(encoding="utf-8"))


def _node(workflow, name):
    return next(node for node in workflow["nodes"] if node["name"] == name)


def test_a_model_name_sets_the_locator_value_and_drops_the_stale_cached_name():
    varied = apply_variant(WORKFLOW, {"OpenAI Chat Model": {"model": "gpt-4o"}})
    assert _node(varied, "OpenAI Chat Model")["parameters"]["model"] == {
        "__rl": True,
        "value": "gpt-4o",
        "mode": "list",
    }
    # The workflow itself is untouched.
    assert _node(WORKFLOW, "OpenAI Chat Model")["parameters"]["model"]["value"] == "gpt-4o-mini"


def test_a_nested_path_sets_one_option_and_keeps_the_others():
    varied = apply_variant(
        WORKFLOW,
        {
            "AI Agent": {"options.systemMessage": "Answer in one sentence."},
            "OpenAI Chat Model": {"options.temperature": 0, "options.maxTokens": 200},
        },
    )
    assert _node(varied, "AI Agent")["parameters"]["options"] == {
        "systemMessage": "Answer in one sentence.",
        "maxIterations": 6,
        "returnIntermediateSteps": True,
    }
    assert _node(varied, "OpenAI Chat Model")["parameters"]["options"] == {
        "temperature": 0,
        "maxTokens": 200,
    }


def test_a_variant_hashes_apart_from_the_base_and_an_identity_variant_does_not():
    base = workflow_hash(WORKFLOW)
    cheaper = workflow_hash(
        apply_variant(WORKFLOW, {"OpenAI Chat Model": {"model": "gpt-4.1-nano"}})
    )
    same = apply_variant(WORKFLOW, {"OpenAI Chat Model": {"options.temperature": 0.2}})
    assert cheaper != base
    assert workflow_hash(same) == base


@pytest.mark.parametrize(
    ("variants", "problems"),
    [
        (
            {"a": {"OpenAI Model": {"model": "x"}}, "b": {"OpenAI Model": {"model": "y"}}},
            ["node 'OpenAI Model' is not in the workflow (variants: a, b)"],
        ),
        (
            {"terse": {"AI Agent": {"option.systemMessage": "x"}}},
            [
                "node 'AI Agent' has no parameter 'option' (its parameters: options, "
                "promptType, text) (variants: terse)"
            ],
        ),
        (
            {"bad": {"AI Agent": {"text.inner": "x"}}},
            [
                "node 'AI Agent' parameter 'text' is not a collection, so 'text.inner' cannot be "
                "set (variants: bad)"
            ],
        ),
        (
            {"bad": {"OpenAI Chat Model": {"model.value.x": "y"}}},
            [
                "node 'OpenAI Chat Model' parameter 'model' is not a collection, so "
                "'model.value.x' cannot be set (variants: bad)"
            ],
        ),
        ({"fine": {"OpenAI Chat Model": {"options.topP": 0.9}}}, []),
    ],
)
def test_unknown_nodes_and_parameters_are_named_with_the_variants_that_use_them(variants, problems):
    assert variant_problems(WORKFLOW, variants) == problems


def test_the_family_is_the_base_then_each_variant_with_its_own_hash_and_key():
    variants = {
        "nano": {"OpenAI Chat Model": {"model": "gpt-4.1-nano"}},
        "terse": {"AI Agent": {"options.systemMessage": "Answer in one sentence."}},
    }
    members = family(WORKFLOW, variants)
    assert [member.name for member in members] == ["base", "nano", "terse"]
    assert members[0].variant is None and members[0].workflow_hash == workflow_hash(WORKFLOW)
    assert members[1].workflow_hash == workflow_hash(apply_variant(WORKFLOW, variants["nano"]))
    assert [member.key for member in members] == [member.workflow_hash[:12] for member in members]
    assert len({member.key for member in members}) == 3


def test_a_variant_that_changes_nothing_or_repeats_another_is_named():
    variants = {
        "same": {"OpenAI Chat Model": {"options.temperature": 0.2}},
        "nano": {"OpenAI Chat Model": {"model": "gpt-4.1-nano"}},
        "nano2": {"OpenAI Chat Model": {"model": "gpt-4.1-nano"}},
    }
    assert same_workflow_problems(WORKFLOW, variants) == [
        "variant same changes nothing: it is the workflow itself",
        "variants nano, nano2 are the same workflow",
    ]
    assert same_workflow_problems(WORKFLOW, {"nano": variants["nano"]}) == []
