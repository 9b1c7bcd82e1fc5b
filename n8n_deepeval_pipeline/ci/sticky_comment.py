"""One comment per benchmark on a review thread, edited by every later run.

A hidden marker in the body (an HTML comment, not shown by either forge) names the
benchmark; a run lists the thread's comments and edits the one carrying its marker,
else writes a new one. A team sees one comment per benchmark however often it pushes.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from n8n_deepeval_pipeline.ci.review_threads import PostedComment, ReviewThread

_MARKER = "<!-- n8n-deepeval: {key} -->"


class Posted(BaseModel):
    """What a run did to the thread: wrote the comment, or edited it."""

    model_config = ConfigDict(frozen=True)

    action: Literal["created", "updated"]
    comment_id: int


def marker(key: str) -> str:
    """The hidden line that marks ``key``'s comment (``--`` cannot end the HTML comment)."""
    return _MARKER.format(key=key.replace("--", "- -").replace("\n", " "))


def marked_body(key: str, body: str) -> str:
    """``body`` with ``key``'s marker as its first line."""
    return f"{marker(key)}\n{body}"


def post_sticky(thread: ReviewThread, key: str, body: str) -> Posted:
    """Edit ``key``'s comment on ``thread`` to ``body``, or write it if there is none.

    If earlier runs left more than one (two jobs racing), the oldest is kept up to date.
    """
    text = marked_body(key, body)
    found: PostedComment | None = next(
        (comment for comment in thread.comments() if marker(key) in comment.body), None
    )
    if found is None:
        return Posted(action="created", comment_id=thread.create(text).id)
    if found.body != text:
        thread.update(found.id, text)
    return Posted(action="updated", comment_id=found.id)
