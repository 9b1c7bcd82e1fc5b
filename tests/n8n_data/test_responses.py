"""Normalising what a workflow answered: the shapes n8n and agents produce."""

import pytest

from n8n_deepeval_pipeline.n8n_data.responses import (
    ResponseShapeError,
    normalise_response,
    parse_body,
)
from n8n_deepeval_pipeline.n8n_data.templates import TemplateRenderError, render


@pytest.mark.parametrize(
    ("body", "output"),
    [
        ({"output": "a"}, "a"),
        ({"response": "b"}, "b"),
        ({"message": {"role": "assistant", "content": "c"}}, "c"),
        ({"text": "d"}, "d"),
        ([{"json": {"output": "e"}}, {"json": {"output": "ignored"}}], "e"),
        ("plain text", "plain text"),
        ({"output": {"answer": 42}}, '{"answer": 42}'),
    ],
)
def test_the_output_is_found_in_every_usual_shape(body, output):
    assert normalise_response(body).output == output


def test_tool_calls_come_from_any_of_the_step_fields():
    for key in ("intermediateSteps", "tool_calls", "actions"):
        steps = [{"tool": "calculator", "input": "1+1"}]
        assert normalise_response({"output": "2", key: steps}).intermediate_steps == steps


def test_an_error_field_is_a_failure_and_a_path_reads_other_shapes():
    assert normalise_response({"error": "model down"}).error == "model down"
    assert normalise_response({"error": ""}).error is None
    body = {"data": {"reply": ["x", "y"]}, "session": {"id": 7}}
    answer = normalise_response(body, "data.reply[1]", "session.id")
    assert (answer.output, answer.session_id) == ("y", "7")
    with pytest.raises(ResponseShapeError, match="found nothing"):
        normalise_response(body, "data.missing")
    with pytest.raises(ResponseShapeError, match="responsePath"):
        normalise_response(body, "data.[")


def test_bodies_are_json_or_text_and_broken_json_is_named():
    assert parse_body('{"output": "a"}') == {"output": "a"}
    assert parse_body("Workflow was started") == "Workflow was started"
    assert parse_body("  ") is None
    with pytest.raises(ResponseShapeError, match="unparsable JSON"):
        parse_body('{"output": ')


def test_templates_run_no_code_and_name_what_is_missing():
    context = {"input": "hi", "evalContext": {"runId": "h:r:0"}, "tools": ["a"]}
    assert render({"q": "{{ input | upper }} {{ evalContext.runId }}"}, context) == {
        "q": "HI h:r:0"
    }
    assert render(["{{ tools }}", 3, None], context) == [["a"], 3, None]
    with pytest.raises(TemplateRenderError, match="'nope' is undefined"):
        render("{{ nope }}", context)
    with pytest.raises(TemplateRenderError, match="unsafe"):
        render("{{ input.__class__.__mro__ }}", context)
