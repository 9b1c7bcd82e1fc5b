"""Test doubles shared by the tests and the benchmark scripts (never used by the pipeline)."""
