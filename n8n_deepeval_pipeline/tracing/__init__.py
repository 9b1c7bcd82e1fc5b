"""Benchmark runs and online evaluations as OpenTelemetry traces (GenAI conventions)."""
