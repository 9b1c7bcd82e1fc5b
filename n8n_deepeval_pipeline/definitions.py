"""The code location Dagster loads (``dagster dev -m n8n_deepeval_pipeline.definitions``).

One asset group, job, schedule and sensor per benchmark file found in the benchmark
folders (``$N8N_DEEPEVAL_BENCHMARKS``, default ``./benchmarks`` and the bundled examples).
"""

from n8n_deepeval_pipeline.definitions_builder import load_definitions

defs = load_definitions()
