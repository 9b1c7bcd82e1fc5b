"""The metrics concept page says of no metric the catalog has that it is not in it."""

import re
from pathlib import Path

from n8n_deepeval_pipeline.metrics.catalog import CATALOG

PAGE = Path(__file__).resolve().parents[2] / "docs" / "concepts" / "metrics.md"


def test_no_metric_of_the_catalog_is_said_to_be_left_out_of_it():
    paragraphs = [" ".join(p.split()) for p in PAGE.read_text("utf-8").split("\n\n")]
    said_missing = [p for p in paragraphs if re.search(r"not in the catalog", p, re.I)]
    named = {
        entry.name
        for entry in CATALOG.values()
        for paragraph in said_missing
        if re.search(rf"(?<![\w-]){re.escape(entry.name)}\b", paragraph)
    }
    assert named == set()
