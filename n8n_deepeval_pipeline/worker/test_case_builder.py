"""Build DeepEval test cases from n8n-shaped items (worker side only)."""

from __future__ import annotations

from typing import Any

from deepeval.test_case import (
    ArenaTestCase,
    Contestant,
    ConversationalTestCase,
    LLMTestCase,
    ToolCall,
    Turn,
)

from n8n_deepeval_pipeline.evaluation import EvaluationItem
from n8n_deepeval_pipeline.metrics.entry import MetricEntry
from n8n_deepeval_pipeline.metrics.options import ItemField, MetricConfig
from n8n_deepeval_pipeline.n8n_data.agent_steps import (
    IntermediateStep,
    ToolCallData,
    parse_intermediate_steps,
    synthetic_trace,
    tool_calls,
)
from n8n_deepeval_pipeline.n8n_data.conversation import (
    TurnData,
    enrich_turns,
    parse_conversation,
    single_exchange,
)
from n8n_deepeval_pipeline.n8n_data.images import markers_in
from n8n_deepeval_pipeline.n8n_data.mcp_calls import mcp_calls
from n8n_deepeval_pipeline.worker.image_fields import register_images
from n8n_deepeval_pipeline.worker.mcp_fields import deepeval_servers, mcp_tool_call, mcp_turns

# Where each field comes from, in the words of a benchmark file.
FIELD_SOURCES: dict[ItemField, str] = {
    "input": "'input' (dataset.columnMapping.input)",
    "actual_output": "'output' (the workflow's output for this run)",
    "expected_output": "'expectedOutput' (dataset.columnMapping.expectedOutput)",
    "context": "'context' (dataset.columnMapping.context)",
    "retrieval_context": "'retrievalContext' (dataset.columnMapping.retrievalContext)",
    "tools_called": "'intermediateSteps' (AI Agent with Return Intermediate Steps on)",
    "expected_tools": "'expectedTools' (dataset.columnMapping.expectedTools)",
    "trace": "'intermediateSteps' (AI Agent with Return Intermediate Steps on; an empty "
    "list is a trace without tool calls)",
    "turns": "'turns' (the chat memory: recorded turns or dataset.columnMapping.turns; "
    "without them, the run's 'input' and 'output')",
    "turn_retrieval_context": "'retrievalContext' on assistant turns (in memory messages, "
    "the metric's retrievalContext, or dataset.columnMapping.retrievalContext)",
    "chatbot_role": "'chatbotRole' (metric config or dataset.columnMapping.chatbotRole)",
    "expected_outcome": "'expectedOutcome' (metric config or "
    "dataset.columnMapping.expectedOutcome)",
    "scenario": "'scenario' (dataset.columnMapping.scenario)",
    "opponent": "the output of the same row's run in the version it is judged against (the "
    "metric's 'against')",
    "mcp_servers": "the MCP servers of the agent's MCP Client Tool nodes (listed from each "
    "server, target.mcpServers, or 'mcpServers' in recorded outputs)",
    "input_images": "images in the input (dataset.columnMapping.inputImages)",
    "output_images": "images in the output (n8n binary data, data URIs or markdown images in "
    "the answer, or 'images' in recorded outputs)",
}


class MissingInputError(ValueError):
    """A field the metric needs is absent; the message names it and where it comes from."""

    def __init__(self, fields: list[ItemField]) -> None:
        self.fields = fields
        names = ", ".join(FIELD_SOURCES[field] for field in fields)
        super().__init__(f"missing input: {names}")


def _run_exchange(item: EvaluationItem) -> list[TurnData]:
    """The run's input and output as one exchange; empty if either is missing."""
    if item.input in (None, "") or item.actual_output is None:
        return []
    return single_exchange(str(item.input), item.actual_output)


class _Prepared:
    """The item's n8n data parsed once: steps, tool calls, turns, test-case options."""

    def __init__(self, item: EvaluationItem, config: MetricConfig) -> None:
        self.item = item
        self.steps: list[IntermediateStep] | None = parse_intermediate_steps(
            item.intermediate_steps
        )
        self.calls: list[ToolCallData] | None = (
            tool_calls(self.steps) if self.steps is not None else None
        )
        turns = parse_conversation(item.turns) or _run_exchange(item)
        # A retrieval context in the metric's config (Turn Faithfulness) replaces the row's.
        turn_context = getattr(config, "retrieval_context", None) or item.retrieval_context
        self.turns: list[TurnData] | None = (
            enrich_turns(turns, self.calls, turn_context) if turns else None
        )
        self.chatbot_role = getattr(config, "chatbot_role", None) or item.chatbot_role
        self.expected_outcome = getattr(config, "expected_outcome", None) or item.expected_outcome

    def present(self) -> dict[ItemField, bool]:
        item = self.item
        return {
            "input": item.input not in (None, ""),
            "actual_output": item.actual_output is not None,
            "expected_output": item.expected_output is not None,
            # An empty list is present: the bot answered without context, which is judged.
            "context": item.context is not None,
            "retrieval_context": item.retrieval_context is not None,
            "tools_called": self.steps is not None,
            "expected_tools": item.expected_tools is not None,
            # An agent that called no tool (``[]``) is judged on a trace without tool spans.
            "trace": self.steps is not None,
            "turns": bool(self.turns),
            "turn_retrieval_context": any(
                turn.retrieval_context for turn in self.turns or [] if turn.role == "assistant"
            ),
            "chatbot_role": bool(self.chatbot_role),
            "expected_outcome": bool(self.expected_outcome),
            "scenario": bool(item.scenario),
            "opponent": item.head_to_head is not None
            and item.head_to_head.opponent_output is not None,
            "mcp_servers": bool(item.mcp_servers),
            "input_images": bool(markers_in(str(item.input or ""))),
            "output_images": bool(markers_in(item.actual_output)),
        }


def as_tool_call(call: ToolCallData) -> ToolCall:
    """A tool call as DeepEval's ``ToolCall`` (test cases and simulated turns)."""
    return ToolCall(
        name=call.name,
        input_parameters=call.input_parameters,
        output=call.output,
        reasoning=call.reasoning,
    )


def _mcp_fields(prepared: _Prepared) -> dict[str, Any]:
    """The MCP servers and MCP calls of the run, when the agent had MCP servers."""
    servers = prepared.item.mcp_servers
    if not servers:
        return {}
    calls = mcp_calls(prepared.calls or [], servers)
    return {
        "mcp_servers": deepeval_servers(servers),
        "mcp_tools_called": [mcp_tool_call(call) for call in calls] or None,
    }


def _llm_test_case(prepared: _Prepared) -> LLMTestCase:
    item = prepared.item
    register_images(item.images or [], str(item.input or ""), item.actual_output)
    test_case = LLMTestCase(
        input=str(item.input) if item.input is not None else "",
        actual_output=item.actual_output,
        expected_output=item.expected_output,
        context=item.context,
        retrieval_context=item.retrieval_context,
        tools_called=[as_tool_call(call) for call in prepared.calls]
        if prepared.calls is not None
        else None,
        expected_tools=[ToolCall(name=name) for name in item.expected_tools]
        if item.expected_tools is not None
        else None,
        **_mcp_fields(prepared),
    )
    if prepared.steps is not None:
        test_case._trace_dict = synthetic_trace(
            prepared.steps,
            item.input,
            item.actual_output,
            item.available_tools,
            _history(prepared.turns or [], item),
        )
    return test_case


def _history(turns: list[TurnData], item: EvaluationItem) -> list[dict[str, str]]:
    """The session's messages before this run's exchange, as DeepEval's LangChain traces say."""
    earlier = list(turns)
    if earlier and earlier[-1].role == "assistant" and earlier[-1].content == item.actual_output:
        earlier.pop()
    if earlier and earlier[-1].role == "user" and earlier[-1].content == str(item.input):
        earlier.pop()
    return [{"role": "human" if t.role == "user" else "ai", "content": t.content} for t in earlier]


def _turn(turn: TurnData) -> Turn:
    return Turn(
        role=turn.role,
        content=turn.content,
        retrieval_context=turn.retrieval_context,
        tools_called=[as_tool_call(call) for call in turn.tools_called]
        if turn.tools_called
        else None,
    )


def _conversational_test_case(prepared: _Prepared, mcp: bool) -> ConversationalTestCase:
    """The conversation; ``mcp``: for an MCP metric, each answer's MCP calls a turn ahead."""
    servers = prepared.item.mcp_servers
    turns = prepared.turns or []
    register_images(prepared.item.images or [], *(turn.content for turn in turns))
    return ConversationalTestCase(
        turns=mcp_turns(turns, servers, _turn) if mcp and servers else [_turn(t) for t in turns],
        chatbot_role=prepared.chatbot_role,
        expected_outcome=prepared.expected_outcome,
        scenario=prepared.item.scenario,
        mcp_servers=deepeval_servers(servers) if mcp and servers else None,
    )


def check_inputs(entry: MetricEntry, config: MetricConfig, item: EvaluationItem) -> _Prepared:
    """The item parsed for this metric; MissingInputError if a needed field is absent."""
    prepared = _Prepared(item, config)
    present = prepared.present()
    missing = [field for field in entry.fields_needed(config) if not present[field]]
    if missing:
        raise MissingInputError(missing)
    return prepared


def build_test_case(entry: MetricEntry, config: MetricConfig, item: EvaluationItem) -> Any:
    """The test case the metric reads; MissingInputError if a needed field is absent."""
    prepared = check_inputs(entry, config, item)
    if entry.needs_turns:
        return _conversational_test_case(prepared, "mcp_servers" in entry.required_fields)
    return _llm_test_case(prepared)


def build_arena_test_case(
    entry: MetricEntry, config: MetricConfig, item: EvaluationItem
) -> ArenaTestCase:
    """The run and its opponent's as DeepEval's contestants, in the order the plan chose.

    Both sides share the row (input, expected output, contexts); each has its own output
    and tool calls. MissingInputError if a needed field is absent on either side.
    """
    prepared = check_inputs(entry, config, item)
    sides = item.head_to_head
    assert sides is not None  # check_inputs: the opponent is there
    theirs = item.model_copy(
        update={
            "actual_output": sides.opponent_output,
            "intermediate_steps": sides.opponent_steps,
            "turns": None,  # the row's history and the opponent's own exchange
        }
    )
    try:
        opponent = check_inputs(entry, config, theirs)
    except MissingInputError:
        raise MissingInputError(["opponent"]) from None  # its steps, when they are judged
    contestants = [
        Contestant(name=sides.name, test_case=_llm_test_case(prepared)),
        Contestant(name=sides.opponent, test_case=_llm_test_case(opponent)),
    ]
    return ArenaTestCase(contestants=contestants[::-1] if sides.opponent_first else contestants)
