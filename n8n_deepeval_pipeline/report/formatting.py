"""How the report writes its numbers, the same in the HTML page and the PR comment."""

from __future__ import annotations

from markupsafe import Markup, escape

from n8n_deepeval_pipeline.statistics.version_comparison import Interval, PassCount
from n8n_deepeval_pipeline.workflow.hashing import version_key

MISSING = "—"
MINUS = "−"  # a real minus sign lines up with the plus sign in tables


def percent(rate: float | None) -> str:
    """``0.481`` → ``48.1%``."""
    return MISSING if rate is None else f"{rate:.1%}"


def figure(value: float | None) -> str:
    """A score or another figure in [0, 1], to three decimals."""
    return MISSING if value is None else f"{value:.3f}"


def _signed(text: str) -> str:
    """A true minus sign, and no sign on a difference that rounds to zero."""
    if float(text) == 0:
        return text.lstrip("+-")
    return MINUS + text[1:] if text.startswith("-") else text


def signed_figure(delta: float | None) -> str:
    """A difference of scores: ``+0.120``, ``−0.050``."""
    return MISSING if delta is None else _signed(f"{delta:+.3f}")


def points(delta: float | None) -> str:
    """A difference of rates in percentage points: ``−100.0 pts``."""
    return MISSING if delta is None else _signed(f"{delta * 100:+.1f}") + " pts"


def p_value(value: float | None) -> str:
    """A p-value to three decimals, or ``<0.001``."""
    if value is None:
        return MISSING
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def interval(value: Interval | None) -> str:
    """A rate's interval: ``31.5–65.6%``."""
    if value is None:
        return MISSING
    return f"{value.lower * 100:.1f}–{value.upper * 100:.1f}%"


def fraction(count: PassCount) -> str:
    """Passed runs out of runs: ``3/3``."""
    return f"{count.passed}/{count.runs}"


def money(cost: float | None) -> str:
    """A cost in US dollars: ``$0.0123``; unknown when no price was known."""
    return MISSING if cost is None else f"${cost:.4f}"


def thousands(value: int) -> str:
    """A whole number with thousands separators: ``12,345``."""
    return f"{value:,}"


def short_hash(workflow_hash: str | None) -> str:
    """The first 12 hex digits of a workflow hash, as the CLI prints it."""
    return MISSING if workflow_hash is None else version_key(workflow_hash)


def breakable(name: str) -> Markup:
    """A snake_case name that a narrow column may break after an underscore, never mid-word."""
    return Markup("_<wbr>").join(escape(part) for part in name.split("_"))
