import copy
import hashlib
import json

import pytest

from n8n_deepeval_pipeline.workflow.canonical_json import js_number, stringify
from n8n_deepeval_pipeline.workflow.hashing import (
    WorkflowShapeError,
    canonical_workflow_json,
    extract_workflow,
    workflow_hash,
)

WORKFLOW = {
    "name": "Two nodes",
    "id": "wf1",
    "nodes": [
        {
            "id": "n-b",
            "name": "B",
            "type": "t.b",
            "typeVersion": 2.0,
            "position": [100, 200],
            "parameters": {"z": 1, "a": {"y": 1e-7, "b": [3, 1]}},
            "credentials": {"api": {"id": "c1", "name": "key"}},
        },
        {"id": "n-a", "name": "A", "type": "t.a", "typeVersion": 1, "disabled": False},
    ],
    "connections": {"B": {"main": [[{"node": "A", "type": "main", "index": 0}]]}},
    "settings": {"executionOrder": "v1"},
    "pinData": {},
}
CANONICAL = (
    '{"nodes":[{"name":"A","type":"t.a","typeVersion":1,"parameters":{}},'
    '{"name":"B","type":"t.b","typeVersion":2,"parameters":{"a":{"b":[3,1],"y":1e-7},"z":1}}],'
    '"connections":{"B":{"main":[[{"index":0,"node":"A","type":"main"}]]}}}'
)


def edited(change):
    workflow = copy.deepcopy(WORKFLOW)
    change(workflow)
    return workflow


def test_canonical_json_is_the_specified_text_and_hash_is_its_sha256():
    assert canonical_workflow_json(WORKFLOW) == CANONICAL
    assert workflow_hash(WORKFLOW) == hashlib.sha256(CANONICAL.encode()).hexdigest()


@pytest.mark.parametrize(
    "change",
    [
        lambda w: w["nodes"].reverse(),
        lambda w: w["nodes"][0].update(position=[0, 0], id="other"),
        lambda w: w["nodes"][0].update(credentials={"api": {"id": "c2", "name": "rotated"}}),
        lambda w: w.update(name="Renamed", settings={}, tags=[{"name": "x"}], pinData={"A": []}),
        lambda w: w["nodes"][1].pop("disabled"),
        lambda w: w["nodes"][0].update(parameters={"a": {"b": [3, 1], "y": 1e-7}, "z": 1.0}),
        lambda w: w["nodes"][0].update(typeVersion=2),
        lambda w: w["nodes"][0].update(webhookId="hook", notes="a note", notesInFlow=True),
    ],
    ids=[
        "node order",
        "layout and ids",
        "credentials",
        "name settings tags pinData",
        "missing disabled equals false",
        "key order and 1.0 vs 1",
        "2.0 vs 2",
        "webhookId and notes",
    ],
)
def test_hash_ignores_what_does_not_change_behaviour(change):
    assert workflow_hash(edited(change)) == workflow_hash(WORKFLOW)


@pytest.mark.parametrize(
    "change",
    [
        lambda w: w["nodes"][0]["parameters"].update(z=2),
        lambda w: w["nodes"][0].update(type="t.c"),
        lambda w: w["nodes"][0].update(typeVersion=2.1),
        lambda w: w["connections"]["B"]["main"][0][0].update(index=1),
        lambda w: w["nodes"][1].update(name="A2"),
        lambda w: w["nodes"][1].update(disabled=True),
        lambda w: w["nodes"][0]["parameters"]["a"]["b"].reverse(),
    ],
    ids=["parameter", "type", "typeVersion", "connection", "node name", "disabled", "array order"],
)
def test_hash_changes_with_behaviour(change):
    assert workflow_hash(edited(change)) != workflow_hash(WORKFLOW)


def test_api_response_and_one_item_export_list_hash_like_the_export():
    assert workflow_hash(extract_workflow({"data": WORKFLOW})) == workflow_hash(WORKFLOW)
    assert workflow_hash(extract_workflow([WORKFLOW])) == workflow_hash(WORKFLOW)


def test_text_that_is_not_a_workflow_is_refused_with_a_reason():
    with pytest.raises(WorkflowShapeError, match="no 'nodes' list"):
        extract_workflow({"name": "x"})
    with pytest.raises(WorkflowShapeError, match="list of 2"):
        extract_workflow([WORKFLOW, WORKFLOW])


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (2.0, "2"),
        (0.00001, "0.00001"),
        (0.000001, "0.000001"),
        (1e-7, "1e-7"),
        (1.5e-10, "1.5e-10"),
        (123.456, "123.456"),
        (-0.0, "0"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (2**60, "1152921504606847000"),
        (0.1 + 0.2, "0.30000000000000004"),
        (-42, "-42"),
    ],
)
def test_numbers_print_as_javascript_prints_them(value, text):
    assert js_number(value) == text


def test_strings_are_escaped_like_json_stringify_without_ascii_escaping():
    value = {"k": 'é "q" \\ \n\t\x01 ✓'}
    assert stringify(value) == '{"k":"é \\"q\\" \\\\ \\n\\t\\u0001 ✓"}'
    assert json.loads(stringify(value)) == value
