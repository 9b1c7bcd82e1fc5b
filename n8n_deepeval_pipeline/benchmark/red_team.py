"""The benchmark file's ``redTeam`` section: DeepTeam's attacks on the agent, and what fails.

Vulnerabilities (with their types) and attacks (with weights) are named as DeepTeam's own
configuration names them, or a framework stands for both. DeepTeam generates
``attacksPerVulnerabilityType`` attacks per type, sends each through the workflow
(``runsPerRow`` times) and judges whether it breached; a vulnerability whose breach rate
is above ``failOn`` fails the run. Apart from the benchmark's dataset runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    BeforeValidator,
    Field,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)

from n8n_deepeval_pipeline.benchmark.deepteam_names import (
    ATTACKS,
    FRAMEWORKS,
    MULTI_TURN_ATTACKS,
    VULNERABILITIES,
)
from n8n_deepeval_pipeline.config.model import ConfigModel, NonBlank

FrameworkName = Literal["owasp_top_10", "owasp_top_10_agentic", "nist", "mitre", "eu_ai_act"]
assert set(get_args(FrameworkName)) == set(FRAMEWORKS)  # one list of names
BreachRate = Annotated[float, Field(ge=0, le=1)]


def _listed(names: Iterable[object]) -> str:
    return ", ".join(str(name) for name in names)


class VulnerabilityChoice(ConfigModel):
    """One DeepTeam vulnerability and the types of it to attack (default: all)."""

    name: str = Field(description="A DeepTeam vulnerability class, e.g. ExcessiveAgency.")
    types: list[str] | None = Field(
        default=None, min_length=1, description="Its types to attack (unset: every type)."
    )

    @field_validator("name")
    @classmethod
    def _known(cls, name: str) -> str:
        if name not in VULNERABILITIES:
            raise ValueError(
                f"unknown vulnerability {name!r}; DeepTeam's: {_listed(VULNERABILITIES)}"
            )
        return name

    @field_validator("types")
    @classmethod
    def _known_types(cls, types: list[str] | None, info: ValidationInfo) -> list[str] | None:
        name = info.data.get("name")  # absent when the name itself was refused
        allowed = VULNERABILITIES[name].types if name else ()
        unknown = [kind for kind in types or [] if name and kind not in allowed]
        if unknown:
            raise ValueError(f"{name} has no type {unknown[0]!r}; its types: {_listed(allowed)}")
        return types

    @property
    def deepteam_name(self) -> str:
        """The name DeepTeam's results give it ("Excessive Agency")."""
        return VULNERABILITIES[self.name].name


def _option(used_by: str) -> Any:
    """An option of DeepTeam's attack classes, passed to them as it is (unset: theirs)."""
    return Field(default=None, description=f"{used_by} (DeepTeam's option; unset: its default).")


def _count(description: str, most: int, least: int = 1) -> Any:
    """A count DeepTeam takes, bounded far above its default."""
    return Field(default=None, ge=least, le=most, description=f"{description} (at most {most}).")


class AttackChoice(ConfigModel):
    """One DeepTeam attack, its weight in the draw, and the options its class takes.

    Counts are bounded far above DeepTeam's defaults (5 turns, 10 rounds, a tree 10 deep
    and 4 wide, 600 s, 4,000 characters): ``numTurns: 1000000000`` is a slip, not a plan.
    """

    name: str = Field(description="A DeepTeam attack class, e.g. PromptInjection.")
    weight: int = Field(
        default=1,
        ge=1,
        le=100,
        description="How often it is drawn for an attack, against the others (1 to 100).",
    )
    num_turns: int | None = _count("LinearJailbreaking, SequentialJailbreak, BadLikertJudge", 50)
    max_rounds: int | None = _count("CrescendoJailbreaking", 100)
    max_backtracks: int | None = _count(
        "CrescendoJailbreaking, BadLikertJudge: turns taken back", 100, least=0
    )
    max_depth: int | None = _count("TreeJailbreaking", 50)
    branching_factor: int | None = _count("TreeJailbreaking", 20)
    max_runtime: float | None = Field(
        default=None, gt=0, le=3600, description="TreeJailbreaking, s (at most 3600)."
    )
    max_retries: int | None = _count("single-turn attacks that ask the simulator again", 10)
    enable_refinement: bool | None = _option("BadLikertJudge: refine its attack")
    target_chars: int | None = _count("ContextFlooding, EmbeddedInstructionJSON", 200_000)
    target_depth: int | None = _count("EmbeddedInstructionJSON", 50)
    language: str | None = _option("Multilingual: the language the attack is written in")
    persona: str | None = _option("Roleplay, SequentialJailbreak: the persona played")
    role: str | None = _option("Roleplay, AuthorityEscalation: the role claimed")
    type: str | None = _option("SequentialJailbreak: its kind of sequence")
    category: str | None = _option("BadLikertJudge: the harm category")
    emotion: str | None = _option("EmotionalManipulation: the emotion played on")
    target_information: str | None = _option(
        "SyntheticContextInjection: what the injected context is about"
    )
    context_style: str | None = _option("SyntheticContextInjection: the context's style")
    prefix: str | None = _option("ContextFlooding: the text it floods with")
    prefix_type: str | None = _option("ContextFlooding: the kind of flooding text")
    attack_position: str | None = _option("EmbeddedInstructionJSON: where the instruction sits")

    @field_validator("name")
    @classmethod
    def _known(cls, name: str) -> str:
        if name not in ATTACKS:
            raise ValueError(
                f"unknown attack {name!r}; DeepTeam's single-turn attacks: "
                f"{_listed(a for a in ATTACKS if a not in MULTI_TURN_ATTACKS)}; "
                f"multi-turn: {_listed(MULTI_TURN_ATTACKS)}"
            )
        return name

    @model_validator(mode="after")
    def _options_it_takes(self) -> AttackChoice:
        takes = ATTACKS[self.name].options
        foreign = [option for option in self.options() if option not in takes]
        if foreign:
            accepted = _listed(_camel(option) for option in takes) or "none besides weight"
            raise ValueError(
                f"{self.name} takes no option {_camel(foreign[0])!r}; its options: {accepted}"
            )
        return self

    def options(self) -> dict[str, Any]:
        """The class's constructor arguments set here, weight aside (snake_case)."""
        return self.model_dump(exclude={"name", "weight"}, exclude_none=True)

    @property
    def deepteam_name(self) -> str:
        """The name DeepTeam's results give it ("Prompt Injection")."""
        return ATTACKS[self.name].name

    @property
    def multi_turn(self) -> bool:
        """Whether it talks to the workflow in turns (played again for every version)."""
        return ATTACKS[self.name].multi_turn


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(part.title() for part in rest)


class FrameworkChoice(ConfigModel):
    """A DeepTeam framework: its risk categories' vulnerabilities and attacks."""

    name: FrameworkName = Field(
        description="A DeepTeam framework: its vulnerabilities and attacks, e.g. owasp_top_10."
    )
    categories: list[str] | None = Field(
        default=None, min_length=1, description="Its risk categories to run (default: all)."
    )

    @model_validator(mode="after")
    def _known_categories(self) -> FrameworkChoice:
        allowed = FRAMEWORKS[self.name].categories
        unknown = [name for name in self.categories or [] if name not in allowed]
        if unknown:
            raise ValueError(
                f"{self.name} has no risk category {unknown[0]!r}; its categories: "
                f"{_listed(allowed)}"
            )
        return self


def _framework_shorthand(value: Any) -> Any:
    """``framework: owasp_top_10`` is ``framework: {name: owasp_top_10}``."""
    return {"name": value} if isinstance(value, str) else value


class RedTeamConfig(ConfigModel):
    """DeepTeam's attacks on the workflow's agent, through the harness copy with mocks."""

    vulnerabilities: list[VulnerabilityChoice] | None = Field(
        default=None, min_length=1, description="What to attack (or name a framework)."
    )
    attacks: list[AttackChoice] | None = Field(
        default=None,
        min_length=1,
        description="How each attack is dressed, drawn by weight (unset: DeepTeam's plain "
        "baseline attacks).",
    )
    framework: Annotated[FrameworkChoice, BeforeValidator(_framework_shorthand)] | None = Field(
        default=None, description="A framework instead of vulnerabilities and attacks."
    )
    attacks_per_vulnerability_type: int = Field(
        default=1,
        ge=1,
        le=50,
        description="Attacks generated per vulnerability type (each played runsPerRow times).",
    )
    run_all_attacks: bool = Field(
        default=False, description="Dress every generated attack with every attack (no draw)."
    )
    purpose: NonBlank | None = Field(
        default=None,
        description="What the agent is for, which DeepTeam's attacks and judgements read "
        "(default: the agents' system messages and tools, read off the workflow).",
    )
    fail_on: BreachRate | dict[str, BreachRate] = Field(
        default=0.0,
        description="The breach rate above which a vulnerability fails the run (exit 6): "
        "one rate for all, or a rate per vulnerability.",
    )
    acts_on_the_world: bool = Field(
        default=False,
        description="Accept that a webhook target really runs every tool an attack makes the "
        "agent call (an n8n_workflow target mocks them and needs no such consent).",
    )
    seed: int | None = Field(
        default=None, description="Seed of the draw of attacks by weight (unset: random)."
    )

    @field_validator("fail_on", mode="wrap")
    @classmethod
    def _one_rate_or_a_map(
        cls, value: Any, handler: ValidatorFunctionWrapHandler
    ) -> float | dict[str, float]:
        try:
            rates: float | dict[str, float] = handler(value)
        except ValidationError:  # one message, not one per member of the union
            raise ValueError(
                "give a breach rate from 0 to 1, or one per vulnerability "
                "({ExcessiveAgency: 0.1, PromptLeakage: 0})"
            ) from None
        return rates

    @model_validator(mode="after")
    def _vulnerabilities_or_framework(self) -> RedTeamConfig:
        if (self.vulnerabilities is None) == (self.framework is None):
            raise ValueError("redTeam needs exactly one of 'vulnerabilities' or 'framework'")
        if self.framework is not None and self.attacks is not None:
            raise ValueError("a framework brings its own attacks: remove 'attacks'")
        names = [choice.name for choice in self.vulnerabilities or []]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"vulnerability {repeated[0]} is named twice: list its types once")
        return self

    @model_validator(mode="after")
    def _fail_on_named(self) -> RedTeamConfig:
        if not isinstance(self.fail_on, dict):
            return self
        if self.vulnerabilities is None:
            raise ValueError(
                "failOn: a framework's vulnerabilities are its own; give one rate for all"
            )
        named = {choice.name for choice in self.vulnerabilities}
        unknown = sorted(set(self.fail_on) - named)
        if unknown:
            raise ValueError(
                f"failOn names {unknown[0]!r}, which is not in vulnerabilities ({_listed(named)})"
            )
        return self

    def breach_limit(self, vulnerability: str) -> float:
        """The highest breach rate that passes for a vulnerability, by DeepTeam's name of it."""
        if not isinstance(self.fail_on, dict):
            return self.fail_on
        for choice in self.vulnerabilities or []:
            if choice.deepteam_name == vulnerability and choice.name in self.fail_on:
                return self.fail_on[choice.name]
        return 0.0
