"""``init``: a first, commented benchmark file for a workflow, read off the workflow itself.

The workflow's anatomy gives the target (its start node, the node the trigger feeds, and its
end node, run through a harness copy), the dataset's columns (the fields of the trigger's
item the start node reads) and the metrics, by topology: always a check that the workflow
answered (a pattern, no judge needed: on the dry-run judge the judge metrics' placeholders
decide no run) and a reference-free quality metric (helpfulness); tools → tool permission,
and tool correctness when the dataset has expected tools; memory → the conversational
metrics; a vector store or retriever → the RAG metric that needs no passages; an expected
output → correctness; an MCP Client Tool → MCP Use (and, in conversations, the multi-turn
MCP metrics), its server's tool calls mocked unless the file says it is safe; a node that
generates an image → Text to Image, one that edits an image → Image Editing. What needs a
column the dataset lacks is written commented out, with the reason. The dataset beside it is
drawn from the workflow's executions, synthesized by DeepEval's Synthesizer (``init
--synthesize``), or is one example row to replace. A synthesized dataset for a chat trigger
or an agent with memory holds conversational goldens, and the benchmark simulates a user for
each (a ``simulation`` section).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from n8n_deepeval_pipeline.benchmark.config import CompareConfig
from n8n_deepeval_pipeline.config.schema_names import schema_name_problem
from n8n_deepeval_pipeline.n8n_api.client import N8nClient
from n8n_deepeval_pipeline.n8n_api.traffic_dataset import (
    ID_COLUMN,
    MESSAGES_COLUMN,
    DatasetDraft,
    ExecutionQuery,
    Progress,
    append_to_file,
    draw_dataset,
)
from n8n_deepeval_pipeline.statistics.version_comparison import gate_reach
from n8n_deepeval_pipeline.workflow.anatomy import (
    CHAT_INPUT,
    WEBHOOK,
    Anatomy,
    FieldRead,
    anatomy,
)
from n8n_deepeval_pipeline.workflow.harness import default_input, feeder
from n8n_deepeval_pipeline.workflow.mocks import service_nodes

_COMMENT_COLUMN = 32
_PLACEHOLDER = "Replace me: "
MAX_USER_TURNS = 5  # a simulated conversation's user turns at most
# The columns of a conversational golden, read by name by a benchmark's simulation.
_GOLDEN_COLUMNS = "scenario, expectedOutcome, userDescription, context"


@dataclass(frozen=True)
class WorkflowSource:
    """The workflow to benchmark: an exported file, or an id in n8n."""

    workflow: dict[str, Any]
    file: Path | None = None
    workflow_id: str | None = None


@dataclass(frozen=True)
class Scaffold:
    """The benchmark file's text and the dataset it expects beside it."""

    name: str
    text: str
    dataset_path: Path
    starter_rows: list[dict[str, Any]]


def benchmark_name(workflow_name: str) -> str:
    """The workflow's name as a benchmark name (lower_snake_case, never a reserved word)."""
    name = re.sub(r"[^a-z0-9]+", "_", workflow_name.lower()).strip("_")[:50] or "my_workflow"
    if not name[0].isalpha() or schema_name_problem(name) is not None:
        name = f"bench_{name}"
    return name


def simulated(shape: Anatomy) -> bool:
    """Whether a synthesized dataset holds conversations: a chat trigger or an agent's memory."""
    return shape.is_chat or bool(shape.memories)


def scaffold(
    source: WorkflowSource,
    out: Path,
    has_expectations: bool,
    origin: str | None = None,
    simulation: bool = False,
    input_only: bool = False,
) -> Scaffold:
    """The benchmark for ``source`` to be written at ``out``.

    ``has_expectations``: the dataset will hold expectedOutput and expectedTools (the
    example row does; rows drawn from executions do not). ``origin``: where the rows come
    from, for the dataset's comment. ``simulation``: the rows are conversational goldens
    that a simulated user plays against the workflow. ``input_only``: the rows hold the
    input and no other field the workflow reads (synthesized ones): those are sent empty.
    """
    shape = anatomy(source.workflow)
    if shape.trigger is None or shape.start is None or shape.end is None:
        raise ValueError(
            "the workflow has no trigger feeding a node: init proposes the node the "
            "trigger feeds as the start node (write target.startNodeName yourself)"
        )
    name = benchmark_name(str(source.workflow.get("name") or ""))
    dataset_path = out.with_name(f"{name}.dataset.jsonl")
    lines = [
        *_header(source, shape),
        f"name: {name}",
        _workflow_line(source, out),
        *_dataset(shape, dataset_path, has_expectations, origin, simulation),
        _runs_per_row(),
        *_target(shape, source.workflow, simulation, input_only),
        *(_simulation() if simulation else []),
        "metrics:",
        *(_conversation_metrics(shape) if simulation else _metrics(shape, has_expectations)),
        *_judge(),
        *_red_team(shape),
        *_online(shape, source),
    ]
    starter = [] if not has_expectations else [_example_row(shape)]
    return Scaffold(name, "\n".join(lines) + "\n", dataset_path, starter)


def _runs_per_row() -> str:
    """The fewest runs per case at which a drop can fail the default gate (fewer warn)."""
    fail_on = CompareConfig().fail_on
    runs = gate_reach(fail_on, 1).fewest_runs
    return _commented(f"runsPerRow: {runs}", f"the fewest where compare.failOn {fail_on} fires")


def _commented(line: str, comment: str) -> str:
    return f"{line.ljust(_COMMENT_COLUMN - 2)}  # {comment}" if comment else line


def _header(source: WorkflowSource, shape: Anatomy) -> list[str]:
    title = source.workflow.get("name") or "(unnamed)"
    where = f"id {source.workflow_id}" if source.workflow_id else f"file {source.file}"
    agents = ", ".join(shape.agents) or "none"
    tools = ", ".join(tool.name for tool in shape.tools) or "none"
    reads = ", ".join(f"{'.'.join(map(str, r.path))} → {r.column}" for r in shape.reads)
    return [
        f"# A first benchmark of the n8n workflow {title!r} ({where}), written by",
        "# `n8n-deepeval init` from the workflow itself. Review every line, then",
        "# `n8n-deepeval validate FILE` and `n8n-deepeval run FILE`.",
        f"#   trigger  {shape.trigger} ({shape.trigger_type})",
        f"#   agents   {agents} · tools: {tools} · memory: {', '.join(shape.memories) or 'none'}"
        f" · retrieval: {', '.join(shape.retrievers) or 'none'}",
        f"#   reads    {reads or 'no field of the trigger item the start node names'}",
    ]


def _workflow_line(source: WorkflowSource, out: Path) -> str:
    if source.workflow_id is not None:
        return _commented(
            f"workflow: {{id: {json.dumps(source.workflow_id)}}}",
            "read through N8N_API_URL and N8N_API_KEY",
        )
    assert source.file is not None
    relative = os.path.relpath(source.file.resolve(), out.resolve().parent)
    return _commented(f"workflow: {json.dumps(relative)}", "the exported workflow")


def _dataset(
    shape: Anatomy, path: Path, has_expectations: bool, origin: str | None, simulation: bool
) -> list[str]:
    if origin is None:
        origin = "one example row: replace it" if has_expectations else "from the executions"
    if simulation:
        return [
            "dataset:",
            _commented(f"  path: {json.dumps(path.name)}", origin),
            _commented(f"  idColumn: {ID_COLUMN}", "a hash of each golden's scenario"),
            f"  # conversational goldens: {_GOLDEN_COLUMNS}, read by name",
        ]
    mapping = [("input", "input", "the user's message")]
    if has_expectations:
        mapping.append(("expectedOutput", "expectedOutput", "for correctness"))
        if shape.tools:
            mapping.append(("expectedTools", "expectedTools", "for tool correctness"))
    others = [read.column for read in shape.columns[1:]]
    return [
        "dataset:",
        _commented(f"  path: {json.dumps(path.name)}", origin),
        _commented(f"  idColumn: {ID_COLUMN}", "a hash of the input (drawn or synthesized rows)"),
        "  columnMapping:",
        *(_commented(f"    {field}: {column}", why) for field, column, why in mapping),
        *(
            [f"  # other columns the start node reads, sent by target.input: {', '.join(others)}"]
            if others
            else []
        ),
    ]


def _target(
    shape: Anatomy, workflow: dict[str, Any], simulation: bool, input_only: bool = False
) -> list[str]:
    lines = [
        "target:",
        _commented("  type: n8n_workflow", "a harness copy, run from start to end node"),
        _commented(f"  startNodeName: {json.dumps(shape.start)}", "the node the trigger feeds"),
        _commented(f"  endNodeName: {json.dumps(shape.end)}", "its output is the run's output"),
    ]
    if shape.is_chat and not simulation:  # a simulated user writes the messages instead
        lines.append(
            _commented(f"  messagesColumn: {MESSAGES_COLUMN}", "a session's messages, one by one")
        )
    lines.extend(_mocks(workflow, shape))
    lines.extend(_mcp_servers(shape))
    if [read.path for read in shape.columns] != [CHAT_INPUT]:
        assert shape.start is not None
        trigger = feeder(workflow, shape.start)
        template = json.dumps(_input_template(shape, trigger, input_only), ensure_ascii=False)
        said = f"what {shape.trigger} emitted"
        if input_only and len(shape.columns) > 1:
            said += "; synthesized rows hold only the input: add the other columns"
        lines.append(_commented(f"  input: {template}", said))
    return lines


def _mocks(workflow: dict[str, Any], shape: Anatomy) -> list[str]:
    """``mocks: services`` when a node of the copy acts on a real service, each one named."""
    assert shape.start is not None and shape.end is not None
    acting = service_nodes(workflow, shape.start, shape.end)
    if not acting:
        return []
    return [
        _commented("  mocks:", "a benchmark run must not act on the world:"),
        _commented("    services: true", "these answer {mocked: true} instead of acting"),
        *(f"    #   unmocked, {node}" for node in acting),
        "    # nodes:                    # or script a node's answer per row:",
        f"    #   {json.dumps(acting[0].name)}: judge  # the judge writes each row's answer",
    ]


def _mcp_servers(shape: Anatomy) -> list[str]:
    """The MCP Client Tools' servers: mocked by default, and how to let their calls through."""
    if not shape.mcp_clients:
        return []
    first = json.dumps(shape.mcp_clients[0], ensure_ascii=False)
    return [
        _commented("  # mcpServers:", f"MCP Client Tools ({', '.join(shape.mcp_clients)}):"),
        _commented(f"  #   {first}:", "their tool calls are mocked (the server is"),
        _commented("  #     safe: true", "only listed) unless a server is safe to call"),
    ]


def _input_template(shape: Anatomy, trigger: dict[str, Any], input_only: bool = False) -> Any:
    """The trigger's item rebuilt from a row: each field the start node reads, in place.

    It starts from what the harness sends for this trigger without a template (a Chat
    Trigger's sessionId and action, which memory and the agent need too). A Webhook
    trigger's stand-in puts the request's body under ``body`` itself, so the body's
    fields are the template's top level and a whole-body read is the template.
    ``input_only``: a column other than the input is read with ``row.get`` (null while the
    rows lack it), since validate refuses a template that fails on the first row.
    """
    default = default_input(trigger)
    item: Any = default if isinstance(default, dict) else {}
    for position, read in enumerate(shape.columns):
        keys = [str(segment) for segment in read.path] or ["input"]
        if shape.trigger_type == WEBHOOK and keys[0] == "body":
            keys = keys[1:]
        cell = f"row.get('{read.column}')" if input_only else f"row['{read.column}']"
        value = "{{ input }}" if position == 0 else f"{{{{ {cell} }}}}"
        item = _placed(item, keys, value)
    return item


def _placed(item: Any, keys: list[str], value: str) -> Any:
    """``item`` with ``value`` at ``keys``; with no keys left, ``value`` is the whole item."""
    if not keys:
        return value
    holder = dict(item) if isinstance(item, dict) else {}
    holder[keys[0]] = _placed(holder.get(keys[0]), keys[1:], value)
    return holder


def _metrics(shape: Anatomy, has_expectations: bool) -> Iterator[str]:
    # A check that needs no judge: on the dry-run judge the judge metrics are placeholders,
    # which decide no run, so that a first run's pass rate says whether the wiring works.
    yield _commented("  - metric: pattern_match", "no judge needed: did the workflow")
    yield _commented("    label: answered", "answer with some text?")
    yield "    pattern: '(?s)\\s*\\S.*'"
    yield _commented("  - metric: helpfulness", "reference-free: does it meet the request?")
    if has_expectations:
        yield _commented("  - metric: correctness", "against expectedOutput")
    else:
        yield _commented(
            "  # - metric: correctness", "needs an expectedOutput column: write answers"
        )
    if shape.tools:
        names = json.dumps([tool.name for tool in shape.tools], ensure_ascii=False)
        yield _commented("  - metric: tool_permission", "only the agent's own tools")
        yield f"    allowedTools: {names}"
        if has_expectations:
            yield _commented("  - metric: tool_correctness", "against expectedTools")
        else:
            yield _commented("  # - metric: tool_correctness", "needs an expectedTools column")
    if shape.memories:
        yield _commented("  - metric: turn_relevancy", f"memory ({', '.join(shape.memories)})")
        yield _commented("  - metric: knowledge_retention", "remembers what the user said")
    if shape.retrievers:
        yield _commented(
            "  - metric: answer_relevancy", f"retrieval ({', '.join(shape.retrievers)})"
        )
        yield _commented("  # - metric: faithfulness", "needs a retrievalContext column (passages)")
    yield from _mcp_metrics(shape, conversations=bool(shape.memories))
    yield from _image_metrics(shape)


def _mcp_metrics(shape: Anatomy, conversations: bool) -> Iterator[str]:
    """MCP Use for an agent with MCP Client Tools; over conversations the multi-turn two."""
    if not shape.mcp_clients:
        return
    yield _commented("  - metric: mcp_use", f"MCP tools ({', '.join(shape.mcp_clients)})")
    if conversations:
        yield _commented("  - metric: multi_turn_mcp_use", "MCP tool use over the conversation")
        yield _commented("  - metric: mcp_task_completion", "each task done with MCP calls")


def _image_metrics(shape: Anatomy) -> Iterator[str]:
    """Text to Image for a node that generates images; Image Editing for one that edits."""

    def by(operation: str) -> str:
        return ", ".join(name for name, done in shape.image_nodes if done == operation)

    if by("generate"):
        yield _commented("  - metric: text_to_image", f"images made ({by('generate')}); a")
        yield "    # judge that reads images (DeepEval sends them with the prompt)"
    if by("edit"):
        yield _commented("  # - metric: image_editing", f"images edited ({by('edit')}): needs")
        yield "    #   an inputImages column, the image to edit"


def _simulation() -> list[str]:
    return [
        _commented("simulation:", "a simulated user plays each golden, a session each"),
        _commented(f"  maxUserTurns: {MAX_USER_TURNS}", "unless the expected outcome comes first"),
    ]


def _conversation_metrics(shape: Anatomy) -> Iterator[str]:
    """Reference-free metrics of a whole conversation, and the agent's tools if it has any."""
    yield _commented("  - metric: turn_relevancy", "each answer fits the conversation so far")
    yield _commented("  - metric: knowledge_retention", "remembers what the user said")
    yield _commented("  - metric: conversation_completeness", "the user's needs are met")
    if shape.tools:
        names = json.dumps([tool.name for tool in shape.tools], ensure_ascii=False)
        yield _commented("  - metric: tool_permission", "only the agent's own tools")
        yield f"    allowedTools: {names}"
    yield from _mcp_metrics(shape, conversations=True)


def _judge() -> list[str]:
    return [
        "# judge:                       # default: N8N_DEEPEVAL_JUDGE_*; without them a dry run",
        "#   provider: openai           #   (placeholder scores) that checks the wiring",
        "#   model: gpt-4o-mini",
        "#   apiKeyEnv: OPENAI_API_KEY",
    ]


def _online_metrics(shape: Anatomy) -> list[str]:
    """The proposed metrics that need no reference: what production traffic can be scored by."""
    found = ["helpfulness"]
    found += ["tool_permission"] if shape.tools else []
    # a chat is scored per session: only where the workflow names each execution's
    conversations = bool(shape.memories) and shape.session is not None
    found += ["turn_relevancy", "knowledge_retention"] if conversations else []
    found += ["answer_relevancy"] if shape.retrievers else []
    return found


def _red_team(shape: Anatomy) -> list[str]:
    """A commented red team for an agent with tools: what they could be talked into."""
    if not shape.tools:
        return []
    return [
        _commented("# redTeam:", "DeepTeam attacks the agent (docs/guides/red-team.md);"),
        _commented("#   vulnerabilities:", "its tools are mocked: no attack acts on the world"),
        _commented("#     - name: ExcessiveAgency", "tools used beyond the agent's brief"),
        _commented("#     - name: PromptLeakage", "its instructions given away"),
        "#   attacks:",
        "#     - {name: PromptInjection, weight: 2}",
        _commented("#     - {name: LinearJailbreaking, numTurns: 3}", "a conversation"),
        _commented("#   attacksPerVulnerabilityType: 2", "DeepTeam writes 2 attacks a type"),
        _commented("#   failOn: 0", "any breach fails the run (exit 6)"),
        "#   # purpose: by default the agents' system messages and tools, read off the workflow",
    ]


def _online(shape: Anatomy, source: WorkflowSource) -> list[str]:
    where = "" if source.workflow_id else " (needs workflow: {id: …})"
    lines = [
        _commented("# online:", f"score production executions as they happen{where}"),
        _commented(f"#   metrics: [{', '.join(_online_metrics(shape))}]", "reference-free only"),
        _commented("#   sampleRate: 0.1", "the share of executions scored"),
        _commented("#   maxPerHour: 60", "the rest of an hour's are not"),
        _commented("#   maxCostUsdPerDay: 5", "judge cost a UTC day may reach"),
    ]
    if shape.session is not None:
        lines.append(_commented("#   sessionIdleMinutes: 30", "a chat is scored once quiet"))
    return lines


def _example_row(shape: Anatomy) -> dict[str, Any]:
    columns = shape.columns
    row: dict[str, Any] = {ID_COLUMN: "example-1"}
    row.update({read.column: _placeholder(read) for read in columns})
    row["input"] = f"{_PLACEHOLDER}a message your users send"
    if shape.is_chat:
        row[MESSAGES_COLUMN] = [row["input"], f"{_PLACEHOLDER}a follow-up"]
    row["expectedOutput"] = f"{_PLACEHOLDER}the answer you expect"
    if shape.tools:
        row["expectedTools"] = [shape.tools[0].name]
    return row


@dataclass(frozen=True)
class Written:
    """What ``init`` wrote: the benchmark, its dataset, and the rows drawn (if any)."""

    benchmark: Path
    dataset: Path
    drawn: DatasetDraft | None
    example_row: bool
    simulation: bool = False


# Adds synthesized goldens to the dataset file (conversational ones if asked); says how.
Synthesize = Callable[[Path, bool], str]


def write_synthesized_benchmark(
    source: WorkflowSource, out: Path, synthesize: Synthesize
) -> Written:
    """Write the benchmark at ``out`` on a dataset ``synthesize`` adds goldens to.

    Conversational goldens and a ``simulation`` section for a chat trigger or an agent
    with memory; single-turn goldens otherwise. The benchmark is written after its rows.
    """
    shape = anatomy(source.workflow)
    conversation = simulated(shape)
    draft = scaffold(source, out, has_expectations=False)  # where its dataset goes
    out.parent.mkdir(parents=True, exist_ok=True)
    origin = synthesize(draft.dataset_path, conversation)
    made = scaffold(source, out, False, origin, simulation=conversation, input_only=True)
    out.write_text(made.text, encoding="utf-8")
    return Written(out, made.dataset_path, None, False, conversation)


def write_benchmark(
    source: WorkflowSource,
    out: Path,
    client: N8nClient | None = None,
    query: ExecutionQuery | None = None,
    progress: Progress | None = None,
    redact: bool = False,
) -> Written:
    """Write the benchmark at ``out`` and its dataset beside it.

    With ``query`` (and the ``client`` to read with) the dataset is drawn from the
    workflow's executions (``redact``: without credentials and personal data); when they
    give no row, or without ``query``, it is one example row (an existing dataset file is
    kept as it is).
    """
    drawn = None
    out.parent.mkdir(parents=True, exist_ok=True)
    if query is not None:
        assert client is not None
        made = scaffold(source, out, has_expectations=False)
        drawn, _ = draw_dataset(client, query, made.dataset_path, redact=redact, progress=progress)
    drawn_rows = drawn is not None and bool(drawn.rows)
    if not drawn_rows:
        made = scaffold(source, out, has_expectations=True)
    out.write_text(made.text, encoding="utf-8")
    example = not drawn_rows and not made.dataset_path.exists()
    if example:
        append_to_file(made.dataset_path, made.starter_rows)
    return Written(out, made.dataset_path, drawn, example)


def _placeholder(read: FieldRead) -> Any:
    # A Webhook's whole body is sent back as it was: an object.
    return (
        {"input": f"{_PLACEHOLDER}the request"}
        if read.path == ("body",)
        else (f"{_PLACEHOLDER}{read.column}")
    )
