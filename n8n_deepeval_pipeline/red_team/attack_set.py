"""The kept attack set: generated once, faced by every version until it is regenerated.

What decides the attacks (the vulnerabilities and their types, the attacks and their
weights, or the framework; attacks per type; the draw's seed; a purpose written in the
file; the simulator judge) is its ``key``: a change there makes a new set. A purpose read
off the workflow is not part of it, since a version's edit changes that: the set keeps the
purpose it was written for, and every version is judged against that one.
"""

from __future__ import annotations

import hashlib
import json
import uuid

from pydantic import BaseModel, ConfigDict

from n8n_deepeval_pipeline.benchmark.red_team import RedTeamConfig
from n8n_deepeval_pipeline.red_team.protocol import AttackSeed
from n8n_deepeval_pipeline.red_team.rows import RedTeamAttack

_DECIDING = {
    "vulnerabilities",
    "attacks",
    "framework",
    "attacks_per_vulnerability_type",
    "run_all_attacks",
    "purpose",
    "seed",
}


def generation_key(config: RedTeamConfig, simulator: str) -> str:
    """What the attacks are generated from, as a short hash."""
    deciding = config.model_dump(mode="json", include=_DECIDING)
    text = json.dumps({**deciding, "simulator": simulator}, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def generation_namespace(config: RedTeamConfig, key: str) -> str:
    """The judge cache's namespace for a generation.

    A seeded draw asks the same questions again and may be answered from the cache (the
    same set, for free); an unseeded one is a new set every time it is generated.
    """
    suffix = f"seed-{config.seed}" if config.seed is not None else uuid.uuid4().hex
    return f"red-team:{key}:{suffix}"


class KeptSet(BaseModel):
    """The attack set as the attacks asset keeps it between versions."""

    model_config = ConfigDict(frozen=True)

    key: str
    attack_set: str
    generated_in: str
    purpose: str | None
    seeds: list[AttackSeed]

    @classmethod
    def new(cls, key: str, version: str, purpose: str | None, seeds: list[AttackSeed]) -> KeptSet:
        """A set generated now in ``version``."""
        tag = hashlib.sha256(f"{key}:{version}:{uuid.uuid4().hex}".encode()).hexdigest()[:12]
        return cls(key=key, attack_set=tag, generated_in=version, purpose=purpose, seeds=seeds)

    def rows(self, workflow_hash: str) -> list[RedTeamAttack]:
        """The set's attacks as a version faces them."""
        return [
            RedTeamAttack(
                workflow_hash=workflow_hash,
                attack_set=self.attack_set,
                generated_in=self.generated_in,
                purpose=self.purpose,
                **seed.model_dump(),
            )
            for seed in self.seeds
        ]


def seeds_of(rows: list[RedTeamAttack]) -> list[AttackSeed]:
    """The attacks a version's rows hold, to be played."""
    return [
        AttackSeed.model_validate(row.model_dump(include=set(AttackSeed.model_fields)))
        for row in rows
    ]
