"""The metrics concept page names as missing no metric the catalog has."""

import re
from pathlib import Path

from n8n_deepeval_pipeline.metrics.catalog import CATALOG

PAGE = Path(__file__).resolve().parents[2] / "docs" / "concepts" / "metrics.md"


def test_no_metric_of_the_catalog_is_said_to_be_missing_from_it():
    (missing,) = re.findall(r"^Not in the catalog: (.*?)\n\n", PAGE.read_text("utf-8"), re.M | re.S)
    said = " ".join(missing.split())
    assert [
        entry.name for entry in CATALOG.values() if re.search(rf"\b{re.escape(entry.name)}\b", said)
    ] == []
