"""Where a CI job comments: a GitHub pull request or a GitLab merge request, by REST.

Each forge is read from the environment its CI gives a job (GitHub Actions:
``GITHUB_API_URL``, ``GITHUB_REPOSITORY``, ``GITHUB_EVENT_PATH``; GitLab CI:
``CI_API_V4_URL``, ``CI_PROJECT_ID``, ``CI_MERGE_REQUEST_IID``) and answers three calls:
the thread's comments, a new comment, and an edit. The token goes in a header and
nowhere else: an error names the method, the path and the status, never the token.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, Protocol

import httpx2
from pydantic import BaseModel, ConfigDict

from n8n_deepeval_pipeline.environment_variables import setting
from n8n_deepeval_pipeline.redaction import redact

Platform = Literal["github", "gitlab"]
PLATFORMS: tuple[Platform, ...] = ("github", "gitlab")
TIMEOUT_S = 20.0
_PAGE_SIZE = 100
_MAX_PAGES = 50  # 5,000 comments: a thread longer than that is not a review thread


class ForgeError(RuntimeError):
    """A forge refused a call, or could not be reached (said without the token)."""


class NoReviewThread(ValueError):
    """The job runs for no pull or merge request (a push, a schedule): nothing to comment on."""


class PostedComment(BaseModel):
    """A comment of a review thread: its id and body."""

    model_config = ConfigDict(frozen=True)

    id: int
    body: str


class ReviewThread(Protocol):
    """A pull or merge request's comments, as one forge's REST API serves them."""

    description: str

    def comments(self) -> Iterator[PostedComment]:
        """Every comment of the thread, oldest first."""
        ...

    def create(self, body: str) -> PostedComment:
        """A new comment."""
        ...

    def update(self, comment_id: int, body: str) -> PostedComment:
        """Comment ``comment_id`` with ``body`` instead of its own."""
        ...


class _RestThread:
    """What both forges share: one HTTP client, a token header, errors without the token."""

    def __init__(self, base: str, headers: dict[str, str], token: str) -> None:
        self._base = base.rstrip("/")
        self._token = token
        self._http = httpx2.Client(
            headers=headers, timeout=httpx2.Timeout(TIMEOUT_S, connect=min(TIMEOUT_S, 10.0))
        )

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def _request(self, method: str, path: str, **request: Any) -> httpx2.Response:
        try:
            response = self._http.request(method, f"{self._base}{path}", **request)
        except httpx2.TimeoutException:
            raise ForgeError(f"{method} {path}: no answer in {TIMEOUT_S:g} s") from None
        except httpx2.TransportError as error:
            raise ForgeError(f"{method} {path}: {type(error).__name__}") from None
        if response.status_code >= 400:
            said = redact(response.text[:300], [self._token])
            raise ForgeError(f"{method} {path}: HTTP {response.status_code}: {said}")
        return response

    def _json(self, method: str, path: str, **request: Any) -> Any:
        response = self._request(method, path, **request)
        try:
            return response.json()
        except json.JSONDecodeError:
            raise ForgeError(f"{method} {path}: the answer is not JSON") from None


class GitHubPullRequest(_RestThread):
    """A pull request's issue comments on GitHub (or GitHub Enterprise's API)."""

    def __init__(self, api_url: str, repository: str, number: int, token: str) -> None:
        super().__init__(
            api_url,
            {
                "Authorization": f"Bearer {token}",
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": "2022-11-28",
            },
            token,
        )
        self._thread = f"/repos/{repository}/issues/{number}"
        self._repository = repository
        self.description = f"{repository}#{number}"

    def comments(self) -> Iterator[PostedComment]:
        for page in range(1, _MAX_PAGES + 1):
            found = self._json(
                "GET",
                f"{self._thread}/comments",
                params={"per_page": _PAGE_SIZE, "page": page},
            )
            yield from (PostedComment(id=item["id"], body=item.get("body") or "") for item in found)
            if len(found) < _PAGE_SIZE:
                return

    def create(self, body: str) -> PostedComment:
        made = self._json("POST", f"{self._thread}/comments", json={"body": body})
        return PostedComment(id=made["id"], body=made.get("body") or "")

    def update(self, comment_id: int, body: str) -> PostedComment:
        path = f"/repos/{self._repository}/issues/comments/{comment_id}"
        made = self._json("PATCH", path, json={"body": body})
        return PostedComment(id=made["id"], body=made.get("body") or "")


class GitLabMergeRequest(_RestThread):
    """A merge request's notes on GitLab (gitlab.com or a self-managed instance)."""

    def __init__(self, api_url: str, project: str, iid: int, token: str) -> None:
        super().__init__(api_url, {"PRIVATE-TOKEN": token}, token)
        self._thread = f"/projects/{project}/merge_requests/{iid}/notes"
        self.description = f"project {project} !{iid}"

    def comments(self) -> Iterator[PostedComment]:
        for page in range(1, _MAX_PAGES + 1):
            found = self._json(
                "GET",
                self._thread,
                params={"per_page": _PAGE_SIZE, "page": page, "sort": "asc"},
            )
            yield from (
                PostedComment(id=item["id"], body=item.get("body") or "")
                for item in found
                if not item.get("system")  # GitLab's own notes ("added 1 commit")
            )
            if len(found) < _PAGE_SIZE:
                return

    def create(self, body: str) -> PostedComment:
        made = self._json("POST", self._thread, json={"body": body})
        return PostedComment(id=made["id"], body=made.get("body") or "")

    def update(self, comment_id: int, body: str) -> PostedComment:
        made = self._json("PUT", f"{self._thread}/{comment_id}", json={"body": body})
        return PostedComment(id=made["id"], body=made.get("body") or "")


def github_thread(environ: Mapping[str, str], token: str) -> GitHubPullRequest:
    """The pull request a GitHub Actions job runs for, from its environment.

    Raises ``NoReviewThread`` when the event is not a pull request's.
    """
    event_path = _needed(environ, "GITHUB_EVENT_PATH")
    try:
        event = json.loads(Path(event_path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise ForgeError(f"GITHUB_EVENT_PATH {event_path}: {error}") from None
    request = event.get("pull_request") or {}
    number = request.get("number") or event.get("number")
    if not isinstance(number, int):
        name = environ.get("GITHUB_EVENT_NAME", "this event")
        raise NoReviewThread(f"{name} is not a pull request's event: no comment to write")
    api_url = setting("GITHUB_API_URL", environ)
    return GitHubPullRequest(api_url, _needed(environ, "GITHUB_REPOSITORY"), number, token)


def gitlab_thread(environ: Mapping[str, str], token: str) -> GitLabMergeRequest:
    """The merge request a GitLab CI job runs for (a merge request pipeline's job).

    Raises ``NoReviewThread`` outside a merge request pipeline.
    """
    iid = environ.get("CI_MERGE_REQUEST_IID")
    if not iid:
        raise NoReviewThread("the pipeline is not a merge request's: no note to write")
    try:
        number = int(iid)
    except ValueError:
        raise ForgeError(f"CI_MERGE_REQUEST_IID is not a number: {iid!r}") from None
    api_url = _needed(environ, "CI_API_V4_URL")
    return GitLabMergeRequest(api_url, _needed(environ, "CI_PROJECT_ID"), number, token)


def _needed(environ: Mapping[str, str], name: str) -> str:
    value = environ.get(name)
    if not value:
        raise ForgeError(f"{name} is not set: is this running in the forge's CI job?")
    return value
