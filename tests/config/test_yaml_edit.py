"""A variant added to a benchmark file as text: the user's comments and layout stay."""

import pytest

from n8n_deepeval_pipeline.config.yaml_edit import YamlEditError, with_entry, with_item, with_value

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


LIST = """metrics:
  - metric: g_eval   # the question people answer
    name: helpfulness
    criteria: Helpful?

  # bias last
  - metric: bias
aggregate: {passRule: allPass, metrics: allConnected}  # every one
"""


def test_an_item_goes_right_after_its_neighbour_in_the_lists_style():
    edited = with_item(LIST, ("metrics",), 0, {"metric": "g_eval", "label": "h2",
                                               "criteria": "Helpful?\nAll facts."})  # fmt: skip
    assert edited == LIST.replace(
        "    criteria: Helpful?\n",
        "    criteria: Helpful?\n"
        "  - metric: g_eval\n"
        "    label: h2\n"
        "    criteria: |-\n"
        "      Helpful?\n"
        "      All facts.\n",
    )
    flow = "metrics: [{metric: bias}, {metric: toxicity}]  # two\n"
    assert with_item(flow, ("metrics",), 0, {"metric": "g_eval"}) == (
        'metrics: [{metric: bias}, {"metric": "g_eval"}, {metric: toxicity}]  # two\n'
    )
    with pytest.raises(YamlEditError, match="metrics has no item 2"):
        with_item(LIST, ("metrics",), 2, {"metric": "bias"})
    with pytest.raises(YamlEditError, match="judge is not in the file"):
        with_item(LIST, ("judge", "models"), 0, "x")


def test_a_value_is_replaced_where_it_stands():
    edited = with_value(LIST, ("aggregate", "metrics"), ["helpfulness", "bias"])
    assert edited == LIST.replace("metrics: allConnected}", 'metrics: ["helpfulness", "bias"]}')
    with pytest.raises(YamlEditError, match="metrics is not a single value"):
        with_value(LIST, ("metrics",), [])
