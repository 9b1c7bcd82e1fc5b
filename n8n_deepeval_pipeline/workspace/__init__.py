"""The results workspace: every benchmark's versions, cases and runs in the browser.

Server-rendered pages (Starlette, Jinja2, htmx served from the package) that read the
results store and never write it; `n8n-deepeval ui` serves them.
"""

from n8n_deepeval_pipeline.workspace.app import create_app
from n8n_deepeval_pipeline.workspace.server import WorkspaceServer

__all__ = ["WorkspaceServer", "create_app"]
