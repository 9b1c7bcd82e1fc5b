"""A variant added to a benchmark file as text: the user's comments and layout stay."""

import pytest

from n8n_deepeval_pipeline.config.yaml_edit import YamlEditError, with_entry

ENTRY = {"AI Agent": {"options.systemMessage": "Be brief.\nEnd with: Thanks!"}}
BLOCK = """# My benchmark
name: demo   # lower_snake_case
target:
  type: n8n_workflow   # through a harness copy
  startNodeName: AI Agent
  variants:
    nano:               # a cheaper model
      OpenAI Chat Model: {model: gpt-4.1-nano}

metrics: [{metric: exact_match}]
"""


def test_an_entry_goes_after_the_last_variant_at_its_indentation():
    edited = with_entry(BLOCK, ("target", "variants"), "optimized", ENTRY)
    assert edited == BLOCK.replace(
        "      OpenAI Chat Model: {model: gpt-4.1-nano}\n",
        "      OpenAI Chat Model: {model: gpt-4.1-nano}\n"
        "    optimized:\n"
        "      AI Agent:\n"
        "        options.systemMessage: |-\n"
        "          Be brief.\n"
        "          End with: Thanks!\n",
    )


def test_a_missing_mapping_is_added_to_its_parent_and_braces_get_json():
    without = "name: demo\ntarget:\n  type: n8n_workflow  # here\n# the metrics\nmetrics: []\n"
    edited = with_entry(without, ("target", "variants"), "optimized", ENTRY)
    assert edited.splitlines()[2:5] == ["  type: n8n_workflow  # here", "  variants:",
                                        "    optimized:"]  # fmt: skip
    assert edited.endswith("# the metrics\nmetrics: []\n")
    flow = "name: demo\ntarget: {type: n8n_workflow, variants: {nano: {M: {model: a}}}}\n"
    assert with_entry(flow, ("target", "variants"), "optimized", ENTRY) == (
        "name: demo\ntarget: {type: n8n_workflow, variants: {nano: {M: {model: a}}, "
        '"optimized": {"AI Agent": {"options.systemMessage": "Be brief.\\nEnd with: Thanks!"}}}}\n'
    )


def test_what_cannot_be_added_without_a_rewrite_is_refused():
    with pytest.raises(YamlEditError, match="already has 'nano'"):
        with_entry(BLOCK, ("target", "variants"), "nano", ENTRY)
    with pytest.raises(YamlEditError, match="target is not a mapping"):
        with_entry("target: none\n", ("target", "variants"), "optimized", ENTRY)
