"""The site builds in strict mode, offline, with the generated pages and every command.

Slow: each build runs the reference pages' writers and the CLI's docs (~10-20 s). The
search is tried in headless Chromium on the site opened from disk (skipped without
/usr/bin/chromium unless N8N_DEEPEVAL_REQUIRE_CHROMIUM=1).
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from n8n_deepeval_pipeline.cli import _COMMANDS

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
MKDOCS = ROOT / ".venv" / "bin" / "mkdocs"
QUIET = {"NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}


def build(project: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(MKDOCS), "build", "--strict", "--site-dir", str(site)],
        cwd=project,
        env={**os.environ, **QUIET},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def copy_of_the_docs(folder: Path) -> Path:
    shutil.copytree(ROOT / "docs", folder / "docs")
    shutil.copy2(ROOT / "mkdocs.yml", folder / "mkdocs.yml")
    shutil.copy2(ROOT / "README.md", folder / "README.md")  # watched by `mkdocs serve`
    (folder / "n8n_deepeval_pipeline").mkdir()  # watched too
    return folder


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("site")
    built = build(ROOT, folder)
    assert built.returncode == 0, built.stderr[-3000:]
    return folder


def test_the_site_has_the_generated_reference_pages(site):
    for page in ("benchmark-file", "metrics", "exit-codes", "environment", "tables"):
        assert (site / "reference" / f"{page}.html").is_file(), page
    tables = (site / "reference" / "tables.html").read_text(encoding="utf-8")
    assert 'id="metric_scores"' in tables


def test_the_cli_page_documents_every_command_with_its_exit_codes(site):
    cli = (site / "reference" / "cli.html").read_text(encoding="utf-8")
    for name in _COMMANDS:
        assert f'id="n8n-deepeval-{name}"' in cli, name
    assert 'id="n8n-deepeval-dataset-from-executions"' in cli
    assert "Exit codes: 1 the run pass rate is below --fail-under" in cli


def test_no_page_loads_anything_from_the_network(site):
    remote = re.compile(r"<(?:script|link|img)\b[^>]*(?:src|href)=\"(?:https?:)?//", re.I)
    loading = {
        str(page.relative_to(site)): remote.findall(page.read_text(encoding="utf-8"))
        for page in site.rglob("*.html")
    }
    assert {page: found for page, found in loading.items() if found} == {}
    styles = "\n".join(path.read_text(encoding="utf-8") for path in site.rglob("*.css"))
    assert "fonts.googleapis" not in styles and "@import url(http" not in styles


def test_a_broken_link_fails_the_build(tmp_path):
    project = copy_of_the_docs(tmp_path / "project")
    guide = project / "docs" / "guides" / "report.md"
    guide.write_text(guide.read_text() + "\nSee [the old page](no-such-page.md).\n")
    built = build(project, tmp_path / "site")
    assert built.returncode != 0
    assert "no-such-page.md" in built.stderr


def test_a_broken_anchor_fails_the_build(tmp_path):
    project = copy_of_the_docs(tmp_path / "project")
    guide = project / "docs" / "guides" / "report.md"
    guide.write_text(guide.read_text() + "\nSee [gating](ci-gating.md#no-such-section).\n")
    built = build(project, tmp_path / "site")
    assert built.returncode != 0
    assert "no-such-section" in built.stderr


def test_a_page_left_out_of_the_nav_fails_the_build(tmp_path):
    project = copy_of_the_docs(tmp_path / "project")
    (project / "docs" / "guides" / "orphan.md").write_text("# Nobody links here\n")
    built = build(project, tmp_path / "site")
    assert built.returncode != 0
    assert "orphan.md" in built.stderr


CHROMIUM = Path("/usr/bin/chromium")


def test_the_search_finds_pages_on_the_site_opened_from_disk(site):
    if not CHROMIUM.exists() and os.environ.get("N8N_DEEPEVAL_REQUIRE_CHROMIUM") != "1":
        pytest.skip("Chromium not installed (scripts/install_chromium.sh installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto((site / "index.html").as_uri())
            # Without its index as a script, the search cannot start from file:// and its
            # field is never shown.
            page.fill("input.md-search__input", "worker pool", timeout=20_000)
            page.wait_for_selector(".md-search-result__item", timeout=20_000)
            found = page.locator(".md-search-result__meta").inner_text()
            titles = page.locator(".md-search-result__item h1").all_inner_texts()
        finally:
            browser.close()
    assert found.endswith("matching documents") and int(found.split()[0]) > 1
    assert "The worker pool" in titles
