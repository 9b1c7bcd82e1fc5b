"""Write the reference pages from the code when the site is built (mkdocs-gen-files).

Each page is rendered by the module named after it in this folder, from what the code
itself holds: the benchmark file's JSON schema, the metric catalog, the exit codes, the
environment variables' registry, the tables' row models and the workflow checks. A page
written here can never disagree with the code it was built from.
"""

from __future__ import annotations

import sys
from pathlib import Path

import mkdocs_gen_files

sys.path.insert(0, str(Path(__file__).parent))  # the page modules beside this script

import benchmark_file_page
import environment_page
import exit_codes_page
import metric_catalog_page
import tables_page
import workflow_checks_page

PAGES = {
    "reference/benchmark-file.md": benchmark_file_page,
    "reference/metrics.md": metric_catalog_page,
    "reference/exit-codes.md": exit_codes_page,
    "reference/environment.md": environment_page,
    "reference/tables.md": tables_page,
    "reference/workflow-checks.md": workflow_checks_page,
}

for path, module in PAGES.items():
    with mkdocs_gen_files.open(path, "w") as page:
        page.write(module.page())
