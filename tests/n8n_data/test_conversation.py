import pytest

from n8n_deepeval_pipeline.n8n_data.agent_steps import ToolCallData
from n8n_deepeval_pipeline.n8n_data.conversation import (
    ConversationShapeError,
    enrich_turns,
    parse_conversation,
)

EXPECTED = [
    ("user", "Where is A1?"),
    ("assistant", "It shipped."),
    ("user", "Thanks"),
    ("assistant", "Bye"),
]


def pairs(turns):
    return [(turn.role, turn.content) for turn in turns]


@pytest.mark.parametrize(
    "history",
    [
        [  # LangChain stored messages (Redis, Postgres chat memory)
            {"type": "system", "data": {"content": "You are helpful."}},
            {"type": "human", "data": {"content": "Where is A1?", "additional_kwargs": {}}},
            {"type": "ai", "data": {"content": "It shipped.", "tool_calls": []}},
            {"type": "tool", "data": {"content": "{}", "tool_call_id": "1"}},
            {"type": "human", "data": {"content": "Thanks"}},
            {"type": "ai", "data": {"content": "Bye"}},
        ],
        [  # Postgres flattens data
            {"type": "human", "content": "Where is A1?"},
            {"type": "ai", "content": "It shipped."},
            {"type": "human", "content": "Thanks"},
            {"type": "ai", "content": "Bye"},
        ],
        [  # OpenAI style
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": "Where is A1?"},
            {"role": "assistant", "content": [{"type": "text", "text": "It shipped."}]},
            {"role": "user", "content": "Thanks"},
            {"role": "assistant", "content": "Bye"},
        ],
        [{"human": "Where is A1?", "ai": "It shipped."}, {"human": "Thanks", "ai": "Bye"}],
        [
            {
                "messages": [
                    {"human": "Where is A1?", "ai": "It shipped."},
                    {"human": "Thanks", "ai": "Bye"},
                ],
                "messagesCount": 4,
            }
        ],
        [  # LangChain toJSON()
            {
                "lc": 1,
                "type": "constructor",
                "id": ["langchain_core", "messages", "HumanMessage"],
                "kwargs": {"content": "Where is A1?"},
            },
            {
                "lc": 1,
                "type": "constructor",
                "id": ["langchain_core", "messages", "AIMessage"],
                "kwargs": {"content": "It shipped."},
            },
            {
                "lc": 1,
                "type": "constructor",
                "id": ["langchain_core", "messages", "HumanMessage"],
                "kwargs": {"content": "Thanks"},
            },
            {
                "lc": 1,
                "type": "constructor",
                "id": ["langchain_core", "messages", "AIMessage"],
                "kwargs": {"content": "Bye"},
            },
        ],
    ],
    ids=["stored", "postgres", "openai", "memory-manager", "memory-manager-grouped", "lc-json"],
)
def test_every_memory_form_gives_the_same_turns(history):
    assert pairs(parse_conversation(history)) == EXPECTED


def lc(kind, **kwargs):
    return {"lc": 1, "type": "constructor", "id": ["langchain_core", "messages", kind],
            "kwargs": kwargs}  # fmt: skip


CALL = {"id": "call_6", "name": "Calculator", "args": {"input": "6*7"}, "type": "tool_call"}


@pytest.mark.parametrize(
    "history",
    [
        [  # what n8n 2.41's Simple Memory held after an agent called its Calculator
            lc("HumanMessage", content="What is 6*7", additional_kwargs={}),
            lc("AIMessage", content=[], tool_calls=[CALL], invalid_tool_calls=[]),
            lc("ToolMessage", content='[{"response":"42"}]', tool_call_id="call_6"),
            lc("AIMessage", content="The answer is 42.", tool_calls=[]),
        ],
        [  # stored messages (Redis, Postgres chat memory)
            {"type": "human", "data": {"content": "What is 6*7"}},
            {"type": "ai", "data": {"content": "", "tool_calls": [CALL]}},
            {"type": "tool", "data": {"content": "42", "tool_call_id": "call_6"}},
            {"type": "ai", "data": {"content": "The answer is 42.", "tool_calls": []}},
        ],
        [  # OpenAI style: the call in the message's tool_calls, its content null
            {"role": "user", "content": "What is 6*7"},
            {"role": "assistant", "content": None, "additional_kwargs": {"tool_calls": [CALL]}},
            {"role": "tool", "content": "42", "tool_call_id": "call_6"},
            {"role": "assistant", "content": "The answer is 42."},
        ],
    ],
    ids=["lc-json", "stored", "openai"],
)
def test_a_message_that_only_asks_for_a_tool_is_not_a_turn(history):
    assert pairs(parse_conversation(history)) == [
        ("user", "What is 6*7"),
        ("assistant", "The answer is 42."),
    ]
    # An answer without text and without a tool call stays a turn: the agent said nothing.
    silent = [lc("HumanMessage", content="Hi"), lc("AIMessage", content="", tool_calls=[])]
    assert pairs(parse_conversation(silent)) == [("user", "Hi"), ("assistant", "")]


def test_json_text_and_absent_history():
    assert pairs(parse_conversation('[{"role": "user", "content": "Hi"}]')) == [("user", "Hi")]
    assert parse_conversation(None) is None and parse_conversation("") is None


def test_retrieval_context_is_read_from_the_message():
    (turn,) = parse_conversation(
        [
            {
                "type": "ai",
                "data": {"content": "x", "additional_kwargs": {"retrievalContext": ["doc 1"]}},
            }
        ]
    )
    assert turn.retrieval_context == ["doc 1"]
    (turn,) = parse_conversation(
        [{"role": "assistant", "content": "x", "retrieval_context": "doc"}]
    )
    assert turn.retrieval_context == ["doc"]


def test_turns_are_enriched_with_tool_calls_and_item_retrieval_context():
    turns = parse_conversation(
        [
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "b", "retrievalContext": ["own"]},
            {"role": "user", "content": "c"},
            {"role": "assistant", "content": "d"},
        ]
    )
    calls = [ToolCallData(name="calculator", input_parameters={"input": "1+1"}, output="2")]
    enriched = enrich_turns(turns, calls, ["item passage"])
    assert [t.tools_called for t in enriched] == [None, None, None, calls]
    assert [t.retrieval_context for t in enriched] == [None, ["own"], None, ["item passage"]]
    assert enrich_turns(turns, None, None) == turns


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"role": "user"}, "must be a list"),
        ([{"speaker": "bob"}], "message 1: no 'role', 'type' or 'human'/'ai' key"),
        ([{"type": "robot", "data": {"content": "x"}}], "message 1: unknown message type 'robot'"),
        (["hello"], "message 1 is not an object"),
        ("[oops", "not valid JSON"),
    ],
)
def test_shapes_no_memory_produces_are_refused(value, message):
    with pytest.raises(ConversationShapeError, match=message):
        parse_conversation(value)


SUM = {"action": {"tool": "Calculator", "toolInput": {"input": "6*7"}, "log": "calc"},
       "observation": '[{"response":"42"}]'}  # fmt: skip
SIMULATED = [
    {"role": "user", "content": "What is 6*7?"},
    {"role": "assistant", "content": "42.", "intermediateSteps": [SUM], "latencyS": 0.2},
    {"role": "user", "content": "Thanks"},
    {"role": "assistant", "content": "You're welcome.", "intermediateSteps": []},
]


def test_a_simulated_conversation_says_which_tools_each_turn_called():
    turns = parse_conversation(SIMULATED)
    assert [turn.tools_called for turn in turns] == [
        None,
        [ToolCallData(name="Calculator", input_parameters={"input": "6*7"},
                      output='[{"response":"42"}]', reasoning="calc")],
        None,
        [],  # said: no tool
    ]  # fmt: skip


def test_per_turn_tools_are_kept_and_the_runs_tools_not_piled_on_the_last_turn():
    every_tool = [ToolCallData(name="Calculator", input_parameters={"input": "6*7"})]
    enriched = enrich_turns(parse_conversation(SIMULATED), every_tool, ["ctx"])
    assert [len(turn.tools_called or []) for turn in enriched] == [0, 1, 0, 0]
    assert [turn.retrieval_context for turn in enriched] == [None, ["ctx"], None, ["ctx"]]
    # a recorded memory says nothing of tools: the run's go on its last answer, as before
    recorded = [{key: value for key, value in t.items() if key != "intermediateSteps"}
                for t in SIMULATED]  # fmt: skip
    piled = enrich_turns(parse_conversation(recorded), every_tool, None)
    assert [turn.tools_called for turn in piled] == [None, None, None, every_tool]


def test_unreadable_turn_steps_are_named_by_message():
    broken = [{"role": "assistant", "content": "x", "intermediateSteps": "{not json"}]
    with pytest.raises(ConversationShapeError, match="message 1: "):
        parse_conversation(broken)
