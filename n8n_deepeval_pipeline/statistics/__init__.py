"""Statistics of scores: pass direction, run aggregates, consistency of repeated runs."""
