"""Dagster resources: the worker pool, the judge and the score journal."""
