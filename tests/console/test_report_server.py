"""The reports folder as `n8n-deepeval ui` serves it: where report_url points, files only."""

import socket
import urllib.error
import urllib.request

import pytest

from n8n_deepeval_pipeline import settings
from n8n_deepeval_pipeline.console.report_server import ReportServer


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, b""


@pytest.fixture
def reports(tmp_path, monkeypatch):
    monkeypatch.setenv("N8N_DEEPEVAL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("N8N_DEEPEVAL_REPORTS_PORT", str(_free_port()))
    page = settings.reports_dir() / "support agent" / "f7b1504dcb09" / "report.html"
    page.parent.mkdir(parents=True)
    page.write_text("<title>the report</title>")
    (tmp_path / "home" / "results.duckdb").write_text("not for the browser")
    return page


def test_report_url_is_an_address_the_ui_serves_the_report_at(reports):
    url = settings.report_url(reports)
    port = settings.reports_port()
    assert url == f"http://127.0.0.1:{port}/support%20agent/f7b1504dcb09/report.html"
    with ReportServer(settings.reports_dir(), settings.REPORTS_HOST, port):
        assert _get(url) == (200, b"<title>the report</title>")
        # nothing outside the folder, and no listing of it
        assert _get(f"http://127.0.0.1:{port}/../results.duckdb")[0] == 404
        assert _get(f"http://127.0.0.1:{port}/support%20agent/")[0] == 404


def test_a_file_outside_the_reports_folder_has_no_url(reports, tmp_path):
    assert settings.report_url(tmp_path / "elsewhere" / "report.html") is None


def test_a_reports_port_that_is_no_port_is_named(monkeypatch):
    monkeypatch.setenv("N8N_DEEPEVAL_REPORTS_PORT", "http")
    with pytest.raises(ValueError, match="N8N_DEEPEVAL_REPORTS_PORT='http': give a port"):
        settings.reports_port()
