"""What judge tokens cost: a price table the user can extend.

Prices are USD per million tokens, input and output. The built-in table covers common
judge models; a YAML or JSON file (``N8N_DEEPEVAL_PRICES``) adds or overrides entries:

    gpt-4o-mini: {input: 0.15, output: 0.60}
    my-vllm-model: {input: 0, output: 0}

A model without a price has no cost (the tokens are still recorded). A gateway's or a
cloud's name for a model (OpenRouter's ``openai/gpt-4.1``, Bedrock's
``us.anthropic.claude-sonnet-4-5-20250929-v1:0``) is priced as the model it names, at its
maker's list price, unless the table has the full name.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from n8n_deepeval_pipeline.config.errors import BenchmarkConfigError, describe_validation_error
from n8n_deepeval_pipeline.config.yaml_loader import YamlProblem, load_yaml

# Far above any model's list price (the dearest are a few hundred USD per million tokens):
# a price above it is a slip (a price per token times a million, a stray exponent).
MAX_PRICE = 10_000


class Price(BaseModel):
    """USD per million tokens.

    A number (``true`` and ``"0.3"`` are not), finite, at most ``MAX_PRICE``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    input: float = Field(ge=0, le=MAX_PRICE, description="USD per million prompt (input) tokens.")
    output: float = Field(
        ge=0, le=MAX_PRICE, description="USD per million completion (output) tokens."
    )


_BUILT_IN: dict[str, Price] = {
    "gpt-4o": Price(input=2.50, output=10.00),
    "gpt-4o-mini": Price(input=0.15, output=0.60),
    "gpt-4.1": Price(input=2.00, output=8.00),
    "gpt-4.1-mini": Price(input=0.40, output=1.60),
    "gpt-4.1-nano": Price(input=0.10, output=0.40),
    "o4-mini": Price(input=1.10, output=4.40),
    "claude-sonnet-4-5": Price(input=3.00, output=15.00),
    "claude-haiku-4-5": Price(input=1.00, output=5.00),
    "claude-opus-4-1": Price(input=15.00, output=75.00),
    "claude-3-5-haiku": Price(input=0.80, output=4.00),
    "claude-3-haiku": Price(input=0.25, output=1.25),
    # Gemini's, as DeepEval 4.3.1's model data has them
    "gemini-2.5-pro": Price(input=1.25, output=10.00),
    "gemini-2.5-flash": Price(input=0.30, output=2.50),
    "gemini-2.5-flash-lite": Price(input=0.10, output=0.40),
    "gemini-2.0-flash": Price(input=0.15, output=0.60),
    "dry-run": Price(input=0, output=0),
}


_PRICES = TypeAdapter(dict[str, Price])


class PriceTable:
    """Prices by model name; the longest known prefix of a dated name matches."""

    def __init__(self, extra: dict[str, Price] | None = None) -> None:
        self.prices = {**_BUILT_IN, **(extra or {})}

    @classmethod
    def from_file(cls, path: Path | None) -> PriceTable:
        """The built-in table extended by a YAML/JSON file (errors name the model)."""
        if path is None:
            return cls()
        try:
            raw = load_yaml(path.read_text(encoding="utf-8")) or {}
        except (OSError, YamlProblem) as error:
            problems = [f"cannot read the price table: {error}"]
            raise BenchmarkConfigError(path, problems, what="price table") from None
        try:
            extra = _PRICES.validate_python(raw)
        except ValidationError as error:
            problems = describe_validation_error(error)
            raise BenchmarkConfigError(path, problems, what="price table") from None
        return cls(extra)

    def extended(self, extra: dict[str, Price]) -> PriceTable:
        """The table with ``extra``'s entries added or overriding (a benchmark's prices)."""
        return PriceTable({**self.prices, **extra})

    def price(self, model: str) -> Price | None:
        """The price of a model (``gpt-4o-2024-08-06`` matches ``gpt-4o``).

        Without one for the whole name, the name after a gateway's or cloud's prefix
        (``openai/…``, ``anthropic.…``, ``us.anthropic.…``) is looked up.
        """
        names = [model] + [model[i:] for i in range(1, len(model)) if model[i - 1] in "/."]
        for name in names:
            if name in self.prices:
                return self.prices[name]
            matches = [known for known in self.prices if name.startswith(known)]
            if matches:
                return self.prices[max(matches, key=len)]
        return None

    def cost(self, model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
        """USD for the tokens, or None when the model has no price."""
        price = self.price(model)
        if price is None:
            return None
        return (prompt_tokens * price.input + completion_tokens * price.output) / 1_000_000
