"""The benchmark file's ``simulation`` section: simulated users talk to the live workflow.

Each run of a dataset row that is a conversational golden (``scenario``,
``expectedOutcome``, ``userDescription``, optional ``context`` and opening ``turns``)
becomes one conversation, played by DeepEval's own ``ConversationSimulator``: the judge
writes each user turn and decides when the expected outcome is reached; the workflow
answers each turn in a session of the conversation's own.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field

from n8n_deepeval_pipeline.config.model import ConfigModel, NonBlank
from n8n_deepeval_pipeline.judging.spec import JudgeChoice

# The dataset fields a conversational golden reads, also the names of their default columns.
GoldenField = Literal["scenario", "expectedOutcome", "userDescription", "context", "turns"]
GOLDEN_FIELDS: tuple[GoldenField, ...] = get_args(GoldenField)


class SimulationConfig(ConfigModel):
    """How each conversation is simulated."""

    max_user_turns: int = Field(
        default=5,
        ge=1,
        le=50,
        description="User turns the simulated user writes at most (DeepEval's "
        "max_user_simulations); the conversation stops earlier once the judge finds the "
        "expected outcome reached.",
    )
    judge: JudgeChoice | None = Field(
        default=None,
        description="The judge that plays the user and checks the expected outcome "
        "(DeepEval's simulator model); unset: the benchmark's judge.",
    )
    language: NonBlank = Field(
        default="English", description="The language the simulated user writes in."
    )
