r"""What the commands print: no configured secret, and no control character a terminal obeys.

Everything a command prints (its own lines, a refusal, Dagster's log, a traceback) goes
through the process's ``sys.stdout`` and ``sys.stderr``; ``print_safely`` wraps both once,
so that every write loses the configured secrets (``redaction.configured_secrets``: an n8n
key echoed in an error body, a webhook token echoed in an answer) and shows a control
character as its escape (``\x1b``, ``\u202e``) instead of handing it to the terminal: a
row id holding a title sequence or a right-to-left override is printed, not obeyed.
Colours (SGR sequences, Dagster's log on a terminal) pass.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from n8n_deepeval_pipeline.redaction import configured_secrets, redact_values

# C0 and C1 controls but newline and tab, DEL, the bidirectional overrides, embeddings,
# isolates and marks; ESC unless it starts a colour (SGR) sequence.
_OBEYED = re.compile(
    r"\x1b(?!\[[0-9;]*m)|[\x00-\x08\x0b-\x1a\x1c-\x1f\x7f-\x9f\u061c\u200e\u200f"
    r"\u202a-\u202e\u2066-\u2069]"
)


def _escape(match: re.Match[str]) -> str:
    return match.group().encode("unicode_escape").decode("ascii")


def printable(text: str) -> str:
    """``text`` as it may reach a terminal: no configured secret, controls as escapes."""
    return _OBEYED.sub(_escape, redact_values(text, configured_secrets()))


class _PrintedStream:
    """A text stream that writes ``printable`` text to the stream it wraps."""

    def __init__(self, stream: Any) -> None:
        self.wrapped = stream

    def write(self, text: str) -> int:
        if not isinstance(text, str):  # click tells text streams from binary ones so
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self.wrapped.write(printable(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self.wrapped.flush()

    def isatty(self) -> bool:
        return bool(self.wrapped.isatty())

    def fileno(self) -> int:
        return int(self.wrapped.fileno())

    def writable(self) -> bool:
        return True

    @property
    def closed(self) -> bool:
        return bool(getattr(self.wrapped, "closed", False))

    @property
    def encoding(self) -> str | None:
        return getattr(self.wrapped, "encoding", None)

    @property
    def errors(self) -> str | None:
        return getattr(self.wrapped, "errors", None)


def print_safely() -> None:
    """Wrap ``sys.stdout`` and ``sys.stderr`` (once) so that whatever is printed is safe.

    The streams a test runner puts in place are wrapped as they come; a wrapper is never
    wrapped again.
    """
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, _PrintedStream):
            setattr(sys, name, _PrintedStream(stream))
