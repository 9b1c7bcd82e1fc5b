"""The beginning of a long text, as the report shows outputs, reasons and conversations."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

# Near the limit a cut moves back to the last space, so that words stay whole.
_WORD_BOUNDARY_SLACK = 0.8


class Excerpt(BaseModel):
    """The beginning of a text that may be long, and the length of the whole."""

    model_config = ConfigDict(frozen=True)

    text: str
    chars: int
    truncated: bool

    @classmethod
    def of(cls, text: str, limit: int) -> Excerpt:
        """At most ``limit`` characters of ``text``, ending on a word when one ends near it."""
        if len(text) <= limit:
            return cls(text=text, chars=len(text), truncated=False)
        cut = text.rfind(" ", int(limit * _WORD_BOUNDARY_SLACK), limit)
        kept = text[: cut if cut > 0 else limit].rstrip()
        return cls(text=kept, chars=len(text), truncated=True)
