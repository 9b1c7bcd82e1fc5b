"""An image workflow benchmarked on a real n8n: OpenAI's image node makes each run's image.

Real n8n nodes: Webhook → "Generate an image" (OpenAI 2.3, image resource), whose
credential points at a loopback fake that answers ``/images/generations`` with a PNG drawn
from the prompt. Run through a harness copy whose end node is the image node, each run's
answer is the image itself (the copy's webhook answers its binary data): stored once by
its hash in output_images, marked in the output, sent inline to a loopback judge by Text
to Image, and read as text by a check that asks no judge.
"""

from __future__ import annotations

import base64
import hashlib
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml
from click.testing import CliRunner

from n8n_deepeval_pipeline.cli import main
from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge
from tests.live.fake_llm import FakeOpenAI, image_for
from tests.live.n8n_server import N8nServer
from tests.live.workflow_parts import LC, link, node

pytestmark = [pytest.mark.live, pytest.mark.slow]
PROMPTS = {"red": "A red square on a white poster.", "sea": "A calm blue sea at dawn."}


def poster_maker(credential: str) -> dict[str, Any]:
    """Webhook → OpenAI's image node, generating from the body's prompt."""
    draw = {"resource": "image", "operation": "generate",
            "modelId": {"__rl": True, "mode": "list", "value": "dall-e-3"},
            "prompt": "={{ $json.body.prompt }}", "options": {}}  # fmt: skip
    return {
        "name": f"live poster maker {uuid.uuid4().hex[:6]}",
        "nodes": [
            node("Webhook", "n8n-nodes-base.webhook", 2.1,
                 {"httpMethod": "POST", "path": f"poster-{uuid.uuid4().hex}",
                  "responseMode": "lastNode", "options": {}}, webhookId=str(uuid.uuid4())),
            node("Generate an image", LC + "openAi", 2.3, draw,
                 credentials={"openAiApi": {"id": credential, "name": "Fake OpenAI"}}),
        ],
        "connections": {"Webhook": link("Generate an image")},
        "settings": {"executionOrder": "v1"},
    }  # fmt: skip


@pytest.fixture(scope="module")
def posters(n8n: N8nServer) -> Iterator[dict[str, Any]]:
    with FakeOpenAI() as llm:
        judge = LoopbackJudge(latency_s=0.0).start()
        try:
            credential = n8n.openai_credential("Fake OpenAI", llm.base_url)
            workflow_id = n8n.create_workflow(poster_maker(credential), False)
            yield {"id": workflow_id, "llm": llm, "judge": judge}
        finally:
            judge.stop()


def test_each_runs_image_is_kept_once_marked_and_sent_to_the_judge_inline(
    posters: dict[str, Any], cli_home: Path, tmp_path: Path
) -> None:
    lines = ["id,prompt"] + [f"{row},{prompt}" for row, prompt in PROMPTS.items()]
    (tmp_path / "posters.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    judge = posters["judge"]
    document = {
        "name": "live_posters",
        "workflow": {"id": posters["id"]},
        "dataset": {"path": "posters.csv", "columnMapping": {"input": "prompt"}},
        "runsPerRow": 2,
        "target": {"type": "n8n_workflow", "startNodeName": "Generate an image",
                   "endNodeName": "Generate an image", "input": {"prompt": "{{ input }}"}},
        "judge": {"provider": "openai-compatible", "model": "loopback",
                  "baseUrl": judge.base_url},
        "metrics": [{"metric": "text_to_image"},
                    {"metric": "pattern_match", "label": "has_image",
                     "pattern": r"\[image sha256:[0-9a-f]{64}\]"}],
        "compare": {"failOn": "likely_regression"},
    }  # fmt: skip
    path = tmp_path / "posters.benchmark.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    result = CliRunner().invoke(main, ["run", str(path)])
    print(result.stdout)
    assert result.exit_code == 0, result.output
    made = {row: image_for(prompt) for row, prompt in PROMPTS.items()}
    with duckdb.connect(str(cli_home), read_only=True) as db:
        images = db.execute(
            "select sha256, mime_type, data_base64 from live_posters.output_images"
        ).fetchall()
        outputs = db.execute(
            "select run_id, actual_output, images from live_posters.agent_outputs"
        ).fetchall()
        scores = db.execute(
            "select metric, count(score), count(error) from live_posters.metric_scores group by 1"
        ).fetchall()
    # one image per prompt, each kept once though two runs made it
    assert sorted((sha, mime, base64.b64decode(data)) for sha, mime, data in images) == sorted(
        (hashlib.sha256(png).hexdigest(), "image/png", png) for png in made.values()
    )
    for run_id, text, listed in outputs:
        png = made[run_id.split(":")[1]]
        assert text == f"[DEEPEVAL:IMAGE:{hashlib.sha256(png).hexdigest()}]"
        assert json.loads(listed)[0]["role"] == "output"
    assert sorted(scores) == [("has_image", 4, 0), ("text_to_image", 4, 0)]
    sent = {
        part["image_url"]["url"]
        for body in judge.bodies
        for message in body.get("messages", [])
        if isinstance(message.get("content"), list)
        for part in message["content"]
        if part.get("type") == "image_url"
    }
    assert sent == {f"data:image/png;base64,{base64.b64encode(p).decode()}" for p in made.values()}
