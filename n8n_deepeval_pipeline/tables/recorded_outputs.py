"""The ``recorded`` target: workflow outputs captured earlier instead of calling n8n.

Either a JSONL file with one line per run (``row_id``, ``run_index``, ``output``,
optional ``intermediateSteps``, ``label``, ``latencyS``, ``sessionId``, ``mcpServers``: the
MCP servers the agent had, ``images``: images of the answer, as data URIs, http(s) URLs
or files beside the recordings), or dataset columns whose values every run of the row
shares. Outputs belong to the workflow version
that produced them (``workflow_hash`` on a line, or ``target.workflowHash`` for all):
a version without recordings is refused, never scored with another version's outputs.
A line of the version that no run reads is refused too, unless ``ignoreUnusedOutputs``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError

from n8n_deepeval_pipeline.benchmark.config import RecordedColumn, RecordedTarget
from n8n_deepeval_pipeline.config.errors import DataFileError, FileRole, field_path
from n8n_deepeval_pipeline.data_limits import DataLimitError, loads_json
from n8n_deepeval_pipeline.n8n_data.images import MARKER, ImageData, ImageError
from n8n_deepeval_pipeline.n8n_data.json_fields import as_text
from n8n_deepeval_pipeline.n8n_data.mcp_calls import McpServer
from n8n_deepeval_pipeline.n8n_data.responses import with_images
from n8n_deepeval_pipeline.tables.data_files import (
    NotAJsonObjectError,
    json_object,
    numbered_lines,
    read_bytes,
    utf8_text,
)
from n8n_deepeval_pipeline.tables.output_images import read_image
from n8n_deepeval_pipeline.tables.rows import AgentOutput, DatasetRow, ExpandedRun, OutputImage
from n8n_deepeval_pipeline.workflow.hashing import version_key


class RecordedLine(BaseModel):
    """One line of a recorded outputs file."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    row_id: str | int = Field(validation_alias=AliasChoices("row_id", "rowId"))
    run_index: int = Field(ge=0, validation_alias=AliasChoices("run_index", "runIndex"))
    output: Any = Field(validation_alias=AliasChoices("output", "actualOutput"))
    intermediate_steps: list[Any] | None = Field(
        default=None, validation_alias=AliasChoices("intermediateSteps", "intermediate_steps")
    )
    turns: list[Any] | None = Field(
        default=None, validation_alias=AliasChoices("turns", "chatHistory", "messages")
    )
    label: str | int | float | bool | None = None
    session_id: str | None = Field(
        default=None, validation_alias=AliasChoices("sessionId", "session_id")
    )
    latency_s: float | None = Field(
        default=None, ge=0, validation_alias=AliasChoices("latencyS", "latency_s")
    )
    workflow_hash: str | None = Field(
        default=None,
        pattern=r"^[0-9a-f]{64}$",
        validation_alias=AliasChoices("workflow_hash", "workflowHash"),
    )
    mcp_servers: list[McpServer] | None = Field(
        default=None, validation_alias=AliasChoices("mcpServers", "mcp_servers")
    )
    images: list[str] | None = None


class NoRecordingError(ValueError):
    """The workflow version being materialised has no recorded outputs."""

    def __init__(self, partition: str, source: str) -> None:
        super().__init__(
            f"no recorded outputs for version {version_key(partition)} in {source}: record them "
            "(`n8n-deepeval run FILE --record PATH` with a live target) or use a live target"
        )


def _json_list(value: Any) -> list[Any] | None:
    if isinstance(value, str) and value.strip():
        try:
            value = loads_json(value)
        except (json.JSONDecodeError, DataLimitError):
            return None
    return value if isinstance(value, list) else None


RecordedKey = tuple[str, str, int]  # workflow hash, row id, run index
_FILE = FileRole("recorded outputs", "target.outputs")


class Recording(NamedTuple):
    """A line of a recorded outputs file and its number in the file."""

    number: int
    line: RecordedLine


def read_recorded_lines(path: Path, default_hash: str | None) -> dict[RecordedKey, Recording]:
    """Index a recorded outputs file by version, row and run; errors name the line and field."""
    lines: dict[RecordedKey, Recording] = {}
    problems: list[str] = []
    for number, text in numbered_lines(utf8_text(read_bytes(path, _FILE), path, _FILE)):
        try:
            line = RecordedLine.model_validate(json_object(text))
        except NotAJsonObjectError as error:
            problems.append(f"line {number}: {error}")
            continue
        except ValidationError as error:
            problems += [
                f"line {number}: {field_path(tuple(d['loc']))}: {d['msg']}"
                for d in error.errors(include_url=False)
            ]
            continue
        try:
            images = [read_image(reference, path.parent) for reference in line.images or []]
        except ImageError as error:
            problems.append(f"line {number}: images: {error}")
            continue
        if images:
            line = line.model_copy(update={"output": with_images(as_text(line.output), images)})
        version = line.workflow_hash or default_hash
        if version is None:
            problems.append(
                f"line {number}: workflow_hash: which workflow version produced this output? "
                "(give workflow_hash on the line, or target.workflowHash for the file; "
                "`n8n-deepeval hash WORKFLOW.json` prints it)"
            )
            continue
        key = (version, str(line.row_id), line.run_index)
        if key in lines:
            problems.append(f"line {number}: row_id {key[1]!r} run_index {key[2]} repeats")
        lines[key] = Recording(number, line)
    if not lines and not problems:
        problems.append("the file is empty: no recorded outputs")
    if problems:
        raise DataFileError(path, problems, _FILE)
    return lines


def refuse_unused_lines(
    target: RecordedTarget,
    lines: dict[RecordedKey, Recording],
    version: str,
    row_ids: Collection[str],
    runs_per_row: int,
) -> None:
    """Every line of ``version`` is read by a run, unless target.ignoreUnusedOutputs.

    A line no run reads is most likely a typo in its row_id or a runsPerRow that changed:
    scoring without it would quietly measure fewer runs than were recorded.
    """
    if target.ignore_unused_outputs or target.outputs is None:
        return
    problems = []
    for (line_version, row_id, run_index), recording in lines.items():
        if line_version != version:
            continue
        where = f"line {recording.number}: row_id {row_id!r} run_index {run_index}"
        if row_id not in row_ids:
            problems.append(f"{where}: no such row in the dataset (after filters and maxRows)")
        elif run_index >= runs_per_row:
            problems.append(f"{where}: run_index must be below runsPerRow ({runs_per_row})")
    if problems:
        hint = "to leave out the lines no run reads, set target.ignoreUnusedOutputs: true"
        raise DataFileError(target.outputs, [*problems, hint], _FILE)


def recorded_outputs(
    target: RecordedTarget,
    runs: list[ExpandedRun],
    rows: dict[str, DatasetRow],
    runs_per_row: int,
) -> list[AgentOutput]:
    """One AgentOutput per run; a run without a recording gets an error, not a gap."""
    if target.outputs is not None:
        lines = read_recorded_lines(target.outputs, target.workflow_hash)
        if not runs:
            return []
        partition = runs[0].workflow_hash
        refuse_unused_lines(target, lines, partition, rows.keys(), runs_per_row)
        if not any(version == partition for version, _, _ in lines):
            raise NoRecordingError(partition, str(target.outputs))
        return [_from_line(run, lines.get((partition, run.row_id, run.run_index))) for run in runs]
    if runs and target.workflow_hash != runs[0].workflow_hash:
        raise NoRecordingError(
            runs[0].workflow_hash, "the dataset's output columns (target.workflowHash)"
        )
    columns = target.columns or {}
    return [_from_columns(run, rows[run.row_id].raw, columns) for run in runs]


def _from_line(run: ExpandedRun, recording: Recording | None) -> AgentOutput:
    if recording is None:
        return AgentOutput(
            workflow_hash=run.workflow_hash,
            run_id=run.run_id,
            error=f"no recorded output for row_id {run.row_id!r} run_index {run.run_index}",
            error_kind="target_error",
        )
    line = recording.line
    return AgentOutput(
        workflow_hash=run.workflow_hash,
        run_id=run.run_id,
        actual_output=as_text(line.output),
        intermediate_steps=line.intermediate_steps,
        turns=line.turns,
        label=as_text(line.label),
        session_id=line.session_id,
        latency_s=line.latency_s,
        mcp_servers=[server.model_dump(mode="json") for server in line.mcp_servers]
        if line.mcp_servers
        else None,
    )


def _from_columns(
    run: ExpandedRun, raw: dict[str, Any], columns: Mapping[RecordedColumn, str]
) -> AgentOutput:
    label = raw.get(columns["label"]) if "label" in columns else None
    return AgentOutput(
        workflow_hash=run.workflow_hash,
        run_id=run.run_id,
        actual_output=as_text(raw.get(columns["output"])),
        intermediate_steps=_json_list(raw.get(columns["intermediateSteps"]))
        if "intermediateSteps" in columns
        else None,
        turns=_json_list(raw.get(columns["turns"])) if "turns" in columns else None,
        label=None if label is None else str(label),
    )


def _inlined(text: str | None, images: dict[str, OutputImage]) -> str | None:
    """The output with its images back in it, as data URIs (what the answer carried)."""
    if text is None or not images:
        return text

    def inline(match: re.Match[str]) -> str:
        stored = images.get(match[1])
        if stored is None:
            return match[0]
        image = ImageData(
            sha256=stored.sha256,
            mime_type=stored.mime_type,
            data_base64=stored.data_base64,
            url=stored.url,
        )
        return with_images(None, [image]) or match[0]

    return MARKER.sub(inline, text)


def recording_lines(
    runs: list[ExpandedRun], outputs: list[AgentOutput], images: list[OutputImage] | None = None
) -> list[str]:
    """What a live run produced, as lines of a recorded outputs file (failed runs left out).

    Images go back into the outputs as data URIs: read again, they are the same images.
    """
    by_hash = {image.sha256: image for image in images or []}
    by_run = {output.run_id: output for output in outputs}
    lines = []
    for run in runs:
        output = by_run.get(run.run_id)
        if output is None or output.error is not None:
            continue
        line = {
            "workflow_hash": run.workflow_hash,
            "row_id": run.row_id,
            "run_index": run.run_index,
            "output": _inlined(output.actual_output, by_hash),
            "intermediateSteps": output.intermediate_steps,
            "turns": output.turns,
            "label": output.label,
            "sessionId": output.session_id,
            "latencyS": output.latency_s,
            "mcpServers": output.mcp_servers,
        }
        lines.append(
            json.dumps({k: v for k, v in line.items() if v is not None}, ensure_ascii=False)
        )
    return lines
