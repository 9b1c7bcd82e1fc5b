"""URL templates: each value is percent-encoded for the part of the URL it lands in."""

import pytest

from n8n_deepeval_pipeline.n8n_data.templates import TemplateRenderError, render, render_url

CONTEXT = {
    "evalContext": {"rowId": "../../rest/owner?evil=1#x", "runIndex": 2},
    "env": {"N8N_URL": "https://n8n.example.com/base", "HOST": "127.0.0.1:5678"},
    "input": "a b&c=d#e",
}


@pytest.mark.parametrize(
    ("template", "url"),
    [
        (
            "https://h/webhook/probe/{{ evalContext.rowId }}",
            "https://h/webhook/probe/..%2F..%2Frest%2Fowner%3Fevil%3D1%23x",
        ),
        (
            "https://h/w?q={{ input }}&run={{ evalContext.runIndex }}",
            "https://h/w?q=a%20b%26c%3Dd%23e&run=2",
        ),
        (
            "https://h/w#{{ evalContext.rowId }}",
            "https://h/w#..%2F..%2Frest%2Fowner%3Fevil%3D1%23x",
        ),
        (
            "{{ env.N8N_URL }}/webhook/{{ input }}",
            "https://n8n.example.com/base/webhook/a%20b%26c%3Dd%23e",
        ),
        ("http://{{ env.HOST }}/webhook/x", "http://127.0.0.1:5678/webhook/x"),
        ("http://{{ evalContext.rowId }}/x", "http://..%2F..%2Frest%2Fowner%3Fevil%3D1%23x/x"),
        ("https://h/{{ '..' }}/x", "https://h/%2E%2E/x"),
        ("https://h/webhook/plain", "https://h/webhook/plain"),
    ],
)
def test_values_cannot_leave_the_part_they_land_in(template, url):
    assert render_url(template, CONTEXT) == url


def test_an_unknown_name_in_a_url_is_named():
    with pytest.raises(TemplateRenderError, match="'nope' is undefined"):
        render_url("https://h/{{ nope }}", CONTEXT)


def test_a_row_value_that_starts_a_url_is_encoded_too():
    assert (
        render_url("{{ evalContext.rowId }}/x", CONTEXT)
        == "..%2F..%2Frest%2Fowner%3Fevil%3D1%23x/x"
    )


@pytest.mark.parametrize(
    "template",
    ["{{ row[env.TOKEN] }}", "https://h/{{ row[env.TOKEN] }}", "{{ 1 / 0 }} {{ env.TOKEN }}"],
)
def test_a_failing_template_is_a_render_error_that_never_quotes_a_variable(template):
    from n8n_deepeval_pipeline.n8n_data.templates import render

    context = {"row": {}, "env": {"TOKEN": "sk-secret-123"}}
    with pytest.raises(TemplateRenderError) as caught:
        (render_url if template.startswith("https") else render)(template, context)
    assert "sk-secret-123" not in str(caught.value)
    assert str(caught.value).startswith(f"template {template!r}: ")


def test_an_object_a_template_takes_whole_is_a_copy_the_caller_may_change():
    row = {"body": {"question": "refund?", "tags": ["billing"]}}
    first = render("{{ row['body'] }}", {"row": row})
    first["sessionId"] = "run-0"
    first["tags"].append("urgent")
    assert render("{{ row['body'] }}", {"row": row}) == {"question": "refund?", "tags": ["billing"]}
    assert row == {"body": {"question": "refund?", "tags": ["billing"]}}
