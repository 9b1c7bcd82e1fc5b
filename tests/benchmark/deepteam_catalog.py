"""DeepTeam's own catalog, read from its classes: ``python -m tests.benchmark.deepteam_catalog``.

Prints JSON: every vulnerability class with its name and allowed types, every attack class
with its name, whether it is multi-turn and its constructor's arguments, every framework
class with its risk categories. Run in an environment with DeepTeam's telemetry off.
"""

from __future__ import annotations

import inspect
import json

import deepteam.attacks.multi_turn as multi_turn
import deepteam.attacks.single_turn as single_turn
import deepteam.frameworks as frameworks
import deepteam.vulnerabilities as vulnerabilities
from deepteam.attacks.base_attack import BaseAttack
from deepteam.attacks.multi_turn import BaseMultiTurnAttack
from deepteam.vulnerabilities import BaseVulnerability, CustomVulnerability

# What the pipeline sets itself, or does not offer (models, turn-level attacks).
NOT_OPTIONS = {"self", "weight", "simulator_model", "turn_level_attacks", "json_template"}


def catalog() -> dict:
    found: dict = {"vulnerabilities": {}, "attacks": {}, "frameworks": {}}
    for name in vulnerabilities.__all__:
        cls = getattr(vulnerabilities, name)
        concrete = cls not in (BaseVulnerability, CustomVulnerability)
        if inspect.isclass(cls) and issubclass(cls, BaseVulnerability) and concrete:
            found["vulnerabilities"][name] = [cls.name, list(cls.ALLOWED_TYPES)]
    for module in (single_turn, multi_turn):
        for name in module.__all__:
            cls = getattr(module, name)
            abstract = cls in (BaseAttack, BaseMultiTurnAttack) or name == "BaseSingleTurnAttack"
            if inspect.isclass(cls) and issubclass(cls, BaseAttack) and not abstract:
                options = [
                    parameter
                    for parameter in inspect.signature(cls.__init__).parameters
                    if parameter not in NOT_OPTIONS
                ]
                found["attacks"][name] = [cls.name, issubclass(cls, BaseMultiTurnAttack), options]
    for name in frameworks.__all__:
        if name == "RedTeamingFramework":
            continue
        framework = getattr(frameworks, name)()
        if not framework._has_dataset:  # a dataset framework downloads its attacks
            found["frameworks"][name] = [category.name for category in framework.risk_categories]
    return found


if __name__ == "__main__":
    print(json.dumps(catalog()))
