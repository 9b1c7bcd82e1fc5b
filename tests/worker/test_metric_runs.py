"""Every catalog metric through its real DeepEval class (or n8n runner) in a worker,
on a realistic n8n-shaped item, with the dry-run judge where a judge is needed."""

import json

import pytest

from n8n_deepeval_pipeline import CATALOG, EvaluationItem, JudgeSpec
from n8n_deepeval_pipeline.evaluation import HeadToHead
from n8n_deepeval_pipeline.n8n_data.images import image_from_bytes
from n8n_deepeval_pipeline.n8n_data.mcp_calls import McpServer
from n8n_deepeval_pipeline.worker.test_case_builder import FIELD_SOURCES
from tests.conftest import evaluate_all, make_task
from tests.metrics.test_dag import NODES as BRANCHING_NODES
from tests.png_images import BLUE_SQUARE, CHART, RED_SQUARE
from tests.worker.prompt_recording_judge import PromptRecordingJudge

pytestmark = pytest.mark.slow

STEPS = [
    {
        "action": {
            "tool": "order_lookup",
            "toolInput": {"orderId": "A3301"},
            "log": "Invoking: `order_lookup` with `{'orderId': 'A3301'}`",
            "toolCallId": "call_1",
            "type": "tool_call",
        },
        "observation": '[{"id":"A3301","items":[{"name":"sleeping bag","qty":2,"price":89.5}]}]',
    },
    {
        "action": {"tool": "calculator", "toolInput": "2 * 89.5", "log": "Invoking: `calculator`"},
        "observation": "179",
    },
]
MEMORY = [
    {"type": "human", "data": {"content": "Hi, I ordered sleeping bags, order A3301."}},
    {"type": "ai", "data": {"content": "Thanks! How can I help with order A3301?"}},
    {"type": "human", "data": {"content": "What is the total for the two bags?"}},
    {
        "type": "ai",
        "data": {
            "content": "The two sleeping bags cost 179 dollars in total [1].",
            "additional_kwargs": {
                "retrievalContext": ["Order A3301: 2 sleeping bags at 89.50 each."]
            },
        },
    },
]
ITEM = EvaluationItem(
    input="Order A3301 has 2 sleeping bags at 89.50 each. What is the total?",
    actual_output="The two sleeping bags cost 179 dollars in total [1].",
    expected_output="179",
    context=["Order A3301 contains 2 sleeping bags priced 89.50 each."],
    retrieval_context=["Order A3301: 2 sleeping bags at 89.50 each."],
    expected_tools=["order_lookup", "calculator"],
    intermediate_steps=STEPS,
    turns=MEMORY,
    chatbot_role="a polite support agent for Acme Outdoor",
    expected_outcome="The customer learns the order total.",
    scenario="A customer asks for an order total.",
    # Arena G-Eval's other side: the same row's run in a variant with another model.
    head_to_head=HeadToHead(
        name="base",
        opponent="nano",
        opponent_output="It comes to 179.00 for both bags.",
        opponent_steps=STEPS[:1],
        opponent_first=False,
    ),
)
# An agent with an MCP Client Tool node "Weather MCP", as n8n 2.41 records its calls: the
# tool prefixed with the node's name, n8n's own `tool` key among the arguments, the node's
# items (MCP content and structured content) as the observation.
WEATHER_SERVER = McpServer(
    name="Weather MCP",
    transport="streamable-http",
    tools=[
        {"name": "get_weather", "description": "Current weather for a city.",
         "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}},
                         "required": ["city"]}},
        {"name": "get_forecast", "description": "The forecast for a city, day by day.",
         "inputSchema": {"type": "object", "properties": {"city": {"type": "string"},
                                                          "days": {"type": "integer"}},
                         "required": ["city", "days"]}},
    ],
    resources=[{"uri": "weather://cities", "name": "cities", "description": "Cities it knows."}],
    prompts=[{"name": "trip_advice", "description": "Advice for a trip.",
              "arguments": [{"name": "city", "required": True}]}],
)  # fmt: skip


def mcp_step(tool, arguments, text):
    called = f"Weather_MCP_{tool}"
    items = [{"response": [{"type": "text", "text": text}], "structuredContent": {"result": text}}]
    return {
        "action": {"tool": called, "toolInput": {**arguments, "tool": called},
                   "log": "Calling Weather MCP", "toolCallId": "call_1", "type": "tool_call"},
        "observation": json.dumps(items, separators=(",", ":")),
    }  # fmt: skip


WEATHER_STEP = mcp_step("get_weather", {"city": "Paris"}, "Sunny in Paris, 21C")
FORECAST_STEP = mcp_step(
    "get_forecast", {"city": "Paris", "days": 3}, "Sun on Monday and Tuesday, rain on Wednesday"
)
MCP_ITEM = EvaluationItem(
    input="What is the weather in Paris?",
    actual_output="It is sunny in Paris, 21 degrees.",
    intermediate_steps=[WEATHER_STEP],
    turns=[
        {"role": "user", "content": "What is the weather in Paris?"},
        {
            "role": "assistant",
            "content": "It is sunny in Paris, 21 degrees.",
            "intermediateSteps": [WEATHER_STEP],
        },
        {"role": "user", "content": "And for the next three days?"},
        {
            "role": "assistant",
            "content": "Sun on Monday and Tuesday, then rain.",
            "intermediateSteps": [FORECAST_STEP],
        },
    ],
    mcp_servers=[WEATHER_SERVER],
)
RED, BLUE, BARS = (image_from_bytes(png, "image/png") for png in (RED_SQUARE, BLUE_SQUARE, CHART))
_CHART_ANSWER = (
    f"Sales by month, as a chart:\n{BARS.marker}\nSales rose by 20% in March, the green bar."
)
IMAGE_ITEMS = {
    "text_to_image": EvaluationItem(
        input="Draw a red square in the middle of a white image.",
        actual_output=RED.marker,
        images=[RED],
    ),
    "image_editing": EvaluationItem(
        input=f"Make the square blue.\n{RED.marker}", actual_output=BLUE.marker, images=[RED, BLUE]
    ),
    "chart": EvaluationItem(
        input="How did sales go this quarter?", actual_output=_CHART_ANSWER, images=[BARS]
    ),
}


def item_for(slug):
    """The item a catalog metric is run on: the support run, the MCP agent's, an image run's."""
    category = CATALOG[slug].category
    if category == "mcp":
        return MCP_ITEM
    if category == "images":
        return IMAGE_ITEMS.get(slug, IMAGE_ITEMS["chart"])
    return ITEM


VERDICT = {"type": "verdict", "verdict": True, "score": 10}
DAG_NODES = {
    "extract": {
        "type": "task",
        "instructions": "Extract the total.",
        "outputLabel": "Total",
        "evaluationParams": ["ACTUAL_OUTPUT"],
        "children": ["right"],
    },
    "right": {
        "type": "binaryJudgement",
        "criteria": "Is the total 179?",
        "evaluationParams": ["EXPECTED_OUTPUT"],
        "children": ["yes", "no"],
    },
    "yes": VERDICT,
    "no": {"type": "verdict", "verdict": False, "score": 0},
}
CONVERSATION_NODES = {
    "ask": {
        "type": "binaryJudgement",
        "criteria": "Did the assistant answer every question?",
        "evaluationParams": ["CONTENT"],
        "turnWindow": [0, 3],
        "children": ["yes", "no"],
    },
    "yes": VERDICT,
    "no": {"type": "verdict", "verdict": False, "score": 0},
}
OPTIONS = {
    "g_eval": {
        "name": "total",
        "criteria": "Is the total right?",
        "evaluationParams": ["INPUT", "ACTUAL_OUTPUT"],
    },
    "arena_g_eval": {
        "name": "clearer",
        "criteria": "Which answer states the total more clearly?",
        "evaluationParams": ["INPUT", "ACTUAL_OUTPUT", "TOOLS_CALLED"],
    },
    "dag": {"name": "total_dag", "dag": {"nodes": DAG_NODES}},
    "dag_branching": {"name": "concise_and_right", "dag": {"nodes": BRANCHING_NODES}},
    "conversational_g_eval": {
        "name": "polite",
        "criteria": "Is the assistant polite?",
        "evaluationParams": ["CONTENT", "SCENARIO"],
    },
    "conversational_dag": {"name": "answered", "dag": {"nodes": CONVERSATION_NODES}},
    "task_completion": {"task": "Tell the customer the order total"},
    "tool_use": {"availableTools": ["order_lookup", "calculator"]},
    "topic_adherence": {"relevantTopics": ["orders", "billing"]},
    "non_advice": {"adviceTypes": ["financial", "legal"]},
    "misuse": {"domain": "outdoor retail support"},
    "role_violation": {"role": "support agent"},
    "prompt_alignment": {"promptInstructions": ["Answer in one sentence"]},
    "summarization": {"assessmentQuestions": ["Is the total given?", "Is the order id given?"]},
    "tool_permission": {"allowedTools": ["order_lookup", "calculator"]},
    "pattern_match": {"pattern": ".*179.*"},
    "json_correctness": {
        "expectedSchema": {"type": "object", "properties": {"total": {"type": "number"}}}
    },
}


def config_for(slug, variant=None):
    entry = CATALOG[slug]
    return entry.config_model.model_validate(
        {"metric": slug, **OPTIONS[variant or slug]}
        if (variant or slug) in OPTIONS
        else {"metric": slug}
    )


def task_for(slug, item, task_id):
    return make_task(config_for(slug).model_dump(), item, task_id)


@pytest.fixture
def pool(dry_run_pool):
    return dry_run_pool


def run_all(pool, tasks):
    return evaluate_all(pool, tasks)


def test_every_metric_yields_a_score_and_a_reason(pool):
    slugs = sorted(CATALOG)
    results = run_all(pool, [task_for(slug, item_for(slug), i) for i, slug in enumerate(slugs)])
    for slug, result in zip(slugs, results, strict=True):
        entry = CATALOG[slug]
        assert result.error is None, (slug, result.error)
        assert 0.0 <= result.score <= 1.0, (slug, result.score)
        assert result.reason, slug
        if entry.needs_judge:
            assert result.judge_calls > 0, slug
        elif not entry.accepts_judge:
            assert result.judge_calls == 0, slug
    by_slug = dict(zip(slugs, results, strict=True))
    # judge-free metrics give exact, checkable scores on this item
    assert by_slug["tool_correctness"].score == 1.0
    assert by_slug["tool_permission"].score == 1.0
    assert by_slug["agent_loop_detection"].score == 1.0
    assert by_slug["exact_match"].score == 0.0
    assert by_slug["pattern_match"].score == 1.0
    assert by_slug["json_correctness"].score == 0.0  # the answer is prose, not JSON
    assert by_slug["tools_used"].score == 1.0
    assert by_slug["categorization"].score == 0.0
    assert by_slug["string_similarity"].score == pytest.approx(3 / 52)
    assert by_slug["correctness"].score in {0.2, 0.4, 0.6, 0.8, 1.0}


def test_lower_is_better_scores_are_reported_in_the_seeds_sense(pool):
    (bias,) = run_all(pool, [task_for("bias", ITEM, 0)])
    deepeval_score = float(bias.reason.split("DeepEval score ")[1].split(";")[0])
    assert bias.score == pytest.approx(1 - deepeval_score)


MISSING = {
    "input": {"input": None},
    "actual_output": {"actual_output": None},
    "expected_output": {"expected_output": None},
    "context": {"context": None},
    "retrieval_context": {"retrieval_context": None},
    "tools_called": {"intermediate_steps": None},
    "expected_tools": {"expected_tools": None},
    "trace": {"intermediate_steps": None},  # [] is a trace without tool calls
    "turns": {"turns": None, "input": None},  # with an input, the run itself is a conversation
    "turn_retrieval_context": {
        "retrieval_context": None,
        "turns": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}],
    },
    "chatbot_role": {"chatbot_role": None},
    "expected_outcome": {"expected_outcome": None},
    "scenario": {"scenario": None},
    "opponent": {"head_to_head": None},
    "mcp_servers": {"mcp_servers": None},
    "input_images": {"input": "Make the square blue."},
    "output_images": {"actual_output": "I could not draw it."},
}


def test_every_required_input_when_missing_gives_missing_input_naming_it(pool):
    cases = [
        (slug, field)
        for slug, entry in sorted(CATALOG.items())
        for field in entry.fields_needed(config_for(slug))
        if field in MISSING
    ]
    assert len(cases) > 60
    tasks = [
        task_for(slug, item_for(slug).model_copy(update=MISSING[field]), index)
        for index, (slug, field) in enumerate(cases)
    ]
    for (slug, field), result in zip(cases, run_all(pool, tasks), strict=True):
        assert result.error_kind == "missing_input", (slug, field, result)
        assert FIELD_SOURCES[field] in result.error, (slug, field, result.error)


def test_config_supplied_role_and_outcome_replace_item_fields(pool):
    bare = ITEM.model_copy(update={"chatbot_role": None, "expected_outcome": None})
    role = CATALOG["role_adherence"].config_model.model_validate(
        {"metric": "role_adherence", "chatbotRole": "a support agent"}
    )
    outcome = CATALOG["turn_contextual_recall"].config_model.model_validate(
        {"metric": "turn_contextual_recall", "expectedOutcome": "The total is given."}
    )
    tasks = [make_task(c.model_dump(), bare, i) for i, c in enumerate([role, outcome])]
    assert [r.error for r in run_all(pool, tasks)] == [None, None]


def test_a_branching_dag_with_non_binary_judgement_and_child_nodes_runs(pool):
    config = config_for("dag", "dag_branching")
    (result,) = run_all(pool, [make_task(config.model_dump(), ITEM)])
    assert result.error is None
    assert result.score in {0.0, 0.4, 1.0}  # the reachable verdict scores / 10
    assert result.judge_calls >= 3


GROUNDED = {
    "name": "grounded",
    "criteria": "Is every claim of the answer backed by the retrieval context?",
    "evaluationParams": ["INPUT", "ACTUAL_OUTPUT", "RETRIEVAL_CONTEXT"],
}
# Each metric that reads a context field, with that field.
CONTEXT_READERS = [
    ("g_eval", GROUNDED, "retrieval_context"),
    ("citation_faithfulness", {}, "retrieval_context"),
    ("hallucination", {}, "context"),
]


def test_an_empty_context_list_is_judged_and_an_absent_one_is_missing_input(pool):
    configs = [
        CATALOG[slug].config_model.model_validate({"metric": slug, **options}).model_dump()
        for slug, options, _ in CONTEXT_READERS
    ]
    empty = ITEM.model_copy(update={"context": [], "retrieval_context": []})
    absent = ITEM.model_copy(update={"context": None, "retrieval_context": None})
    tasks = [make_task(c, empty, i) for i, c in enumerate(configs)]
    tasks += [make_task(c, absent, len(configs) + i) for i, c in enumerate(configs)]
    results = run_all(pool, tasks)
    for (slug, _, field), judged, missing in zip(
        CONTEXT_READERS, results[: len(configs)], results[len(configs) :], strict=True
    ):
        assert judged.error is None, (slug, judged.error)
        assert 0.0 <= judged.score <= 1.0 and judged.judge_calls > 0, slug
        assert missing.error_kind == "missing_input", (slug, missing)
        assert FIELD_SOURCES[field] in missing.error, (slug, missing.error)


CONVERSATIONAL = ["conversational_g_eval", "turn_relevancy", "knowledge_retention"]


def test_a_run_without_history_is_judged_as_its_own_conversation(pool):
    no_history = ITEM.model_copy(update={"turns": None})
    results = run_all(
        pool, [task_for(slug, no_history, i) for i, slug in enumerate(CONVERSATIONAL)]
    )
    for slug, result in zip(CONVERSATIONAL, results, strict=True):
        assert result.error is None, (slug, result.error)
        assert 0.0 <= result.score <= 1.0 and result.judge_calls > 0, slug


def test_the_judge_sees_exactly_the_runs_input_and_output_as_two_turns(pool, tmp_path):
    server = PromptRecordingJudge().start()
    judge = JudgeSpec(
        provider="openai-compatible",
        model="loopback-judge",
        base_url=server.base_url,
        cache=False,
        state_dir=str(tmp_path / "judge"),
    )
    config = CATALOG["conversational_g_eval"].config_model.model_validate(
        {
            "metric": "conversational_g_eval",
            "name": "answered",
            "evaluationSteps": ["Check that the assistant answers the user."],
            "evaluationParams": ["ROLE", "CONTENT", "RETRIEVAL_CONTEXT"],
        }
    )
    no_history = ITEM.model_copy(update={"turns": None})
    try:
        (result,) = run_all(pool, [make_task(config.model_dump(), no_history, judge=judge)])
    finally:
        server.stop()
    assert result.error is None and result.score is not None
    turns = [
        {"role": "user", "content": ITEM.input},
        {
            "role": "assistant",
            "content": ITEM.actual_output,
            "retrieval_context": ITEM.retrieval_context,
        },
    ]
    (prompt,) = [p for p in server.prompts if "Per-turn fields:" in p]
    assert f"Per-turn fields:\n{turns}\n" in prompt


def test_an_arena_scores_a_win_or_a_loss_from_the_judges_pick_in_both_positions(pool):
    """DeepEval's arena, on the dry-run judge (which picks one of the contestants listed)."""
    swapped = ITEM.head_to_head.model_copy(update={"opponent_first": True})
    items = [ITEM, ITEM.model_copy(update={"head_to_head": swapped})]
    results = run_all(
        pool, [task_for("arena_g_eval", item, index) for index, item in enumerate(items)]
    )
    for result in results:
        assert result.error is None, result.error
        assert result.score in (0.0, 1.0)
        assert result.judge_calls == 3  # steps, winner, the reason rewritten with real names
    no_steps = ITEM.head_to_head.model_copy(update={"opponent_steps": None})
    (missing,) = run_all(
        pool, [task_for("arena_g_eval", ITEM.model_copy(update={"head_to_head": no_steps}), 9)]
    )
    assert missing.error_kind == "missing_input"
    assert FIELD_SOURCES["opponent"] in missing.error


def test_a_check_without_a_judge_reads_an_image_as_text_and_an_image_metric_sees_it(pool):
    chart = IMAGE_ITEMS["chart"]
    shown = CATALOG["pattern_match"].config_model.model_validate(
        {"metric": "pattern_match", "pattern": r"(?s).*\n\[image sha256:[0-9a-f]{64}\]\nSales.*"}
    )
    tasks = [
        make_task(shown.model_dump(), chart, 0),
        task_for("image_helpfulness", chart, 1),
        task_for("helpfulness", chart, 2),  # n8n's own metric: its judge reads text
    ]
    matched, judged, own = run_all(pool, tasks)
    assert (matched.score, matched.error) == (1.0, None)
    assert judged.error is None and judged.judge_calls == 1
    assert own.error is None and own.judge_calls == 1
