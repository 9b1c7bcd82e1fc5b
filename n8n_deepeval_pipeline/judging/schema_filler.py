"""Deterministic JSON that fits a JSON schema: the dry-run judge's and the loopback judge's answers.

Values are drawn from a seed (a hash of the prompt), with rules that keep DeepEval's
metrics meaningful: numbers respect the schema's bounds; an unbounded ``score`` is 0–10
only when the prompt asks for a 0–10 scale (G-Eval) and 0–1 otherwise; yes/no answers
are "yes" or "no"; an ``answers`` list has one answer per question listed in the
prompt; choices come from sorted options (DeepEval builds some enums from sets, whose
order changes between processes); an open object gets one entry; a simulated user's turn
(DeepEval's ``simulated_input``) says which turn it is and quotes the scenario, so that a
dry or loopback simulation follows the scenario and the conversation so far; an arena's
``winner`` is one of the contestants the prompt lists.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from typing import Any

# How a free text answer begins (a placeholder, never a judgement).
PLACEHOLDER = "[dry-run] placeholder"
_TEN_SCALE = re.compile(r"\b0\s*(?:and|to|-|–)\s*10\b")
_QUESTIONS = re.compile(r"Questions:\s*(\[.*?\])\s*\n", re.S)
# DeepEval's simulator templates: the scenario line, and the conversation after its marker.
_SCENARIO = re.compile(r'^\s*Scenario: "(.*?)"\s*$', re.M | re.S)
_CONVERSATION = "Previous Conversation:"
_USER_TURN = '"role": "user"'
_QUOTED = 40  # characters of the last answer a dry user turn quotes
# DeepEval's arena lists its (masked) contestants as the keys of one JSON object.
_CONTESTANTS = re.compile(r'"arena_test_cases": \{\n((?: {4}"[^"\n]+": [^\n]*\n?)+)')
_CONTESTANT = re.compile(r'^ {4}"([^"\n]+)": ', re.M)


class _Filler:
    def __init__(self, seed: bytes, prompt: str, definitions: dict[str, Any]) -> None:
        self._seed = seed
        self._draws = 0
        self._prompt = prompt
        self._ten_scale = bool(_TEN_SCALE.search(prompt))
        self._definitions = definitions

    def _unit(self) -> float:
        digest = hashlib.sha256(self._seed + self._draws.to_bytes(4, "big")).digest()
        self._draws += 1
        return int.from_bytes(digest[:8], "big") / 2**64

    def _choice(self, options: list[Any]) -> Any:
        return sorted(options, key=str)[int(self._unit() * len(options))]

    def value(self, schema: dict[str, Any], name: str = "") -> Any:
        if "$ref" in schema:
            return self.value(self._definitions[schema["$ref"].rsplit("/", 1)[-1]], name)
        for key in ("anyOf", "oneOf", "allOf"):
            if key in schema:
                options = [s for s in schema[key] if s.get("type") != "null"]
                return self.value(options[0], name) if options else None
        if "enum" in schema:
            return self._choice(list(schema["enum"]))
        if "const" in schema:
            return schema["const"]
        return self._typed(schema, name)

    def _typed(self, schema: dict[str, Any], name: str) -> Any:
        kind = schema.get("type", "string")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "string")
        if kind == "object":
            properties = schema.get("properties")
            if properties:
                return {key: self.value(sub, key) for key, sub in properties.items()}
            extra = schema.get("additionalProperties")
            return {"fact": self.value(extra, name)} if isinstance(extra, dict) else {}
        if kind == "array":
            items = schema.get("items", {"type": "string"})
            return [self.value(items, name) for _ in range(self._list_length(schema, name))]
        if kind in ("number", "integer"):
            return self._number(schema, name, kind == "integer")
        if kind == "boolean":
            return self._unit() < 0.5
        if name in ("answers", "verdict") or name.endswith("_verdict"):
            return self._choice(["yes", "no"])
        if name == "winner":
            listed = _CONTESTANTS.search(self._prompt)
            if listed:
                return self._choice(_CONTESTANT.findall(listed[1]))
        if name == "simulated_input":
            return self._user_turn()
        return f"{PLACEHOLDER} {name}"

    def _user_turn(self) -> str:
        """The next user turn of a simulated conversation.

        Its number, its scenario and the start of the answer it follows, so that a new
        answer is followed by a new turn.
        """
        scenarios = _SCENARIO.findall(self._prompt)  # the example's first, the golden's last
        scenario = scenarios[-1] if scenarios else "the scenario"
        marker = self._prompt.rfind(_CONVERSATION)  # the example's first, the real one last
        if marker == -1:
            return f"[dry-run] user turn 1: {scenario}"
        conversation = self._prompt[marker + len(_CONVERSATION) :]
        earlier = conversation.count(_USER_TURN)
        answer = _last_answer(conversation)
        after = f" (after: {answer[:_QUOTED]})" if answer else ""
        return f"[dry-run] user turn {earlier + 1}: {scenario}{after}"

    def _list_length(self, schema: dict[str, Any], name: str) -> int:
        if name == "answers":
            asked = _QUESTIONS.findall(self._prompt)
            if asked:
                try:
                    return len(ast.literal_eval(asked[-1]))
                except (ValueError, SyntaxError):
                    pass
        length = 1 + int(self._unit() * 3)
        return int(min(max(length, schema.get("minItems", 0)), schema.get("maxItems", length)))

    def _number(self, schema: dict[str, Any], name: str, integer: bool) -> float | int:
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        high = schema.get("maximum", schema.get("exclusiveMaximum"))
        if low is None and high is None and "score" in name:
            low, high = (0, 10) if self._ten_scale else (0, 1)
        low = 0 if low is None else low
        high = 1 if high is None else high
        if integer:
            return int(low + int(self._unit() * (high - low + 1)))
        return round(low + self._unit() * (high - low), 3)


def _last_answer(conversation: str) -> str:
    """The last assistant turn of the conversation DeepEval's template serialised."""
    start, end = conversation.find("["), conversation.rfind("]")
    try:
        turns = json.loads(conversation[start : end + 1]) if start != -1 else []
    except json.JSONDecodeError:
        return ""
    answers = [
        str(turn.get("content") or "")
        for turn in turns
        if isinstance(turn, dict) and turn.get("role") == "assistant"
    ]
    return answers[-1] if answers else ""


def fill_schema(schema: dict[str, Any], seed: bytes, prompt: str = "") -> Any:
    """A value that validates against ``schema``, the same for the same seed and prompt."""
    return _Filler(seed, prompt, schema.get("$defs", {})).value(schema)
