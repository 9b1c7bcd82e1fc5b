"""Images kept once by hash beside the outputs that mark them, from recordings and datasets."""

import base64
import hashlib
import json
import mimetypes
import re

import pytest

from n8n_deepeval_pipeline import DatasetRow
from n8n_deepeval_pipeline.benchmark.config import RecordedTarget
from n8n_deepeval_pipeline.config.errors import DataFileError
from n8n_deepeval_pipeline.n8n_data.images import ImageError
from n8n_deepeval_pipeline.n8n_data.mcp_calls import McpServer
from n8n_deepeval_pipeline.tables.evaluation_plan import evaluation_item
from n8n_deepeval_pipeline.tables.output_images import (
    InputImageError,
    image_by_hash,
    image_data,
    read_image,
    with_images,
)
from n8n_deepeval_pipeline.tables.recorded_outputs import recorded_outputs, recording_lines
from n8n_deepeval_pipeline.tables.steps import expanded_runs
from tests.png_images import BLUE_SQUARE, RED_SQUARE

HASH = "c" * 64
RED = base64.b64encode(RED_SQUARE).decode()
RED_SHA = hashlib.sha256(RED_SQUARE).hexdigest()
BLUE_SHA = hashlib.sha256(BLUE_SQUARE).hexdigest()
WEATHER = McpServer(name="Weather MCP", tools=[{"name": "get_weather"}])


def dataset(**columns):
    return [DatasetRow(workflow_hash=HASH, row_id="r1", position=1, raw={}, **columns)]


def recorded(tmp_path, lines, rows, runs_per_row=2):
    path = tmp_path / "outputs.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    runs = expanded_runs(rows, runs_per_row, "t")
    target = RecordedTarget(outputs=path, workflowHash=HASH)
    outputs = recorded_outputs(target, runs, {r.row_id: r for r in rows}, runs_per_row)
    return runs, outputs


def test_an_image_shown_by_every_run_is_stored_once_and_each_output_marks_it(tmp_path):
    (tmp_path / "blue.png").write_bytes(BLUE_SQUARE)
    lines = [
        {"row_id": "r1", "run_index": 0, "output": f"Here: ![red](data:image/png;base64,{RED})"},
        {"row_id": "r1", "run_index": 1, "output": "Made it.", "images": ["blue.png"]},
    ]
    rows = dataset(input="Draw a square", input_images=[f"data:image/png;base64,{RED}"])
    runs, outputs = recorded(tmp_path, lines, rows)
    marked, images = with_images(outputs, runs, rows, tmp_path)
    assert [o.actual_output for o in marked] == [
        f"Here: [DEEPEVAL:IMAGE:{RED_SHA}]",
        f"Made it.\n[DEEPEVAL:IMAGE:{BLUE_SHA}]",
    ]
    assert [o.images for o in marked] == [
        [{"sha256": RED_SHA, "mimeType": "image/png", "role": "input"},
         {"sha256": RED_SHA, "mimeType": "image/png", "role": "output"}],
        [{"sha256": RED_SHA, "mimeType": "image/png", "role": "input"},
         {"sha256": BLUE_SHA, "mimeType": "image/png", "role": "output"}],
    ]  # fmt: skip
    assert sorted((i.sha256, i.byte_size, i.workflow_hash) for i in images) == sorted(
        [(RED_SHA, len(RED_SQUARE), HASH), (BLUE_SHA, len(BLUE_SQUARE), HASH)]
    )
    assert (
        image_by_hash(images, BLUE_SHA[:12]).data_base64 == base64.b64encode(BLUE_SQUARE).decode()
    )
    assert image_by_hash(images, "0" * 64) is None
    # what a metric reads: the input with its image, the images it marks, nothing else
    item = evaluation_item(rows[0], marked[1], images={i.sha256: image_data(i) for i in images})
    assert item.input == f"Draw a square\n[DEEPEVAL:IMAGE:{RED_SHA}]"
    assert [image.sha256 for image in item.images] == [RED_SHA, BLUE_SHA]


def test_a_recording_keeps_its_images_and_mcp_servers_and_reads_back_the_same(tmp_path):
    lines = [
        {"row_id": "r1", "run_index": 0, "output": f"![x](data:image/png;base64,{RED}) ok",
         "mcpServers": [WEATHER.model_dump(mode="json")]},
    ]  # fmt: skip
    rows = dataset(input="Draw")
    runs, outputs = recorded(tmp_path, lines, rows, runs_per_row=1)
    assert outputs[0].mcp_servers == [WEATHER.model_dump(mode="json")]
    assert evaluation_item(rows[0], outputs[0]).mcp_servers == [WEATHER]
    marked, images = with_images(outputs, runs, rows, tmp_path)
    (again,) = recording_lines(runs, marked, images)
    rerun_runs, reread = recorded(tmp_path, [json.loads(again)], rows, runs_per_row=1)
    remarked, _ = with_images(reread, rerun_runs, rows, tmp_path)
    assert (
        remarked[0].actual_output == marked[0].actual_output == (f"[DEEPEVAL:IMAGE:{RED_SHA}] ok")
    )
    assert json.loads(again)["mcpServers"] == [WEATHER.model_dump(mode="json")]


def test_an_unreadable_image_is_named_by_its_line_or_its_row(tmp_path):
    lines = [{"row_id": "r1", "run_index": 0, "output": "x", "images": ["missing.png"]}]
    with pytest.raises(DataFileError, match=r"line 1: images: missing\.png: No such file"):
        recorded(tmp_path, lines, dataset(input="x"), runs_per_row=1)
    rows = dataset(input="x", input_images=["notes.txt"])
    (tmp_path / "notes.txt").write_text("hello")
    runs, outputs = recorded(tmp_path, [{"row_id": "r1", "run_index": 0, "output": "x"}], rows, 1)
    with pytest.raises(InputImageError, match=r"dataset row 'r1': inputImages: notes\.txt: not an"):
        with_images(outputs, runs, rows, tmp_path)


@pytest.mark.parametrize(
    ("name", "mime"),
    [("a.png", "image/png"), ("a.jpg", "image/jpeg"), ("a.JPEG", "image/jpeg"),
     ("a.gif", "image/gif"), ("a.webp", "image/webp")],
)  # fmt: skip
def test_an_image_file_has_the_type_of_its_suffix_whatever_its_case(tmp_path, name, mime):
    (tmp_path / name).write_bytes(RED_SQUARE)
    image = read_image(name, tmp_path)
    assert image.mime_type == mime
    assert image.sha256 == RED_SHA


def test_a_webp_file_is_an_image_where_the_system_lists_no_mime_types(tmp_path, monkeypatch):
    # Python's own table, without the system's mime.types, as in a slim container
    monkeypatch.setattr(mimetypes, "guess_type", mimetypes.MimeTypes(filenames=()).guess_type)
    assert mimetypes.guess_type("a.webp")[0] is None
    (tmp_path / "a.webp").write_bytes(RED_SQUARE)
    assert read_image("a.webp", tmp_path).mime_type == "image/webp"
    (tmp_path / "a.png").write_bytes(RED_SQUARE)
    assert read_image("a.png", tmp_path).mime_type == "image/png"


@pytest.mark.parametrize("name", ["a.svg", "a.bmp", "a.tif", "a", "a.txt"])
def test_a_file_of_another_type_is_refused_even_where_mimetypes_calls_it_an_image(tmp_path, name):
    (tmp_path / name).write_bytes(RED_SQUARE)
    with pytest.raises(
        ImageError, match=rf"^{re.escape(name)}: not an image file \(\.png, \.jpg, \.jpeg, "
    ):
        read_image(name, tmp_path)
