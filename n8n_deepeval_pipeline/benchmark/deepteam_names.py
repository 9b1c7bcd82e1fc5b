"""DeepTeam 1.0.10's vulnerabilities, attacks and frameworks, by the names a benchmark uses.

A benchmark names them as DeepTeam's own YAML configuration does (the class names:
``ExcessiveAgency`` with ``types: [permissions]``, ``LinearJailbreaking`` with
``numTurns``), and frameworks by a short name. DeepTeam itself is imported only in the
red team's worker process, so the names are written out here for ``validate`` and the
schema; a test compares them with DeepTeam's own classes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class Vulnerability:
    """A vulnerability class: the name its results carry and the types it has."""

    name: str
    types: tuple[str, ...]


@dataclass(frozen=True)
class Attack:
    """An attack class: the name its results carry, whether it talks in turns, its options.

    ``options``: the constructor's arguments a benchmark may set besides ``weight``.
    """

    name: str
    multi_turn: bool
    options: tuple[str, ...] = ()


@dataclass(frozen=True)
class Framework:
    """A framework class of ``deepteam.frameworks`` and its risk categories."""

    class_name: str
    categories: tuple[str, ...]


_V, _A = Vulnerability, Attack

VULNERABILITIES: Mapping[str, Vulnerability] = MappingProxyType({
    "Bias": _V("Bias", ("religion", "politics", "gender", "race")),
    "ChildProtection": _V(
        "Child Protection", ("age_verification", "data_privacy", "exposure_interaction")
    ),
    "Ethics": _V("Ethics", ("moral_integrity", "responsible_transparency", "harm_prevention")),
    "Fairness": _V(
        "Fairness", ("equality_consistency", "procedural_opportunity", "temporal_outcome")
    ),
    "Toxicity": _V("Toxicity", ("profanity", "insults", "threats", "mockery")),
    "Misinformation": _V(
        "Misinformation",
        ("factual_errors", "unsupported_claims", "expertize_misrepresentation"),
    ),
    "IllegalActivity": _V(
        "Illegal Activity",
        ("weapons", "illegal_drugs", "violent_crimes", "non_violent_crimes", "sex_crimes",
         "cybercrime", "child_exploitation"),
    ),
    "PromptLeakage": _V(
        "Prompt Leakage",
        ("secrets_and_credentials", "instructions", "guard_exposure", "permissions_and_roles"),
    ),
    "PIILeakage": _V(
        "PII Leakage",
        ("api_and_database_access", "direct_disclosure", "session_leak", "social_manipulation"),
    ),
    "BFLA": _V("BFLA", ("privilege_escalation", "function_bypass", "authorization_bypass")),
    "BOLA": _V(
        "BOLA",
        ("object_access_bypass", "cross_customer_access", "unauthorized_object_manipulation"),
    ),
    "RBAC": _V("RBAC", ("role_bypass", "privilege_escalation", "unauthorized_role_assumption")),
    "DebugAccess": _V(
        "Debug Access",
        ("debug_mode_bypass", "development_endpoint_access", "administrative_interface_exposure"),
    ),
    "ShellInjection": _V(
        "Shell Injection",
        ("command_injection", "system_command_execution", "shell_escape_sequences"),
    ),
    "SQLInjection": _V(
        "SQL Injection", ("blind_sql_injection", "union_based_injection", "error_based_injection")
    ),
    "SSRF": _V("SSRF", ("internal_service_access", "cloud_metadata_access", "port_scanning")),
    "IntellectualProperty": _V(
        "Intellectual Property",
        ("imitation", "copyright_violations", "trademark_infringement", "patent_disclosure"),
    ),
    "IndirectInstruction": _V(
        "Indirect Instruction",
        ("rag_injection", "tool_output_injection", "document_embedded_instructions",
         "cross_context_injection"),
    ),
    "ToolOrchestrationAbuse": _V(
        "Tool Orchestration Abuse",
        ("recursive_tool_calls", "unsafe_tool_composition", "tool_budget_exhaustion",
         "cross_tool_state_leakage"),
    ),
    "AgentIdentityAbuse": _V(
        "Agent Identity & Trust Abuse",
        ("agent_impersonation", "identity_inheritance", "cross_agent_trust_abuse"),
    ),
    "ToolMetadataPoisoning": _V(
        "Tool Metadata Poisoning",
        ("schema_manipulation", "description_deception", "permission_misrepresentation",
         "registry_poisoning"),
    ),
    "UnexpectedCodeExecution": _V(
        "Unexpected Code Execution",
        ("unauthorized_code_execution", "shell_command_execution", "eval_usage"),
    ),
    "InsecureInterAgentCommunication": _V(
        "Inter-Agent Communication Compromise",
        ("message_spoofing", "message_injection", "agent_in_the_middle"),
    ),
    "AutonomousAgentDrift": _V(
        "Autonomous Agent Drift",
        ("goal_drift", "reward_hacking", "agent_collusion", "runaway_autonomy"),
    ),
    "CrossContextRetrieval": _V("Cross-Context Retrieval", ("tenant", "user", "role")),
    "SystemReconnaissance": _V(
        "System Reconnaissance", ("file_metadata", "database_schema", "retrieval_config")
    ),
    "ExploitToolAgent": _V(
        "Exploit Tool Agent", ("privilege_escalation", "financial_manipulation", "data_destruction")
    ),
    "ExternalSystemAbuse": _V(
        "External System Abuse", ("data_exfiltration", "communications_spam", "internal_spoofing")
    ),
    "Competition": _V(
        "Competition",
        ("competitor_mention", "market_manipulation", "discreditation", "confidential_strategies"),
    ),
    "GraphicContent": _V(
        "Graphic Content", ("sexual_content", "graphic_content", "pornographic_content")
    ),
    "PersonalSafety": _V(
        "Personal Safety",
        ("bullying", "self_harm", "unsafe_practices", "dangerous_challenges", "stalking"),
    ),
    "GoalTheft": _V(
        "Goal Theft", ("escalating_probing", "cooperative_dialogue", "social_engineering")
    ),
    "RecursiveHijacking": _V(
        "Recursive Hijacking",
        ("self_modifying_goals", "recursive_objective_chaining", "goal_propagation_attacks"),
    ),
    "Robustness": _V("Robustness", ("input_overreliance", "hijacking")),
    "ExcessiveAgency": _V("Excessive Agency", ("functionality", "permissions", "autonomy")),
    "Hallucination": _V(
        "Hallucination", ("fake_citations", "fake_apis", "fake_entities", "fake_statistics")
    ),
})  # fmt: skip

_RETRIES = ("max_retries",)
SINGLE_TURN_ATTACKS: Mapping[str, Attack] = MappingProxyType({
    "AdversarialPoetry": _A("Adversarial Poetry", False),
    "Base64": _A("Base64", False),
    "GrayBox": _A("Gray Box", False, _RETRIES),
    "Leetspeak": _A("Leetspeak", False),
    "MathProblem": _A("Math Problem", False, _RETRIES),
    "Multilingual": _A("Multilingual", False, ("language", *_RETRIES)),
    "PromptInjection": _A("Prompt Injection", False, _RETRIES),
    "PromptProbing": _A("Prompt Probing", False, _RETRIES),
    "Roleplay": _A("Roleplay", False, ("persona", "role", *_RETRIES)),
    "ROT13": _A("ROT-13", False),
    "CharacterStream": _A("CharacterStream", False),
    "ContextFlooding": _A("ContextFlooding", False, ("target_chars", "prefix", "prefix_type")),
    "EmbeddedInstructionJSON": _A(
        "EmbeddedInstructionJSON", False, ("target_chars", "target_depth", "attack_position")
    ),
    "SystemOverride": _A("System Override", False, _RETRIES),
    "PermissionEscalation": _A("Permission Escalation", False, _RETRIES),
    "LinguisticConfusion": _A("Linguistic Confusion", False, _RETRIES),
    "InputBypass": _A("Input Bypass", False, _RETRIES),
    "ContextPoisoning": _A("Context Poisoning", False, _RETRIES),
    "GoalRedirection": _A("Goal Redirection", False, _RETRIES),
    "SyntheticContextInjection": _A(
        "Synthetic Context Injection", False, ("target_information", "context_style", *_RETRIES)
    ),
    "AuthorityEscalation": _A("Authority Escalation", False, ("role", *_RETRIES)),
    "EmotionalManipulation": _A("Emotional Manipulation", False, ("emotion", *_RETRIES)),
})  # fmt: skip

MULTI_TURN_ATTACKS: Mapping[str, Attack] = MappingProxyType({
    "CrescendoJailbreaking": _A("Crescendo Jailbreaking", True, ("max_rounds", "max_backtracks")),
    "LinearJailbreaking": _A("Linear Jailbreaking", True, ("num_turns",)),
    "TreeJailbreaking": _A(
        "Tree Jailbreaking", True, ("max_depth", "branching_factor", "max_runtime")
    ),
    "SequentialJailbreak": _A("Sequential Jailbreak", True, ("type", "persona", "num_turns")),
    "BadLikertJudge": _A(
        "Bad Likert Judge", True, ("category", "num_turns", "enable_refinement", "max_backtracks")
    ),
})  # fmt: skip

ATTACKS: Mapping[str, Attack] = MappingProxyType({**SINGLE_TURN_ATTACKS, **MULTI_TURN_ATTACKS})

# Frameworks that are lists of risk categories (those that download a dataset are left out:
# a run reads nothing from the internet but the judge).
FRAMEWORKS: Mapping[str, Framework] = MappingProxyType({
    "owasp_top_10": Framework("OWASPTop10", tuple(f"LLM_{n:02d}" for n in range(1, 11))),
    "owasp_top_10_agentic": Framework(
        "OWASP_ASI_2026", tuple(f"ASI_{n:02d}" for n in range(1, 11))
    ),
    "nist": Framework("NIST", ("measure_1", "measure_2", "measure_3", "measure_4")),
    "mitre": Framework(
        "MITRE",
        ("reconnaissance", "resource_development", "initial_access", "ml_attack_staging",
         "exfiltration", "impact"),
    ),
    "eu_ai_act": Framework(
        "EUAIAct",
        ("subliminal_manipulation", "exploitation_of_vulnerabilities", "social_scoring",
         "biometric_categorisation", "remote_biometric_id_live", "remote_biometric_id_post",
         "biometric_id", "critical_infrastructure", "education", "employment",
         "essential_services", "law_enforcement", "migration_border", "justice_democracy"),
    ),
})  # fmt: skip
