"""`dataset synthesize --from-docs`: DeepEval's document path, for real, in its own process.

LangChain loads and splits the documents, ChromaDB keeps the chunks, DeepEval's own OpenAI
embedding class embeds them against the loopback judge's embeddings endpoint, and the
judge scores the contexts and writes the goldens. It needs the `documents` extra
(scripts/bootstrap.sh installs it with N8N_DEEPEVAL_DOCUMENTS=1; .ci/run requires it).

One stand-in: LangChain's token splitter asks tiktoken for its `gpt2` encoding, which
tiktoken downloads from the internet; this test has none. The synthesizer process gets a
`sitecustomize` that registers a byte-level encoding under that name (every byte a token,
no merges), so chunks are cut by bytes rather than GPT-2 tokens; everything else is real.
"""

import importlib.util
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from n8n_deepeval_pipeline.cli import main
from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge
from tests.n8n_api.test_traffic_dataset import WEBHOOK_AGENT

pytestmark = pytest.mark.slow
_EXTRA = ("chromadb", "langchain_community", "langchain_text_splitters", "tiktoken")
MISSING = [name for name in _EXTRA if importlib.util.find_spec(name) is None]
if MISSING and os.environ.get("N8N_DEEPEVAL_REQUIRE_DOCUMENTS") == "1":
    raise RuntimeError(f"the documents extra is required but {', '.join(MISSING)} is missing")
skip_without_extra = pytest.mark.skipif(
    bool(MISSING), reason="the documents extra (N8N_DEEPEVAL_DOCUMENTS=1 scripts/bootstrap.sh)"
)
# GPT-2's pre-tokenizer pattern; the ranks are single bytes.
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
BYTE_LEVEL_GPT2 = f'''"""Test stand-in: tiktoken's gpt2 encoding as bytes (no download)."""
import tiktoken, tiktoken.registry
tiktoken.registry.ENCODINGS["gpt2"] = tiktoken.Encoding(
    name="gpt2",
    pat_str={GPT2_PATTERN!r},
    mergeable_ranks={{bytes([byte]): byte for byte in range(256)}},
    special_tokens={{"<|endoftext|>": 256}},
)
'''
RETURNS = "# Returns\n\n" + "\n\n".join(
    f"Rule {n}: items bought {n * 10} days ago are refunded within {n} working days, "
    "to the card they were paid with, once the warehouse has checked them."
    for n in range(1, 40)
)
SHIPPING = "# Shipping\n\n" + "\n\n".join(
    f"Zone {n}: parcels to zone {n} take {n + 1} days; shipping is free above {n * 15} EUR."
    for n in range(1, 40)
)


@pytest.fixture
def judge(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[LoopbackJudge]:
    server = LoopbackJudge(latency_s=0.0, free_text=True).start()
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BYTE_LEVEL_GPT2, encoding="utf-8")
    for name, value in {"N8N_DEEPEVAL_JUDGE_PROVIDER": "openai",
                        "N8N_DEEPEVAL_JUDGE_MODEL": "gpt-4.1",
                        "N8N_DEEPEVAL_JUDGE_BASE_URL": server.base_url,
                        "N8N_DEEPEVAL_JUDGE_API_KEY": "sk-docs-test",
                        "N8N_DEEPEVAL_HOME": str(tmp_path / "home"),
                        "PYTHONPATH": str(site)}.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    yield server
    server.stop()


@skip_without_extra
def test_goldens_from_documents_name_the_document_and_carry_its_passages(
    judge: LoopbackJudge, tmp_path: Path
) -> None:
    workflow = tmp_path / "workflow.json"
    workflow.write_text(json.dumps(WEBHOOK_AGENT), encoding="utf-8")
    returns, shipping = tmp_path / "returns.md", tmp_path / "shipping.txt"
    returns.write_text(RETURNS, encoding="utf-8")
    shipping.write_text(SHIPPING, encoding="utf-8")
    out = tmp_path / "rows.jsonl"
    result = CliRunner().invoke(main, [
        "dataset", "synthesize", str(workflow), "--out", str(out), "--from-docs", str(returns),
        "--from-docs", str(shipping), "--embedder", "text-embedding-3-small", "--count", "1",
    ])  # fmt: skip
    print(result.output)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert rows and {row["source"] for row in rows} <= {"returns.md", "shipping.txt"}
    texts = {"returns.md": RETURNS, "shipping.txt": SHIPPING}
    for row in rows:  # each passage is a chunk of the document the row names
        assert row["context"] and all(
            passage.strip() in texts[row["source"]] for passage in row["context"]
        )
        assert 0 <= row["quality"] <= 1 and row["synthetic"] is True
    assert "goldens from docs (1 per document context)" in result.stderr
