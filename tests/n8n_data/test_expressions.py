"""The n8n expression reader: $json paths, text literals and +, read as data, never run."""

import pytest

from n8n_deepeval_pipeline.n8n_data.expressions import (
    ExpressionError,
    NothingFoundError,
    parse_expression,
    parse_path,
    resolve_path,
)

ITEM = {
    "output": "The total is 179.",
    "result": {"answer": "179", "sources": [{"title": "Order A3301"}]},
    "my field": ["first", "second"],
    "count": 2,
    "price": 89.5,
    "ok": True,
    "blank": None,
    "empty": "",
    "stored": '{"category": "refund", "tags": ["urgent"]}',
    "0": "zero key",
    "$odd": "dollar key",
}


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("={{ $json.output }}", "The total is 179."),
        ("={{$json.output}}", "The total is 179."),
        ("={{ $json.result.answer }}", "179"),
        ('={{ $json["my field"][0] }}', "first"),
        ("={{ $json['my field'][1] }}", "second"),
        ("={{ $json.result.sources[0].title }}", "Order A3301"),
        ('={{ $json["result"]["sources"][0]["title"] }}', "Order A3301"),
        ("={{ $json.result?.answer }}", "179"),
        ("={{ $json.result?.['answer'] }}", "179"),
        ("={{ $input.item.json.result.answer }}", "179"),
        ("={{ $json.stored.category }}", "refund"),  # JSON text read as its structure
        ("={{ $json.stored.tags[0] }}", "urgent"),
        ("={{ $json[0] }}", "zero key"),  # an index on an object is a key, as in JavaScript
        ("={{ $json.$odd }}", "dollar key"),
        ("={{ $json.count }}", 2),  # a lone {{ }} keeps the value's type
        ("={{ $json.ok }}", True),
        ("={{ $json.result }}", {"answer": "179", "sources": [{"title": "Order A3301"}]}),
        ("={{ $json.empty }}", ""),
        ("={{ $json.count + $json.count }}", 4),  # numbers add
        ('={{ "Answer: " + $json.result.answer }}', "Answer: 179"),
        ("={{ $json.output + ' (' + $json.count + ')' }}", "The total is 179. (2)"),
        ("=Q: {{ $json.result.answer }} / {{ $json.count }} / {{ $json.ok }}", "Q: 179 / 2 / true"),
        ("={{ $json.price }} and {{ $json.result.sources }}", '89.5 and [{"title":"Order A3301"}]'),
        ("={{ 'a }} b' }}", "a }} b"),  # }} inside a literal does not close the block
        ('={{ "say \\"hi\\"\\n" }}', 'say "hi"\n'),
        ("=fixed text after =", "fixed text after ="),
        ("Paris", "Paris"),  # without '=' the value is fixed text
        ("", ""),
    ],
)
def test_supported_expressions_read_the_item(expression, value):
    assert parse_expression(expression).evaluate(ITEM) == value


def test_paths_are_reported_as_written():
    parsed = parse_expression('=Q {{ $json.a.b }} {{ "x" + $json["c d"][0] }}')
    assert parsed.paths() == ("$json.a.b", '$json["c d"][0]')
    assert parse_expression("text").is_fixed and not parsed.is_fixed


@pytest.mark.parametrize(
    ("expression", "missing"),
    [
        ("={{ $json.answer }}", "$json.answer"),
        ("={{ $json.result.answer.text }}", "$json.result.answer.text"),
        ("={{ $json.result.sources[3].title }}", "$json.result.sources[3].title"),
        ('={{ $json["my field"][2] }}', '$json["my field"][2]'),
        ("={{ $json.blank }}", "$json.blank"),  # null is nothing
        ("={{ $json.output.length }}", "$json.output.length"),  # text has no fields
        ("=Q: {{ $json.result.answer }} {{ $json.nope }}", "$json.nope"),
        ("={{ $json.output + $json.nope }}", "$json.nope"),
    ],
)
def test_a_path_that_finds_nothing_names_the_path(expression, missing):
    with pytest.raises(NothingFoundError) as caught:
        parse_expression(expression).evaluate(ITEM)
    assert caught.value.path == missing


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ('={{ $node["AI Agent"].json.output }}', "$node reads another node's output"),
        ("={{ $('AI Agent').item.json.output }}", "$('…') reads another node's output"),
        ("={{ $items('AI Agent')[0].json.output }}", "$items reads another node's items"),
        ("={{ $env.OPENAI_API_KEY }}", "$env reads the environment"),
        ("={{ $vars.answer }}", "$vars reads n8n variables"),
        ("={{ $now }}", "$now reads the clock"),
        ("={{ $json.output.trim() }}", "calling .trim(…) is not supported"),
        ("={{ $json.output.toUpperCase() }}", "calling .toUpperCase(…)"),
        ("={{ $json() }}", "calling .$json(…)"),
        ("={{ JSON.stringify($json) }}", "a bare name 'JSON'"),
        ("={{ output }}", "a bare name 'output' (write $json.output)"),
        ("={{ $input.first().json.output }}", "$input is supported only as $input.item.json"),
        ("={{ $json.a - 1 }}", "unsupported '-' (only + joins operands)"),
        ("={{ $json.a || 'x' }}", "unsupported '|'"),
        ("={{ $json.a ? 'y' : 'n' }}", "unsupported '?'"),
        ("={{ $json.a; $json.b }}", "unsupported ';'"),
        ("={{ $json[$json.key] }}", "neither a quoted name nor an index"),
        ("={{ $json[-1] }}", "neither a quoted name nor an index"),
        ("={{ $json.a.[0] }}", "a '.' not followed by a field name"),
        ('={{ $json["a" }}', "a '[' without its ']'"),
        ("={{ 'open }}", "an unclosed ' quote"),
        ("={{ $json.output", "a '{{' without its '}}'"),
        ("={{ }}", "an empty {{ }}"),
        ("={{ 1 + 2 }}", "unexpected '1'"),
        ("={{ $jsonx.a }}", "$jsonx is not supported"),
    ],
)
def test_anything_else_is_refused_saying_what_is_supported(expression, reason):
    with pytest.raises(ExpressionError) as caught:
        parse_expression(expression)
    message = str(caught.value)
    assert reason in message, message
    assert repr(expression) in message
    assert "supported: a fixed text, or '=' then text with {{ … }} blocks" in message
    assert "$json.result.answer" in message


def test_braces_without_the_leading_equals_sign_are_refused_with_the_fix():
    with pytest.raises(ExpressionError) as caught:
        parse_expression("{{ $json.output }}")
    assert "does not start with '='" in str(caught.value)
    assert "write '={{ $json.output }}'" in str(caught.value)


@pytest.mark.parametrize(
    ("path", "segments"),
    [
        ("label", ("label",)),
        ("evalContext.caseId", ("evalContext", "caseId")),
        ("row.my column", ("row", "my column")),
        ("metrics[0].score", ("metrics", 0, "score")),
        ("metrics.0.score", ("metrics", "0", "score")),
        ('row["a.b"]', ("row", "a.b")),
        ("row['x'][2]", ("row", "x", 2)),
    ],
)
def test_item_paths_as_the_seed_writes_them(path, segments):
    assert parse_path(path) == segments


@pytest.mark.parametrize("path", ["", "a..b", ".a", "a.", "[0]", "a[x]", "a[0", "a]b"])
def test_malformed_item_paths_are_refused(path):
    with pytest.raises(ExpressionError, match="supported: field names separated by dots"):
        parse_path(path)


def test_resolving_a_path_walks_objects_lists_and_json_text():
    item = {"metrics": [{"score": 0.5}], "row": {"a.b": 1}, "text": '["x", {"y": 2}]'}
    assert resolve_path(item, parse_path("metrics.0.score")) == 0.5
    assert resolve_path(item, parse_path("metrics[0].score")) == 0.5
    assert resolve_path(item, parse_path('row["a.b"]')) == 1
    assert resolve_path(item, parse_path("text[1].y")) == 2
    assert resolve_path(item, parse_path("text.1.y")) == 2
    assert resolve_path(item, parse_path("metrics[1].score")) is None
    assert resolve_path(item, parse_path("row.missing")) is None
    assert resolve_path(item, ()) is item


def test_item_references_are_found_in_any_javascript_n8n_accepts():
    from n8n_deepeval_pipeline.n8n_data.expressions import ItemReference, item_references

    text = (
        "=Q: {{ $json.body.question.trim() }} from {{ $('Webhook').item.json.body['customer id'] }}"
        ' {{ $input.first().json.a[0].b }} {{ $node["Chat"].json.chatInput }} {{ $json.x?.y }}'
    )
    assert item_references(text) == [
        ItemReference(None, ("body", "question")),
        ItemReference("Webhook", ("body", "customer id")),
        ItemReference(None, ("a", 0, "b")),
        ItemReference("Chat", ("chatInput",)),
        ItemReference(None, ("x", "y")),
    ]
    assert item_references("fixed $json.text, no '='") == []
