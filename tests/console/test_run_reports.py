"""Where `run` says it wrote each version's report (the whole runs: tests/test_cli.py and
tests/test_cli_outcome_everywhere.py)."""

from pathlib import Path

import pytest

from n8n_deepeval_pipeline.console.run_commands import say_reports

BESIDE = "eval-results.json and eval-pr-comment.md beside"


def page(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "report.html").write_text("<html></html>", "utf-8")
    return folder / "report.html"


def test_a_report_under_the_working_directory_is_named_from_it_after_a_blank_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    written = page(tmp_path / ".n8n-deepeval" / "reports" / "agent" / "f7ee35b359b4")
    monkeypatch.chdir(tmp_path)
    say_reports({"": written}, as_json=False)
    printed = capsys.readouterr()
    assert printed.err == ""
    assert printed.out == (
        "\nreport: .n8n-deepeval/reports/agent/f7ee35b359b4/report.html "
        f"(open it in a browser; {BESIDE} it)\n"
    )
    assert Path(printed.out.split()[1]).resolve() == written.resolve()


def test_a_familys_reports_elsewhere_are_named_whole_and_on_stderr_with_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    reports = {
        "base": page(tmp_path / "home" / "reports" / "agent" / "aaaaaaaaaaaa"),
        "cheaper": page(tmp_path / "home" / "reports" / "agent" / "bbbbbbbbbbbb"),
    }
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    say_reports(reports, as_json=True)
    printed = capsys.readouterr()
    assert printed.out == ""  # stdout holds the JSON alone
    assert printed.err.splitlines() == [
        f"reports (open them in a browser; {BESIDE} each):",
        f"  base     {reports['base']}",
        f"  cheaper  {reports['cheaper']}",
    ]
    named = dict(line.split() for line in printed.err.splitlines()[1:])
    assert {name: Path(path) for name, path in named.items()} == reports
    assert all(Path(path).is_file() for path in named.values())


def test_a_run_that_wrote_no_report_says_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    say_reports({}, as_json=False)
    assert capsys.readouterr() == ("", "")
