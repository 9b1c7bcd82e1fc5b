"""DeepEval's own path, for the parity suites: ``metric.measure()`` with DeepEval's own model.

Run as ``python -m tests.judging.deepeval_reference SPEC OUT`` in a worker's environment
(DeepEval reads its settings at import). SPEC names the judge (base URL, model; or, for
the provider suites, ``provider`` and the arguments of DeepEval's class for it, as a
DeepEval user would write them) and the metrics (slug and config); every metric is
measured on test cases written here by hand, as a DeepEval user would write them for the
same n8n run: they do not come from the pipeline's test-case builder. OUT receives
``{label: score or error}``. A list of such SPECs gives a list of results.

``python -m tests.judging.deepeval_reference schemas SLUGS OUT`` writes the JSON schemas
of the answers those metrics ask for (DeepEval keeps them in each metric's ``schema``
module): what a loopback judge answers a request that carries no schema with.
"""

from __future__ import annotations

import base64
import importlib
import json
import sys
from pathlib import Path
from typing import Any
from unittest import mock

from deepeval.models import OpenAIModel
from deepeval.test_case import (
    ArenaTestCase,
    Contestant,
    ConversationalTestCase,
    LLMTestCase,
    MCPServer,
    MCPToolCall,
    MLLMImage,
    ToolCall,
    Turn,
)
from deepeval.test_case.llm_test_case import ToolCallType
from mcp.types import CallToolResult, Prompt, PromptArgument, Resource, TextContent, Tool
from pydantic import BaseModel

from n8n_deepeval_pipeline.metrics.catalog import CATALOG
from n8n_deepeval_pipeline.worker.metric_builder import construct_metric, import_implementation
from tests.png_images import BLUE_SQUARE, CHART, RED_SQUARE

# provider → DeepEval's own class for it
CLASSES = {
    "openai": "deepeval.models.llms.openai_model.OpenAIModel",
    "azure-openai": "deepeval.models.llms.azure_model.AzureOpenAIModel",
    "anthropic": "deepeval.models.llms.anthropic_model.AnthropicModel",
    "gemini": "deepeval.models.llms.gemini_model.GeminiModel",
    "ollama": "deepeval.models.llms.ollama_model.OllamaModel",
    "openrouter": "deepeval.models.llms.openrouter_model.OpenRouterModel",
    "deepseek": "deepeval.models.llms.deepseek_model.DeepSeekModel",
    "bedrock": "deepeval.models.llms.amazon_bedrock_model.AmazonBedrockModel",
    # what `deepeval set-local-model` configures: any server with OpenAI's API
    "local-model": "deepeval.models.llms.local_model.LocalModel",
}

INPUT = "Order A3301 has 2 sleeping bags at 89.50 each. What is the total?"
OUTPUT = "The two sleeping bags cost 179 dollars in total [1]."
RETRIEVED = ["Order A3301: 2 sleeping bags at 89.50 each."]
LOOKUP = ToolCall(
    name="order_lookup",
    input_parameters={"orderId": "A3301"},
    output='[{"id":"A3301","items":[{"name":"sleeping bag","qty":2,"price":89.5}]}]',
    reasoning="Invoking: `order_lookup` with `{'orderId': 'A3301'}`",
)
CALCULATOR = ToolCall(
    name="calculator",
    input_parameters={"input": "2 * 89.5"},
    output="179",
    reasoning="Invoking: `calculator`",
)
# The agent had three tools; it called two.
TOOLS = {
    "calculator": "Multiplies and adds.",
    "order_lookup": "Finds an order by its id.",
    "refund": "Creates a refund.",
}
HISTORY = [
    ("human", "Hi, I ordered sleeping bags, order A3301."),
    ("ai", "Thanks! How can I help with order A3301?"),
    ("human", "What is the total for the two bags?"),
]


def _span(kind: str, name: str, span_input: Any, output: Any) -> dict[str, Any]:
    # Written out here, not imported: the reference must not share the pipeline's builder.
    return {
        "name": name,
        "type": kind,
        "input": span_input,
        "output": output,
        "tools_called": [],
        "available_tools": [],
        "agent_handoffs": [],
        "children": [],
    }


def _trace() -> dict[str, Any]:
    """The agent's run as DeepEval's LangChain integration would have traced it."""
    definitions = [
        {
            "role": "Tool Input",
            "content": str(
                {"type": "function", "function": {"name": name, "description": description}}
            ),
        }
        for name, description in sorted(TOOLS.items())
    ]
    messages = [
        *({"role": role, "content": content} for role, content in HISTORY),
        {"role": "human", "content": INPUT},
        *definitions,
    ]
    root = _span("agent", "n8n_ai_agent", INPUT, OUTPUT)
    root["tools_called"] = ["order_lookup", "calculator"]
    root["available_tools"] = sorted(TOOLS)
    root["children"] = [
        _span("llm", "reasoning_1", messages, LOOKUP.reasoning),
        _span("tool", "order_lookup", LOOKUP.input_parameters, LOOKUP.output),
        _span("llm", "reasoning_2", INPUT, CALCULATOR.reasoning),
        _span("tool", "calculator", CALCULATOR.input_parameters, CALCULATOR.output),
    ]
    return root


def single_turn_case() -> LLMTestCase:
    """The run as one test case, its trace attached."""
    case = LLMTestCase(
        input=INPUT,
        actual_output=OUTPUT,
        expected_output="179",
        context=["Order A3301 contains 2 sleeping bags priced 89.50 each."],
        retrieval_context=RETRIEVED,
        tools_called=[LOOKUP, CALCULATOR],
        expected_tools=[ToolCall(name="order_lookup"), ToolCall(name="calculator")],
    )
    case._trace_dict = _trace()
    return case


def conversation_case() -> ConversationalTestCase:
    """The chat session: the memory's four messages; the run's tools on the last answer."""
    return ConversationalTestCase(
        turns=[
            Turn(role="user", content=HISTORY[0][1]),
            Turn(role="assistant", content=HISTORY[1][1], retrieval_context=RETRIEVED),
            Turn(role="user", content=HISTORY[2][1]),
            Turn(
                role="assistant",
                content=OUTPUT,
                retrieval_context=RETRIEVED,
                tools_called=[LOOKUP, CALCULATOR],
            ),
        ],
        chatbot_role="a polite support agent for Acme Outdoor",
        expected_outcome="The customer learns the order total.",
        scenario="A customer asks for an order total.",
    )


# An agent with an MCP Client Tool node "Weather MCP" (the server's name in the test case).
WEATHER = "Weather MCP"
CITY_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
FORECAST_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city", "days"],
}
SUNNY = "Sunny in Paris, 21C"
FORECAST = "Sun on Monday and Tuesday, rain on Wednesday"


def weather_server() -> MCPServer:
    """The server as ``list_tools``, ``list_resources`` and ``list_prompts`` give it."""
    return MCPServer(
        server_name=WEATHER,
        transport="streamable-http",
        available_tools=[
            Tool(
                name="get_weather",
                description="Current weather for a city.",
                input_schema=CITY_SCHEMA,
            ),
            Tool(
                name="get_forecast",
                description="The forecast for a city, day by day.",
                input_schema=FORECAST_SCHEMA,
            ),
        ],
        available_resources=[
            Resource(uri="weather://cities", name="cities", description="Cities it knows.")
        ],
        available_prompts=[
            Prompt(
                name="trip_advice",
                description="Advice for a trip.",
                arguments=[PromptArgument(name="city", required=True)],
            )
        ],
    )


def mcp_case() -> LLMTestCase:
    """One run: the agent asked the MCP server for the weather."""
    result = CallToolResult(
        content=[TextContent(type="text", text=SUNNY)], structured_content={"result": SUNNY}
    )
    return LLMTestCase(
        input="What is the weather in Paris?",
        actual_output="It is sunny in Paris, 21 degrees.",
        mcp_servers=[weather_server()],
        mcp_tools_called=[MCPToolCall(name="get_weather", args={"city": "Paris"}, result=result)],
    )


def mcp_conversation_case() -> ConversationalTestCase:
    """Two questions, each answered after an MCP call: the call on a turn of its own."""

    def called(tool: str, args: dict[str, Any], output: str) -> Turn:
        return Turn(
            role="assistant",
            content=f"calls {tool} on {WEATHER}",
            tools_called=[
                ToolCall(name=tool, type=ToolCallType.MCP, input_parameters=args, output=output)
            ],
        )

    return ConversationalTestCase(
        turns=[
            Turn(role="user", content="What is the weather in Paris?"),
            called("get_weather", {"city": "Paris"}, SUNNY),
            Turn(role="assistant", content="It is sunny in Paris, 21 degrees."),
            Turn(role="user", content="And for the next three days?"),
            called("get_forecast", {"city": "Paris", "days": 3}, FORECAST),
            Turn(role="assistant", content="Sun on Monday and Tuesday, then rain."),
        ],
        mcp_servers=[weather_server()],
    )


def _image(png: bytes) -> MLLMImage:
    return MLLMImage(dataBase64=base64.b64encode(png).decode("ascii"), mimeType="image/png")


DRAWN = "Draw a red square in the middle of a white image."
EDIT = "Make the square blue."
CHART_TEXT = ("Sales by month, as a chart:", "Sales rose by 20% in March, the green bar.")


def image_case(slug: str) -> LLMTestCase:
    """An image workflow's run: an image made, an image edited, or an answer with a chart."""
    if slug == "text_to_image":
        return LLMTestCase(input=DRAWN, actual_output=f"{_image(RED_SQUARE)}")
    if slug == "image_editing":
        return LLMTestCase(
            input=f"{EDIT}\n{_image(RED_SQUARE)}", actual_output=f"{_image(BLUE_SQUARE)}"
        )
    above, below = CHART_TEXT
    return LLMTestCase(
        input="How did sales go this quarter?",
        actual_output=f"{above}\n{_image(CHART)}\n{below}",
    )


def deepeval_model(spec: dict[str, Any]) -> Any:
    """DeepEval's own model for the judge the spec names, built as its user would."""
    if "provider" not in spec:
        return OpenAIModel(
            model=spec["model"], base_url=spec["base_url"], api_key="sk-parity", temperature=0
        )
    module, _, name = CLASSES[spec["provider"]].rpartition(".")
    model = getattr(importlib.import_module(module), name)(**spec["arguments"])
    for attribute, value in spec.get("attributes", {}).items():
        setattr(model, attribute, value)  # e.g. DeepSeek's fixed base URL, for the test server
    return model


def answer_schemas(slugs: list[str]) -> list[dict[str, Any]]:
    """The JSON schemas of every answer these catalog metrics ask their judge for."""
    schemas = []
    for slug in slugs:
        cls = import_implementation(CATALOG[slug])
        module = importlib.import_module(f"{cls.__module__.rpartition('.')[0]}.schema")
        schemas += [
            value.model_json_schema()
            for value in vars(module).values()
            if isinstance(value, type)
            and issubclass(value, BaseModel)
            and value.__module__ == module.__name__
        ]
    return schemas


# Arena G-Eval's other side: the same row's run in a variant with another model, which
# looked the order up and did not use the calculator.
OPPONENT_OUTPUT = "It comes to 179.00 for both bags."


def arena_case(opponent_first: bool) -> ArenaTestCase:
    """The run ("base") and the variant's run of the same row ("nano") as contestants."""
    base = single_turn_case()
    nano = LLMTestCase(
        input=base.input,
        actual_output=OPPONENT_OUTPUT,
        expected_output=base.expected_output,
        context=base.context,
        retrieval_context=base.retrieval_context,
        tools_called=[LOOKUP],
        expected_tools=base.expected_tools,
    )
    contestants = [Contestant(name="base", test_case=base), Contestant(name="nano", test_case=nano)]
    return ArenaTestCase(contestants=contestants[::-1] if opponent_first else contestants)


def _arena_score(instance: Any, opponent_first: bool) -> float:
    """1 if "base" wins. DeepEval shuffles the contestants with ``random``: here, as in
    the pipeline, they keep the order given (the pipeline swaps them on odd runs)."""
    with mock.patch("random.shuffle", lambda items: None):
        winner = instance.measure(arena_case(opponent_first))
    return 1.0 if winner == "base" else 0.0


def case_for(entry: Any) -> Any:
    """The hand-written test case a catalog metric is measured on."""
    if entry.category == "mcp":
        return mcp_conversation_case() if entry.needs_turns else mcp_case()
    if entry.category == "images":
        return image_case(entry.slug)
    return conversation_case() if entry.needs_turns else single_turn_case()


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    """Each metric's score (or error) with DeepEval's own model as the judge."""
    model = deepeval_model(spec)
    scores: dict[str, Any] = {}
    for metric in spec["metrics"]:
        entry = CATALOG[metric["config"]["metric"]]
        config = entry.config_model.model_validate(metric["config"])
        instance = construct_metric(entry, config, model)
        case = case_for(entry)
        try:
            if entry.head_to_head:
                scores[metric["label"]] = _arena_score(
                    instance, metric.get("opponent_first", False)
                )
                continue
            instance.measure(case)
            scores[metric["label"]] = instance.score
        except Exception as error:
            scores[metric["label"]] = f"error: {type(error).__name__}: {error}"
    return scores


if __name__ == "__main__":
    if sys.argv[1] == "schemas":
        result: Any = answer_schemas(sys.argv[2].split(","))
        Path(sys.argv[3]).write_text(json.dumps(result), encoding="utf-8")
        sys.exit()
    spec_file, out_file = sys.argv[1:3]
    specs = json.loads(Path(spec_file).read_text(encoding="utf-8"))
    result = [measure(spec) for spec in specs] if isinstance(specs, list) else measure(specs)
    Path(out_file).write_text(json.dumps(result), encoding="utf-8")
