import pytest
from pydantic import ValidationError

from n8n_deepeval_pipeline.metrics.json_schema_model import JsonSchemaError, model_from_json_schema

SCHEMA = {
    "type": "object",
    "properties": {
        "total": {"type": "number"},
        "currency": {"enum": ["USD", "EUR"]},
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"sku": {"type": "string"}},
                "required": ["sku"],
            },
        },
        "note": {"type": ["string", "null"]},
    },
    "required": ["total", "currency"],
    "additionalProperties": False,
}


def test_valid_json_passes_and_invalid_json_fails():
    model = model_from_json_schema(SCHEMA)
    model.model_validate_json(
        '{"total": 179, "currency": "USD", "items": [{"sku": "SB-20"}], "note": null}'
    )
    for bad in (
        '{"currency": "USD"}',
        '{"total": 1, "currency": "GBP"}',
        '{"total": 1, "currency": "USD", "extra": 1}',
        "not json",
    ):
        with pytest.raises(ValidationError):
            model.model_validate_json(bad)


def test_top_level_arrays_and_scalars():
    model_from_json_schema({"type": "array", "items": {"type": "integer"}}).model_validate_json(
        "[1, 2]"
    )
    with pytest.raises(ValidationError):
        model_from_json_schema({"type": "array", "items": {"type": "integer"}}).model_validate_json(
            '["a"]'
        )


def test_unsupported_schema_is_named():
    with pytest.raises(JsonSchemaError, match=r"expectedSchema.total: unsupported type 'decimal'"):
        model_from_json_schema({"type": "object", "properties": {"total": {"type": "decimal"}}})
