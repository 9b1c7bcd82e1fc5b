"""The SDK call a model class makes, taken from it: with a fake class standing in for
DeepEval's (the real classes are exercised by the provider parity suite)."""

import asyncio

import pytest

from n8n_deepeval_pipeline.judging.deepeval_call import SdkCall, class_method, recorded_call


class FakeModelClass:
    """A fake of a DeepEval class's shape: takes its client from ``load_model`` on every
    call, asks with a schema, asks again without one when the schema is refused, and
    keeps to itself anything else that goes wrong (``except Exception``)."""

    def load_model(self, async_mode=False):
        raise AssertionError("the recorder stands in for the client")

    async def a_generate(self, prompt, schema=None):
        client = self.load_model(async_mode=True)
        try:
            return await client.chat.completions.create(prompt=prompt, schema=schema)
        except ValueError:  # "schema refused"
            return await client.chat.completions.create(prompt=prompt)
        except Exception:
            return "swallowed"


def recorded(answers, prompt="Is it biased?", schema="Verdicts"):
    run = class_method("a_generate")
    return asyncio.run(recorded_call(run(FakeModelClass(), answers, prompt, schema)))


def test_the_first_sdk_call_the_class_makes_is_recorded_and_the_class_stopped_there():
    call = recorded([])
    assert call == SdkCall(
        ("chat", "completions", "create"), (), {"prompt": "Is it biased?", "schema": "Verdicts"}
    )


def test_an_error_given_back_is_handled_by_the_class_which_decides_what_it_sends_next():
    assert recorded([ValueError("schema refused")]).kwargs == {"prompt": "Is it biased?"}


def test_a_class_swallowing_every_exception_does_not_swallow_the_recording():
    assert recorded([]).method == ("chat", "completions", "create")
    # what the class swallows is its own business: it answered without the SDK
    with pytest.raises(RuntimeError, match="answered without calling its SDK"):
        recorded([KeyError("not found")])
