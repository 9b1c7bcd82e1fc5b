"""A metric's schema as DeepEval's model classes are given it: its JSON schema built once."""

from __future__ import annotations

from pydantic import BaseModel, Field, create_model
from pydantic.json_schema import model_json_schema

from n8n_deepeval_pipeline.judging.wire_format import schema_built_once, strict_response_format


class Reason(BaseModel):
    """Why, in a sentence."""

    text: str = Field(description="the reason")


class Verdicts(BaseModel):
    """The verdicts of a metric."""

    verdicts: list[str]
    reason: Reason | None = None
    score: float = 0.5


def test_the_schema_given_builds_what_pydantic_builds_for_the_metrics_schema():
    once = schema_built_once(Verdicts)
    assert once is not Verdicts and issubclass(once, Verdicts)
    assert once.__name__ == "Verdicts" and once.__doc__ == Verdicts.__doc__
    assert once.model_json_schema() == Verdicts.model_json_schema()
    assert model_json_schema(once) == Verdicts.model_json_schema()  # built another way
    assert strict_response_format(once) == strict_response_format(Verdicts)  # openai's parse
    # other arguments: pydantic's own answer
    serialization = once.model_json_schema(mode="serialization")
    assert serialization == Verdicts.model_json_schema(mode="serialization")


def test_a_class_may_change_the_schema_it_is_given_without_changing_the_next_one():
    once = schema_built_once(Verdicts)
    given = once.model_json_schema()
    given["properties"].clear()  # as OpenRouter's class closes every object, in place
    given["additionalProperties"] = False
    assert once.model_json_schema() == Verdicts.model_json_schema()


def test_each_schema_gets_one_class_of_its_own():
    assert schema_built_once(Verdicts) is schema_built_once(Verdicts)
    assert schema_built_once(Reason) is not schema_built_once(Verdicts)


def test_a_schema_made_anew_for_each_metric_is_given_as_it_is():
    made = create_model("Verdict", verdict=(str, ...))  # as a DAG's verdict node makes one
    assert schema_built_once(made) is made
