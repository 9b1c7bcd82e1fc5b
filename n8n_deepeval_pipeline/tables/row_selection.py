"""A few cases of a benchmark picked by row id, for a trial run of just those.

``--filter`` keeps the rows whose id contains any of its substrings, ``--exclude`` then
drops the rows whose id contains any of its own. Applied after the dataset's own filters
and ``maxRows``: it picks among the benchmark's cases, it never adds one.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from n8n_deepeval_pipeline.tables.rows import DatasetRow


class NoRowSelectedError(ValueError):
    """The filter and exclude substrings leave no row of the dataset."""


class RowSelection(BaseModel):
    """Row-id substrings to keep (any of ``include``; all rows if empty) and to drop."""

    model_config = ConfigDict(frozen=True)

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    exact: bool = False  # include and exclude name whole row ids (the held-out rows)

    def _matches(self, part: str, row_id: str) -> bool:
        return part == row_id if self.exact else part in row_id

    def keeps(self, row_id: str) -> bool:
        """Whether a row id is selected."""
        included = not self.include or any(self._matches(part, row_id) for part in self.include)
        return included and not any(self._matches(part, row_id) for part in self.exclude)

    def apply(self, rows: list[DatasetRow]) -> list[DatasetRow]:
        """The selected rows, in dataset order; refuses a selection that keeps none."""
        self.check([row.row_id for row in rows])
        return [row for row in rows if self.keeps(row.row_id)]

    def check(self, row_ids: list[str]) -> None:
        """Refuse a selection that keeps none of these row ids, listing some of them."""
        if not any(self.keeps(row_id) for row_id in row_ids):
            listed = ", ".join(row_ids[:20]) or "none"
            more = f" … ({len(row_ids)} rows)" if len(row_ids) > 20 else ""
            raise NoRowSelectedError(f"{self.describe()} select no row; row ids: {listed}{more}")

    def describe(self) -> str:
        """The selection in words, e.g. ``row ids containing 'ord' but not 'ord-total'``."""
        parts = ["row ids"]
        if self.exact:
            return f"rows {', '.join(self.include)}" + (
                f" but not {', '.join(self.exclude)}" if self.exclude else ""
            )
        if self.include:
            parts.append("containing " + " or ".join(repr(part) for part in self.include))
        if self.exclude:
            joiner = "but not" if self.include else "not containing"
            parts.append(joiner + " " + " or ".join(repr(part) for part in self.exclude))
        return " ".join(parts)
