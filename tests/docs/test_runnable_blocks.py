"""Every shell block the README and the docs mark as runnable runs, against the example.

A command renamed, an option removed or an exit code changed makes the page that shows it
fail here, naming the page, the line and the command.
"""

from pathlib import Path

import pytest

from tests.docs.runnable_blocks import (
    Command,
    documents,
    make_sandbox,
    run_blocks,
    runnable_blocks,
)

PAGES = {
    name: blocks for name, text in documents().items() if (blocks := runnable_blocks(text, name))
}


def test_the_pages_that_show_offline_commands_mark_them_runnable():
    assert {
        "README.md",
        "docs/getting-started.md",
        "docs/concepts/partitions.md",
        "docs/concepts/metrics.md",
        "docs/guides/benchmark-file.md",
        "docs/guides/ci-gating.md",
        "docs/guides/report.md",
    } <= set(PAGES)


def test_a_block_is_read_as_its_command_lines_with_the_exit_codes_they_state():
    text = (
        "Intro\n\n"
        "```sh {.runnable}\n"
        "# a comment line is not a command\n"
        "cp -r examples/support_agent my_agent\n"
        "n8n-deepeval run my_agent/benchmark.yaml \\\n"
        "  --fail-under 0.9          # exits 1\n"
        "n8n-deepeval run my_agent/benchmark.yaml   # f7b1504dcb09, exits 5: it regressed\n"
        "```\n\n"
        "```sh\n"
        "n8n-deepeval ui   # not marked: never run\n"
        "```\n"
    )
    (block,) = runnable_blocks(text, "page.md")
    assert block == [
        Command("page.md:5", "cp -r examples/support_agent my_agent", 0),
        Command(
            "page.md:6",
            "n8n-deepeval run my_agent/benchmark.yaml    --fail-under 0.9          # exits 1",
            1,
        ),
        Command(
            "page.md:8",
            "n8n-deepeval run my_agent/benchmark.yaml   # f7b1504dcb09, exits 5: it regressed",
            5,
        ),
    ]


def test_a_block_left_open_is_an_error():
    with pytest.raises(ValueError, match=r"page\.md: a runnable block is not closed"):
        runnable_blocks("```sh {.runnable}\nn8n-deepeval metrics\n", "page.md")


def test_a_command_that_exits_otherwise_than_its_page_says_fails_naming_the_line(tmp_path):
    page = (
        "```sh {.runnable}\nn8n-deepeval hash examples/support_agent/workflow.json  # exits 1\n```"
    )
    with pytest.raises(AssertionError) as failed:
        run_blocks(runnable_blocks(page, "page.md"), make_sandbox(tmp_path))
    said = str(failed.value).splitlines()[0]
    assert said == (
        "page.md:2: `n8n-deepeval hash examples/support_agent/workflow.json  # exits 1` "
        "exited 0, expected 1"
    )
    stdout = str(failed.value).split("--- stdout ---", 1)[1].split("--- stderr ---")[0]
    assert stdout.strip().startswith("f7ee35b359b4")  # what it printed, shown below


def test_an_option_that_no_longer_exists_fails_the_page_that_shows_it(tmp_path):
    page = "```sh {.runnable}\nn8n-deepeval validate --strict examples/support_agent\n```"
    with pytest.raises(AssertionError, match=r"page\.md:2: .* exited 2, expected 0"):
        run_blocks(runnable_blocks(page, "page.md"), make_sandbox(tmp_path))


def test_the_sandbox_holds_the_example_and_the_venv_but_not_the_checkout(tmp_path):
    folder = make_sandbox(tmp_path)
    assert (folder / "examples" / "support_agent" / "benchmark.yaml").is_file()
    assert (folder / ".venv" / "bin" / "n8n-deepeval").exists()
    assert not (folder / "docs").exists()
    assert not (folder / ".n8n-deepeval").exists()


@pytest.mark.slow
@pytest.mark.parametrize("page", sorted(PAGES))
def test_the_runnable_blocks_of_each_page_run_against_the_example(page: str, tmp_path: Path):
    run_blocks(PAGES[page], make_sandbox(tmp_path))
