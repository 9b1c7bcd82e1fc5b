"""DeepEval's metrics the catalog leaves out, and why: named, so that none is left out unsaid.

A test checks that every metric class DeepEval 4.3.1 exports is either a catalog entry
or listed here.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class LeftOut(BaseModel):
    """A DeepEval metric no benchmark can use, and the reason."""

    model_config = ConfigDict(frozen=True)

    implementation: str
    why: str


_VOICE = (
    "judges the audio of a voice conversation (each turn's recorded speech): an n8n "
    "workflow's runs are text and images, with no audio to judge"
)
_SYSTEM_ONE = (
    "is scored by TypeSafe's System One model (DeepEval's DeepEvalBaseSystemOneModel), not "
    "by an LLM judge: none of the judges a benchmark names can score it"
)

LEFT_OUT: tuple[LeftOut, ...] = (
    *(
        LeftOut(implementation=f"deepeval.metrics.{name}", why=_VOICE)
        for name in (
            "AgentResponsivenessMetric",
            "AudioGlitchMetric",
            "AudioIntegrityMetric",
            "SpeechIntelligibilityMetric",
            "TranscriptionAccuracyMetric",
            "TurnTakingNaturalnessMetric",
            "VoiceConsistencyMetric",
            "VoiceNaturalnessMetric",
            "VoiceReliabilityMetric",
        )
    ),
    LeftOut(implementation="deepeval.metrics.JevEval", why=_SYSTEM_ONE),
    LeftOut(implementation="deepeval.metrics.ConversationalJevEval", why=_SYSTEM_ONE),
)
