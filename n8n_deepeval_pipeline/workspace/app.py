"""The workspace as a Starlette app: its pages, htmx and styles, and the stored reports.

Every page opens the store read-only for its request and renders its template in the
common layout. What the store cannot give is a page too, never a traceback: a run writing
the DuckDB file (503, the page reloads itself), a store that cannot be read (503, in one
line), a benchmark, version or case the store does not hold (404). The review page's
forms write people's labels through the label stores the serving command gives the app
(none given: the review page writes nothing); a form refused is a page that says why.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from http import HTTPStatus
from importlib.resources import files
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import ChoiceLoader, Environment, PackageLoader, PrefixLoader, StrictUndefined
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
)
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from n8n_deepeval_pipeline import settings
from n8n_deepeval_pipeline.report.html import FILTERS, TESTS
from n8n_deepeval_pipeline.workspace.benchmark_files import BenchmarkFiles
from n8n_deepeval_pipeline.workspace.page_request import (
    Action,
    ActionRefused,
    ActionRequest,
    LabelStores,
    Page,
    PageNotFound,
    PageRequest,
)
from n8n_deepeval_pipeline.workspace.pages import ACTIONS, PAGES
from n8n_deepeval_pipeline.workspace.store import (
    StoreBusy,
    StoreSource,
    StoreUnreadable,
    reading,
)

BUSY_RETRY_S = 3  # the busy page asks again after this long


def template_environment() -> Environment:
    """The pages' templates, with the report's templates and filters beside them."""
    environment = Environment(
        loader=ChoiceLoader(
            [
                PackageLoader("n8n_deepeval_pipeline.workspace"),
                # The report's own parts (its variants matrix), included as report/…
                PrefixLoader({"report": PackageLoader("n8n_deepeval_pipeline.report")}),
            ]
        ),
        autoescape=True,  # every text shown is the benchmark's or the workflow's, never markup
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters.update(FILTERS)
    environment.tests.update(TESTS)
    return environment


class _Layout:
    """What every template gets: links to pages, the navigation, the time it was rendered."""

    def __init__(self, request: Request, page: Page | None) -> None:
        self.request = request
        self.page = page
        self.rendered_at = datetime.now(UTC)

    def href(self, name: str, query: Mapping[str, object] | None = None, **params: str) -> str:
        """The path of a named page (its parameters percent-encoded), with a query."""
        # A path segment may hold ':' and '@' (RFC 3986): attack and run ids read as they are.
        quoted = {key: quote(str(value), safe=":@") for key, value in params.items()}
        path = str(self.request.app.url_path_for(name, **quoted))
        kept = {key: value for key, value in (query or {}).items() if value not in (None, "")}
        return path + ("?" + urlencode(kept) if kept else "")

    def with_query(self, **changes: object) -> str:
        """The page's path with some query parameters changed (None removes one)."""
        query: dict[str, object] = dict(self.request.query_params)
        for key, value in changes.items():
            query.pop(key, None)
            if value not in (None, ""):
                query[key] = value
        return self.request.url.path + ("?" + urlencode(query) if query else "")

    @property
    def nav(self) -> list[tuple[str, str, bool]]:
        """The top navigation: label, path, whether it is this page."""
        return [(page.nav, self.href(page.name), page is self.page) for page in PAGES if page.nav]

    @property
    def benchmark(self) -> str | None:
        """The benchmark the path names, if any."""
        name = self.request.path_params.get("benchmark")
        return None if name is None else str(name)

    @property
    def tabs(self) -> list[tuple[str, str, bool]]:
        """The benchmark's tabs: label, path, whether it is this page."""
        name = self.benchmark
        if name is None:
            return []
        return [
            (page.tab, self.href(page.name, benchmark=name), page is self.page)
            for page in PAGES
            if page.tab
        ]


class Workspace:
    """The app's state: the store it reads, the benchmark files, the label stores, the templates."""

    def __init__(
        self,
        source: StoreSource | None = None,
        benchmark_files: BenchmarkFiles | None = None,
        label_stores: LabelStores | None = None,
    ) -> None:
        self._source = source
        self.files = benchmark_files or BenchmarkFiles()
        self.label_stores = label_stores
        self.templates = template_environment()

    @property
    def source(self) -> StoreSource:
        """The store read: the one given, else the profile's (read at each request)."""
        return self._source or StoreSource.configured()

    def render(
        self,
        request: Request,
        template: str,
        context: Mapping[str, Any],
        page: Page | None = None,
        status: int = 200,
        headers: Mapping[str, str] | None = None,
    ) -> HTMLResponse:
        """A template rendered in the layout."""
        html = self.templates.get_template(template).render(
            **context, layout=_Layout(request, page)
        )
        return HTMLResponse(html, status_code=status, headers=headers)

    def endpoint(self, page: Page) -> Any:
        """The route's function: the store opened, the view asked, the template rendered."""

        def respond(request: Request) -> Response:
            try:
                source = self.source
                with reading(source) as reader:
                    context = page.view(
                        PageRequest(request, reader, self.files, source, self.label_stores)
                    )
            except (StoreBusy, StoreUnreadable, PageNotFound) as error:
                return self._unshown(request, error)
            return self.render(request, page.template, context, page)

        return respond

    def _unshown(self, request: Request, error: Exception, back: str | None = None) -> Response:
        """What the store could not give, or a form refused, as a page."""
        if isinstance(error, StoreBusy):
            return self.render(
                request,
                "busy.html.j2",
                {"retry_s": BUSY_RETRY_S},
                status=503,
                headers={"Retry-After": str(BUSY_RETRY_S)},
            )
        status = {StoreUnreadable: 503, PageNotFound: 404}.get(type(error), 500)
        if isinstance(error, ActionRefused):
            status, back = error.status, error.back
        return self.render(
            request, "problem.html.j2", {"said": str(error), "back": back}, status=status
        )

    def action_endpoint(self, action: Action) -> Any:
        """The route of a form: the form read, handled off the event loop, answered."""

        def handle(request: Request, form: Any) -> Response:
            try:
                return action.handle(
                    ActionRequest(request, form, self.files, self.source, self.label_stores)
                )
            except (StoreBusy, StoreUnreadable, PageNotFound, ActionRefused) as error:
                return self._unshown(request, error)

        async def respond(request: Request) -> Response:
            async with request.form() as form:
                return await run_in_threadpool(handle, request, form)

        return respond

    def report_file(self, request: Request) -> Response:
        """A stored report's file; no folder is listed, nothing outside the folder is served."""
        folder = settings.reports_dir().resolve()
        found = (folder / str(request.path_params["path"])).resolve()
        if not found.is_relative_to(folder) or not found.is_file():
            raise HTTPException(404, "no such report file")
        return FileResponse(found)

    def moved_report(self, request: Request) -> Response:
        """A report link written before the workspace served them (``/<benchmark>/<key>/…``)."""
        path = "/".join(str(request.path_params[name]) for name in ("benchmark", "version", "file"))
        if not (settings.reports_dir() / path).is_file():
            raise HTTPException(404, "no such page")
        return RedirectResponse("/reports/" + quote(path), status_code=308)

    def about(self, request: Request) -> Response:
        """What this workspace reads: a command finds whether the one on a port is its own."""
        try:
            store = self.source.described
        except StoreUnreadable as error:
            store = str(error)
        return JSONResponse({"workspace": "n8n-deepeval", "store": store})

    def not_found(self, request: Request, error: Exception) -> Response:
        """An address that is no page."""
        status = getattr(error, "status_code", 404)
        said = getattr(error, "detail", None)
        if said is None or said == HTTPStatus(status).phrase:  # the router's own words
            said = f"no such page: {request.url.path}"
        return self.render(request, "problem.html.j2", {"said": said}, status=status)

    def failed(self, request: Request, error: Exception) -> Response:
        """A page that failed: said in one line here (Starlette re-raises it for the log)."""
        said = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
        return self.render(request, "problem.html.j2", {"said": said}, status=500)


def _report_css(request: Request) -> Response:
    """The report's style sheet, which the pages share."""
    return FileResponse(
        Path(str(files("n8n_deepeval_pipeline.report") / "templates" / "report.css"))
    )


def create_app(
    source: StoreSource | None = None,
    benchmark_files: BenchmarkFiles | None = None,
    label_stores: LabelStores | None = None,
) -> Starlette:
    """The workspace on ``source`` (default: the profile's store) and the benchmark files.

    ``label_stores``: where the review page writes people's labels (None: it writes none).
    """
    workspace = Workspace(source, benchmark_files, label_stores)
    routes: list[BaseRoute] = [
        Route(page.path, workspace.endpoint(page), name=page.name) for page in PAGES
    ]
    routes += [
        Route(action.path, workspace.action_endpoint(action), name=action.name, methods=["POST"])
        for action in ACTIONS
    ]
    routes += [
        Route("/static/report.css", _report_css, name="report_css"),
        Mount(
            "/static",
            StaticFiles(packages=[("n8n_deepeval_pipeline.workspace", "static")]),
            name="static",
        ),
        Route("/workspace.json", workspace.about, name="about"),
        Route("/reports/{path:path}", workspace.report_file, name="report_file"),
        Route("/{benchmark}/{version}/{file}", workspace.moved_report),
    ]
    return Starlette(
        routes=routes,
        exception_handlers={HTTPException: workspace.not_found, Exception: workspace.failed},
    )
