"""Where a node keeps its prompt, as n8n 2.41's node descriptions say, and list paths."""

import pytest

from n8n_deepeval_pipeline.workflow.prompt_parameter import (
    PromptParameterError,
    prompt_parameter,
)
from n8n_deepeval_pipeline.workflow.variants import apply_variant, variant_problems

LC = "@n8n/n8n-nodes-langchain."


def workflow(*nodes):
    return {"nodes": [{"name": name, "type": kind, "parameters": parameters}
                      for name, kind, parameters in nodes], "connections": {}}  # fmt: skip


AGENT = ("AI Agent", LC + "agent", {"options": {"systemMessage": "Be kind."}})
CHAIN = ("Summarise", LC + "chainLlm", {"text": "={{ $json.text }}", "messages": {
    "messageValues": [{"type": "HumanMessagePromptTemplate", "message": "Example"},
                      {"message": "You summarise in one line."}]}})  # fmt: skip


def test_the_agents_system_message_and_the_chains_system_message_by_default():
    found = prompt_parameter(workflow(AGENT))
    assert (found.node, found.path, found.text, found.unset) == (
        "AI Agent", "options.systemMessage", "Be kind.", False)  # fmt: skip
    chain = prompt_parameter(workflow(CHAIN))
    assert (chain.path, chain.text) == ("messages.messageValues.1.message",
                                        "You summarise in one line.")  # fmt: skip
    without = ("Chain", LC + "chainLlm", {"promptType": "define", "text": "Summarise this."})
    assert prompt_parameter(workflow(without)).path == "text"


def test_an_unset_system_message_starts_from_what_the_editor_fills_in():
    found = prompt_parameter(workflow(("AI Agent", LC + "agent", {"options": {}})))
    assert (found.text, found.unset) == ("You are a helpful assistant", True)


def test_the_node_must_be_named_when_there_are_several_and_mistakes_say_which_choice():
    with pytest.raises(PromptParameterError) as several:
        prompt_parameter(workflow(AGENT, CHAIN))
    assert several.value.field == "node" and "AI Agent, Summarise" in str(several.value)
    with pytest.raises(PromptParameterError) as unknown:
        prompt_parameter(workflow(AGENT), "Agent")
    assert unknown.value.field == "node"
    with pytest.raises(PromptParameterError) as not_text:
        prompt_parameter(workflow(AGENT), "AI Agent", "options.maxIterations")
    assert not_text.value.field == "parameter"
    assert str(not_text.value) == (
        "node 'AI Agent': parameter 'options.maxIterations' is unset: the optimiser needs a "
        "prompt to start from"
    )
    with pytest.raises(PromptParameterError, match="the list has no item 5"):
        prompt_parameter(workflow(CHAIN), "Summarise", "messages.messageValues.5.message")


def test_a_variant_path_indexes_a_list_and_keeps_its_other_items():
    varied = apply_variant(workflow(CHAIN), {"Summarise": {"messages.messageValues.1.message":
                                                           "Two lines."}})  # fmt: skip
    values = varied["nodes"][0]["parameters"]["messages"]["messageValues"]
    assert values == [{"type": "HumanMessagePromptTemplate", "message": "Example"},
                      {"message": "Two lines."}]  # fmt: skip
    assert workflow(CHAIN)["nodes"][0]["parameters"]["messages"]["messageValues"][1] == {
        "message": "You summarise in one line."}  # fmt: skip
    wrong = {"v": {"Summarise": {"messages.messageValues.x": 1}}}
    assert variant_problems(workflow(CHAIN), wrong) == [
        "node 'Summarise' parameter 'messages.messageValues.x': the list has no item x (it has "
        "2) (variants: v)"]  # fmt: skip
