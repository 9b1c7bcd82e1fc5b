"""Runs labelled in a real n8n's Data Table and read back (N8N_DEEPEVAL_LIVE=1)."""

from __future__ import annotations

import uuid

import pytest

from n8n_deepeval_pipeline.n8n_api.client import N8nClient
from tests.calibration.data_table_scenario import labelled_in_n8n
from tests.live.n8n_server import N8nServer

pytestmark = [pytest.mark.live, pytest.mark.slow]


def test_runs_labelled_in_n8ns_table_view_come_back_as_labels(n8n: N8nServer):
    with N8nClient(n8n.base_url, n8n.api_key) as client:
        labelled_in_n8n(client, f"labels_{uuid.uuid4().hex[:8]}")
